#include "server/generation.h"

#include <chrono>
#include <random>

#include "core/log.h"
#include "engine/engine.h"
#include "server/api_error.h"
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
    : server_(server), channel_(std::move(channel)), request_(std::move(request)), chat_(chat) {
  id_ = (chat_ ? "chatcmpl-" : "cmpl-") + random_hex(24);
  request_id_header_ = client_request_id.empty() ? id_ : client_request_id;
  created_ = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  num_prompt_tokens_ = static_cast<int32_t>(request_.prompt.size());
  if (chat_) {
    chat_parser_.emplace(server_.tokenizer_, request_.stop);
  } else {
    detokenizer_.emplace(*server_.tokenizer_);
    stop_.emplace(request_.stop);
  }
}

std::string GenerationState::dump(const Json& json) const {
  return json.dump(-1, ' ', false, Json::error_handler_t::replace);
}

void GenerationState::submit() {
  engine::SubmitParams params;
  params.prompt = request_.prompt;
  params.sampling = request_.sampling;
  if (request_.structured) params.sampling.constraint = make_structured_output_constraint(request_.structured, *server_.tokenizer_);
  auto self = shared_from_this();
  params.on_output = [self](const engine::RequestOutput& output) { self->on_output(output); };
  engine::RequestId id = 0;
  try {
    id = server_.engine_->submit(std::move(params));
  } catch (const engine::QueueFullError& error) {
    ApiError api(429, "rate_limit_error", error.what(), std::nullopt, "too_many_requests");
    api.headers.emplace_back("Retry-After", "1");
    server_.metrics_->count_rejected("overload");
    throw api;
  } catch (const engine::ContextLengthError& error) {
    ApiError api = ApiError::invalid(error.what(), chat_ ? "messages" : "prompt");
    api.code = "context_length_exceeded";
    api.extra = {{"prompt_tokens", error.prompt_tokens}, {"max_model_len", error.max_model_len}};
    server_.metrics_->count_rejected("validation");
    throw api;
  } catch (const Error& error) {
    server_.metrics_->count_rejected("validation");
    throw ApiError::invalid(error.what());
  }
  engine_id_ = id;
  if (cancel_wanted_) server_.engine_->cancel(id);
  std::weak_ptr<GenerationState> weak = self;
  channel_->on_close([weak] {
    if (auto state = weak.lock()) state->on_client_gone();
  });
}

void GenerationState::cancel_engine_request() {
  cancel_wanted_ = true;
  if (const uint64_t id = engine_id_.load()) server_.engine_->cancel(id);
}

void GenerationState::on_client_gone() {
  if (client_gone_.exchange(true)) return;
  server_.metrics_->count_disconnect();
  cancel_engine_request();
}

void GenerationState::send_stream_start() {
  HeaderList headers = {{"Cache-Control", "no-cache"}, {"X-Request-Id", request_id_header_}};
  channel_->start_stream(200, "text/event-stream", std::move(headers));
}

void GenerationState::send_chunk(Json choice_payload, const std::optional<std::string>& finish_reason) {
  Json choice = {{"index", 0}};
  if (chat_) {
    choice["delta"] = std::move(choice_payload);
  } else {
    choice["text"] = std::move(choice_payload);
  }
  choice["logprobs"] = nullptr;
  choice["finish_reason"] = finish_reason ? Json(*finish_reason) : Json(nullptr);
  const Json chunk = {{"id", id_},
                      {"object", chat_ ? "chat.completion.chunk" : "text_completion"},
                      {"created", created_},
                      {"model", server_.config_.served_model_name},
                      {"choices", Json::array({std::move(choice)})}};
  channel_->write("data: " + dump(chunk) + "\n\n");
}

Json GenerationState::usage_json(int32_t completion_tokens) const {
  Json usage = {{"prompt_tokens", num_prompt_tokens_},
                {"completion_tokens", completion_tokens},
                {"total_tokens", num_prompt_tokens_ + completion_tokens},
                {"prompt_tokens_details", {{"cached_tokens", num_cached_tokens_}}}};
  if (chat_) usage["completion_tokens_details"] = {{"reasoning_tokens", chat_parser_->num_reasoning_tokens()}};
  return usage;
}

void GenerationState::send_usage_chunk(int32_t completion_tokens) {
  const Json chunk = {{"id", id_},
                      {"object", chat_ ? "chat.completion.chunk" : "text_completion"},
                      {"created", created_},
                      {"model", server_.config_.served_model_name},
                      {"choices", Json::array()},
                      {"usage", usage_json(completion_tokens)}};
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

std::string GenerationState::finish_reason(engine::FinishReason reason) const {
  if (stopped_by_string_) return "stop";
  if (reason == engine::FinishReason::kLength) return "length";
  if (reason == engine::FinishReason::kAbort) return "abort";
  if (chat_ && !chat_parser_->tool_calls().empty()) return "tool_calls";
  return "stop";
}

void GenerationState::on_output(const engine::RequestOutput& output) {
  if (responded_) {
    // Stopped early by a stop string: the engine's final (abort) event only closes the books.
    if (output.finished) {
      server_.metrics_->observe_finished(output, "stop", request_.sampling.max_tokens);
      server_.request_done();
    }
    return;
  }
  const auto now = engine::Clock::now();
  if (!output.new_tokens.empty()) {
    if (num_tokens_seen_ > 0) server_.metrics_->observe_inter_token(std::chrono::duration<double>(now - last_token_time_).count());
    last_token_time_ = now;
  }

  // Decode this event's tokens.
  ChatDelta chat_delta;
  std::string text_delta;
  for (const engine::TokenId token : output.new_tokens) {
    ++num_tokens_seen_;
    if (chat_) {
      chat_delta.append(chat_parser_->push(token));
      if (chat_parser_->stopped_by_string()) {
        stopped_by_string_ = true;
        break;
      }
    } else {
      // NOTE: special tokens (stop tokens included) are not text, as with vLLM's skip_special_tokens.
      if (!server_.tokenizer_->is_special(token)) text_delta += stop_->push(detokenizer_->push(token));
      if (stop_->stopped()) {
        stopped_by_string_ = true;
        break;
      }
    }
  }
  const bool ending = output.finished || stopped_by_string_;
  if (ending && !stopped_by_string_) {
    if (chat_) {
      chat_delta.append(chat_parser_->finish());
    } else {
      text_delta += stop_->push(detokenizer_->flush());
      text_delta += stop_->flush();
    }
  }
  if (!chat_) text_ += text_delta;

  if (request_.stream && !client_gone_) {
    if (!started_ && (!output.new_tokens.empty() || ending)) {
      // NOTE: no choice-bearing chunk before the first generated token (TTFT is measured on it, spec §4.1).
      started_ = true;
      send_stream_start();
      if (chat_ && output.num_output_tokens > 0) send_chunk({{"role", "assistant"}, {"content", ""}}, std::nullopt);
    }
    if (chat_ && !chat_delta.empty()) {
      Json delta = delta_json(chat_delta);
      if (!delta.empty()) send_chunk(std::move(delta), std::nullopt);
    } else if (!chat_ && !text_delta.empty()) {
      send_chunk(text_delta, std::nullopt);
    }
  }
  if (ending) {
    if (stopped_by_string_) cancel_engine_request();
    finish(output);
  }
}

void GenerationState::finish(const engine::RequestOutput& output) {
  responded_ = true;
  num_cached_tokens_ = output.num_cached_tokens;
  const std::string reason = finish_reason(output.finish_reason);
  const int32_t completion_tokens = stopped_by_string_ ? num_tokens_seen_ : output.num_output_tokens;
  // NOTE: metrics first, so that a client reading /metrics right after its response sees this request.
  server_.metrics_->count_http(200);
  if (output.finished) server_.metrics_->observe_finished(output, reason, request_.sampling.max_tokens);
  if (request_.stream) {
    if (!client_gone_) {
      if (!started_) send_stream_start();
      send_chunk(chat_ ? Json::object() : Json(""), reason);
      if (request_.include_usage) send_usage_chunk(completion_tokens);
      channel_->write("data: [DONE]\n\n");
      channel_->end_stream();
    }
  } else if (!client_gone_) {
    Json choice = {{"index", 0}};
    if (chat_) {
      const ChatOutputParser& parser = *chat_parser_;
      Json message = {{"role", "assistant"}};
      message["content"] = parser.content().empty() && !parser.tool_calls().empty() ? Json(nullptr) : Json(parser.content());
      if (request_.include_reasoning && !parser.reasoning().empty()) {
        const ReasoningField field = server_.config_.reasoning_field;
        if (field != ReasoningField::kReasoningContent) message["reasoning"] = parser.reasoning();
        if (field != ReasoningField::kReasoning) message["reasoning_content"] = parser.reasoning();
      }
      if (!parser.tool_calls().empty()) {
        Json calls = Json::array();
        for (const ToolCall& call : parser.tool_calls()) {
          calls.push_back({{"id", call.id}, {"type", "function"}, {"function", {{"name", call.name}, {"arguments", call.arguments}}}});
        }
        message["tool_calls"] = std::move(calls);
      }
      choice["message"] = std::move(message);
    } else {
      choice["text"] = text_;
    }
    choice["logprobs"] = nullptr;
    choice["finish_reason"] = reason;
    const Json body = {{"id", id_},
                       {"object", chat_ ? "chat.completion" : "text_completion"},
                       {"created", created_},
                       {"model", server_.config_.served_model_name},
                       {"choices", Json::array({std::move(choice)})},
                       {"usage", usage_json(completion_tokens)}};
    HttpResponse response;
    response.headers.emplace_back("X-Request-Id", request_id_header_);
    response.body = dump(body);
    channel_->respond(std::move(response));
  }
  const auto& times = output.times;
  const double ttft_ms = times.first_token == engine::Clock::time_point{} ? 0.0 : ms_between(times.arrival, times.first_token);
  const double e2e_ms = ms_between(times.arrival, output.finished ? times.finished : engine::Clock::now());
  if (server_.config_.enable_log_requests) {
    GOSSAMER_LOG_INFO("request ", id_, " done: prompt_tokens=", num_prompt_tokens_, " completion_tokens=", completion_tokens,
                      " ttft_ms=", ttft_ms, " e2e_ms=", e2e_ms, " finish_reason=", reason,
                      client_gone_ ? " (client disconnected)" : "");
  }
  if (output.finished) server_.request_done();
}

}  // namespace gossamer::server
