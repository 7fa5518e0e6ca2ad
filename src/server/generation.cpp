#include "server/generation.h"

#include <chrono>
#include <random>

#include "core/log.h"
#include "engine/engine.h"
#include "server/api_error.h"
#include "server/logprobs_json.h"
#include "server/openai_server.h"

namespace gossamer::server {

namespace {

using Json = nlohmann::json;

std::string random_hex(int n) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (int i = 0; i < n; ++i) out += hex[rng() % 16];
  return out;
}

double ms_between(engine::Clock::time_point a, engine::Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

}  // namespace

GenerationState::GenerationState(OpenAiServer& server, std::shared_ptr<ResponseChannel> channel,
                                 GenerationRequest request, bool chat, std::string client_request_id)
    : server_(server),
      channel_(std::move(channel)),
      request_(std::move(request)),
      chat_(chat),
      outputs_(std::make_shared<OutputQueue>(channel_)) {
  id_ = (chat_ ? "chatcmpl-" : "cmpl-") + random_hex(24);
  request_id_header_ = client_request_id.empty() ? id_ : client_request_id;
  created_ =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  num_prompt_tokens_ = static_cast<int32_t>(request_.prompt.size());
  for (int i = 0; i < std::max(1, request_.n); ++i) {
    auto choice = std::make_unique<Choice>();
    choice->index = i;
    if (chat_) {
      choice->chat_parser.emplace(server_.tokenizer_, request_.stop);
      choice->logprobs = Json::array();
    } else {
      choice->detokenizer.emplace(*server_.tokenizer_);
      choice->stop.emplace(request_.stop);
      choice->logprobs = completion_logprobs_empty();
    }
    choices_.push_back(std::move(choice));
  }
}

std::string GenerationState::dump(const Json& json) const {
  return json.dump(-1, ' ', false, Json::error_handler_t::replace);
}

void GenerationState::submit() {
  // NOTE: engine events wait for this (on_output takes the lock first), so every choice's engine id is known.
  // They arrive on the channel's I/O thread (OutputQueue): no server work on the engine thread.
  std::lock_guard<std::mutex> submitted(submit_mutex_);
  auto self = shared_from_this();
  std::vector<engine::SubmitParams> requests;
  for (auto& owned : choices_) {
    Choice* choice = owned.get();
    engine::SubmitParams params;
    params.prompt = request_.prompt;
    params.sampling = request_.sampling;
    if (params.sampling.seed && choice->index > 0) *params.sampling.seed += static_cast<uint64_t>(choice->index);
    // NOTE: one constraint object per engine request (it follows that request's tokens).
    if (request_.structured)
      params.sampling.constraint =
          make_structured_output_constraint(request_.structured, *server_.tokenizer_, params.sampling.max_tokens);
    params.on_output =
        outputs_->callback([self, choice](const engine::RequestOutput& output) { self->on_output(*choice, output); });
    requests.push_back(std::move(params));
  }
  // NOTE: every choice goes to the one replica the router picks (their events, cancels and stream with it).
  server_.replicas_->route([&](engine::Engine& engine) {
    engine_ = &engine;
    submit_choices(requests);
  });
  std::weak_ptr<GenerationState> weak = self;
  channel_->on_close([weak] {
    if (auto state = weak.lock()) state->on_client_gone();
  });
}

void GenerationState::submit_choices(std::vector<engine::SubmitParams>& requests) {
  for (size_t i = 0; i < choices_.size(); ++i) {
    Choice* choice = choices_[i].get();
    engine::SubmitParams& params = requests[i];
    try {
      choice->engine_id = engine_->submit(std::move(params));
    } catch (const engine::QueueFullError& error) {
      abandoned_ = true;
      cancel_engine_requests();
      ApiError api(429, "rate_limit_error", error.what(), std::nullopt, "too_many_requests");
      api.headers.emplace_back("Retry-After", "1");
      server_.metrics_->count_rejected("overload");
      throw api;
    } catch (const engine::ContextLengthError& error) {
      abandoned_ = true;
      cancel_engine_requests();
      ApiError api = ApiError::invalid(error.what(), chat_ ? "messages" : "prompt");
      api.code = "context_length_exceeded";
      api.extra = {{"prompt_tokens", error.prompt_tokens}, {"max_model_len", error.max_model_len}};
      server_.metrics_->count_rejected("validation");
      throw api;
    } catch (const Error& error) {
      abandoned_ = true;
      cancel_engine_requests();
      server_.metrics_->count_rejected("validation");
      throw ApiError::invalid(error.what());
    }
    if (client_gone_) engine_->cancel(choice->engine_id);
  }
}

void GenerationState::cancel_engine_requests() {
  for (const auto& choice : choices_) {
    if (const uint64_t id = choice->engine_id.load()) engine_->cancel(id);
  }
}

void GenerationState::on_client_gone() {
  if (client_gone_.exchange(true)) return;
  server_.metrics_->count_disconnect();
  cancel_engine_requests();
}

void GenerationState::send_stream_start() {
  stream_started_ = true;
  HeaderList headers = {{"Cache-Control", "no-cache"}, {"X-Request-Id", request_id_header_}};
  channel_->start_stream(200, "text/event-stream", std::move(headers));
}

void GenerationState::send_chunk(const Choice& choice, Json payload, Json logprobs,
                                 const std::optional<std::string>& finish_reason) {
  Json out = {{"index", choice.index}};
  out[chat_ ? "delta" : "text"] = std::move(payload);
  out["logprobs"] = std::move(logprobs);
  out["finish_reason"] = finish_reason ? Json(*finish_reason) : Json(nullptr);
  const Json chunk = {{"id", id_},
                      {"object", chat_ ? "chat.completion.chunk" : "text_completion"},
                      {"created", created_},
                      {"model", server_.config_.served_model_name},
                      {"choices", Json::array({std::move(out)})}};
  channel_->write("data: " + dump(chunk) + "\n\n");
}

Json GenerationState::usage_json() const {
  int32_t completion_tokens = 0, reasoning_tokens = 0;
  // The prompt is counted once; its cached part is what the least-cached choice found (with n > 1 the
  // first choice computes the prompt and the others reuse it).
  int32_t cached_tokens = num_prompt_tokens_;
  for (const auto& choice : choices_) {
    completion_tokens += choice->completion_tokens;
    cached_tokens = std::min(cached_tokens, choice->cached_tokens);
    if (chat_) reasoning_tokens += choice->chat_parser->num_reasoning_tokens();
  }
  Json usage = {{"prompt_tokens", num_prompt_tokens_},
                {"completion_tokens", completion_tokens},
                {"total_tokens", num_prompt_tokens_ + completion_tokens},
                {"prompt_tokens_details", {{"cached_tokens", choices_.empty() ? 0 : cached_tokens}}}};
  if (chat_) usage["completion_tokens_details"] = {{"reasoning_tokens", reasoning_tokens}};
  return usage;
}

void GenerationState::send_usage_chunk() {
  const Json chunk = {{"id", id_},
                      {"object", chat_ ? "chat.completion.chunk" : "text_completion"},
                      {"created", created_},
                      {"model", server_.config_.served_model_name},
                      {"choices", Json::array()},
                      {"usage", usage_json()}};
  channel_->write("data: " + dump(chunk) + "\n\n");
}

Json GenerationState::delta_json(const ChatDelta& delta) const {
  Json out = Json::object();
  if (!delta.reasoning.empty() && request_.include_reasoning) {
    const ReasoningField field = server_.config_.reasoning_field;
    if (field != ReasoningField::kReasoningContent) out["reasoning"] = delta.reasoning;
    if (field != ReasoningField::kReasoning) out["reasoning_content"] = delta.reasoning;
  }
  if (!delta.content.empty()) out["content"] = delta.content;
  if (!delta.tool_calls.empty()) {
    Json calls = Json::array();
    for (const ToolCallDelta& call : delta.tool_calls) {
      Json item = {{"index", call.index}};
      if (call.id) {
        item["id"] = *call.id;
        item["type"] = "function";
        item["function"] = {{"name", call.name.value_or("")}, {"arguments", call.arguments}};
      } else {
        item["function"] = {{"arguments", call.arguments}};
      }
      calls.push_back(std::move(item));
    }
    out["tool_calls"] = std::move(calls);
  }
  return out;
}

std::string GenerationState::finish_reason(const Choice& choice, engine::FinishReason reason) const {
  if (choice.stopped_by_string) return "stop";
  if (reason == engine::FinishReason::kLength) return "length";
  if (reason == engine::FinishReason::kAbort) return "abort";
  if (chat_ && !choice.chat_parser->tool_calls().empty()) return "tool_calls";
  return "stop";
}

void GenerationState::on_output(Choice& choice, const engine::RequestOutput& output) {
  { std::lock_guard<std::mutex> submitted(submit_mutex_); }
  const bool final_event = output.finished;
  if (final_event) {
    choice.engine_finished = true;
    ++num_engine_finished_;
  }
  if (abandoned_ || choice.responded) {
    // Abandoned, or stopped early by a stop string: the engine's final (abort) event only closes the books.
    if (final_event) {
      server_.metrics_->observe_finished(output, choice.responded ? choice.finish_reason : "abort",
                                         request_.sampling.max_tokens);
      if (!abandoned_ && num_engine_finished_ == static_cast<int>(choices_.size())) server_.request_done();
    }
    return;
  }
  const auto now = engine::Clock::now();
  if (!output.new_tokens.empty()) {
    if (choice.num_tokens_seen > 0)
      server_.metrics_->observe_inter_token(std::chrono::duration<double>(now - choice.last_token_time).count());
    choice.last_token_time = now;
  }

  // Decode this event's tokens (and collect the logprobs of the ones the answer shows).
  ChatDelta chat_delta;
  std::string text_delta;
  Json logprobs_delta = chat_ ? Json::array() : completion_logprobs_empty();
  const text::Tokenizer& tokenizer = *server_.tokenizer_;
  for (size_t t = 0; t < output.new_tokens.size(); ++t) {
    const engine::TokenId token = output.new_tokens[t];
    const engine::SampledLogprobs* logprobs = t < output.logprobs.size() ? &output.logprobs[t] : nullptr;
    ++choice.num_tokens_seen;
    if (chat_) {
      chat_delta.append(choice.chat_parser->push(token));
      if (logprobs && choice.chat_parser->last_token_was_content()) {
        Json entry = chat_logprob_entry(tokenizer, token, *logprobs);
        choice.logprobs.push_back(entry);
        logprobs_delta.push_back(std::move(entry));
      }
      if (choice.chat_parser->stopped_by_string()) {
        choice.stopped_by_string = true;
        break;
      }
    } else {
      // NOTE: special tokens (stop tokens included) are not text, as with vLLM's skip_special_tokens.
      if (!tokenizer.is_special(token)) {
        if (logprobs) {
          const auto offset = static_cast<int64_t>(choice.text.size() + text_delta.size());
          append_completion_logprob(tokenizer, token, *logprobs, offset, choice.logprobs);
          append_completion_logprob(tokenizer, token, *logprobs, offset, logprobs_delta);
        }
        text_delta += choice.stop->push(choice.detokenizer->push(token));
      }
      if (choice.stop->stopped()) {
        choice.stopped_by_string = true;
        break;
      }
    }
  }
  const bool ending = final_event || choice.stopped_by_string;
  if (ending && !choice.stopped_by_string) {
    if (chat_) {
      chat_delta.append(choice.chat_parser->finish());
    } else {
      text_delta += choice.stop->push(choice.detokenizer->flush());
      text_delta += choice.stop->flush();
    }
  }
  if (!chat_) choice.text += text_delta;

  if (request_.stream && !client_gone_) {
    if (!stream_started_ && (!output.new_tokens.empty() || ending)) send_stream_start();
    // NOTE: no choice-bearing chunk before the choice's first generated token (TTFT is measured on it:
    // src/bench/bench_serve.h).
    if (chat_ && !choice.role_sent && output.num_output_tokens > 0) {
      choice.role_sent = true;
      send_chunk(choice, {{"role", "assistant"}, {"content", ""}}, nullptr, std::nullopt);
    }
    const Json logprobs_out = !wants_logprobs() ? Json(nullptr)
                              : chat_           ? Json{{"content", logprobs_delta}, {"refusal", nullptr}}
                                                : logprobs_delta;
    if (chat_ && !chat_delta.empty()) {
      Json delta = delta_json(chat_delta);
      if (!delta.empty()) send_chunk(choice, std::move(delta), logprobs_out, std::nullopt);
    } else if (!chat_ && !text_delta.empty()) {
      send_chunk(choice, text_delta, logprobs_out, std::nullopt);
    }
  }
  if (ending) {
    if (choice.stopped_by_string) {
      if (const uint64_t id = choice.engine_id.load()) engine_->cancel(id);
    }
    finish_choice(choice, output);
  }
}

void GenerationState::finish_choice(Choice& choice, const engine::RequestOutput& output) {
  choice.responded = true;
  ++num_responded_;
  choice.finish_reason = finish_reason(choice, output.finish_reason);
  choice.completion_tokens = choice.stopped_by_string ? choice.num_tokens_seen : output.num_output_tokens;
  choice.cached_tokens = output.num_cached_tokens;
  // NOTE: metrics first, so that a client reading /metrics right after its response sees this request.
  if (output.finished) server_.metrics_->observe_finished(output, choice.finish_reason, request_.sampling.max_tokens);
  if (request_.stream && !client_gone_) {
    if (!stream_started_) send_stream_start();
    send_chunk(choice, chat_ ? Json::object() : Json(""), nullptr, choice.finish_reason);
  }
  if (num_responded_ == static_cast<int>(choices_.size())) respond_all();
  const auto& times = output.times;
  const double ttft_ms =
      times.first_token == engine::Clock::time_point{} ? 0.0 : ms_between(times.arrival, times.first_token);
  const double e2e_ms = ms_between(times.arrival, output.finished ? times.finished : engine::Clock::now());
  if (server_.config_.enable_log_requests) {
    GOSSAMER_LOG_INFO("request ", id_, " choice ", choice.index, " done: prompt_tokens=", num_prompt_tokens_,
                      " completion_tokens=", choice.completion_tokens, " ttft_ms=", ttft_ms, " e2e_ms=", e2e_ms,
                      " finish_reason=", choice.finish_reason, client_gone_ ? " (client disconnected)" : "");
  }
  if (output.finished && num_engine_finished_ == static_cast<int>(choices_.size())) server_.request_done();
}

Json GenerationState::choice_json(const Choice& choice) const {
  Json out = {{"index", choice.index}};
  if (chat_) {
    const ChatOutputParser& parser = *choice.chat_parser;
    Json message = {{"role", "assistant"}};
    message["content"] =
        parser.content().empty() && !parser.tool_calls().empty() ? Json(nullptr) : Json(parser.content());
    if (request_.include_reasoning && !parser.reasoning().empty()) {
      const ReasoningField field = server_.config_.reasoning_field;
      if (field != ReasoningField::kReasoningContent) message["reasoning"] = parser.reasoning();
      if (field != ReasoningField::kReasoning) message["reasoning_content"] = parser.reasoning();
    }
    if (!parser.tool_calls().empty()) {
      Json calls = Json::array();
      for (const ToolCall& call : parser.tool_calls()) {
        calls.push_back({{"id", call.id},
                         {"type", "function"},
                         {"function", {{"name", call.name}, {"arguments", call.arguments}}}});
      }
      message["tool_calls"] = std::move(calls);
    }
    out["message"] = std::move(message);
    out["logprobs"] = wants_logprobs() ? Json{{"content", choice.logprobs}, {"refusal", nullptr}} : Json(nullptr);
  } else {
    out["text"] = choice.text;
    out["logprobs"] = wants_logprobs() ? choice.logprobs : Json(nullptr);
  }
  out["finish_reason"] = choice.finish_reason;
  return out;
}

void GenerationState::respond_all() {
  server_.metrics_->count_http(200);
  const int32_t max_generation = request_.sampling.max_tokens > 0
                                     ? request_.sampling.max_tokens
                                     : server_.api_context_.max_model_len - num_prompt_tokens_;
  server_.metrics_->observe_request(static_cast<int32_t>(choices_.size()), max_generation);
  if (client_gone_) return;
  if (request_.stream) {
    if (request_.include_usage) send_usage_chunk();
    channel_->write("data: [DONE]\n\n");
    channel_->end_stream();
    return;
  }
  Json choices = Json::array();
  for (const auto& choice : choices_) choices.push_back(choice_json(*choice));
  const Json body = {{"id", id_},
                     {"object", chat_ ? "chat.completion" : "text_completion"},
                     {"created", created_},
                     {"model", server_.config_.served_model_name},
                     {"choices", std::move(choices)},
                     {"usage", usage_json()}};
  HttpResponse response;
  response.headers.emplace_back("X-Request-Id", request_id_header_);
  response.body = dump(body);
  channel_->respond(std::move(response));
}

}  // namespace gossamer::server
