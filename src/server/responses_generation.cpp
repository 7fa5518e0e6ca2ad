#include "server/responses_generation.h"

#include <chrono>
#include <random>

#include "engine/engine.h"
#include "server/api_error.h"
#include "server/openai_server.h"

namespace gossamer::server {

namespace {

using Json = nlohmann::json;

std::string random_id(const char* prefix) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  static const char* hex = "0123456789abcdef";
  std::string out = prefix;
  for (int i = 0; i < 32; ++i) out += hex[rng() % 16];
  return out;
}

}  // namespace

ResponsesState::ResponsesState(OpenAiServer& server, std::shared_ptr<ResponseChannel> channel, ResponsesRequest request)
    : server_(server),
      channel_(std::move(channel)),
      request_(std::move(request)),
      id_(random_id("resp_")),
      outputs_(std::make_shared<OutputQueue>(channel_)),
      parser_(server.tokenizer_, {}) {
  created_ =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  num_prompt_tokens_ = static_cast<int32_t>(request_.generation.prompt.size());
}

void ResponsesState::submit() {
  // NOTE: engine events wait for this (on_output takes the lock first): response.created goes out first.
  std::lock_guard<std::mutex> started(start_mutex_);
  engine::SubmitParams params;
  params.prompt = request_.generation.prompt;
  params.sampling = request_.generation.sampling;
  if (request_.generation.structured) {
    params.sampling.constraint = make_structured_output_constraint(request_.generation.structured, *server_.tokenizer_,
                                                                   params.sampling.max_tokens);
  }
  auto self = shared_from_this();
  params.on_output = outputs_->callback([self](const engine::RequestOutput& output) { self->on_output(output); });
  try {
    server_.replicas_->route([&](engine::Engine& engine) {
      engine_ = &engine;
      engine_id_ = engine.submit(std::move(params));
    });
  } catch (const engine::QueueFullError& error) {
    ApiError api(429, "rate_limit_error", error.what(), std::nullopt, "too_many_requests");
    api.headers.emplace_back("Retry-After", "1");
    server_.metrics_->count_rejected("overload");
    throw api;
  } catch (const engine::ContextLengthError& error) {
    ApiError api = ApiError::invalid(error.what(), "input");
    api.code = "context_length_exceeded";
    server_.metrics_->count_rejected("validation");
    throw api;
  } catch (const Error& error) {
    server_.metrics_->count_rejected("validation");
    throw ApiError::invalid(error.what());
  }
  if (client_gone_) engine_->cancel(engine_id_);
  std::weak_ptr<ResponsesState> weak = self;
  channel_->on_close([weak] {
    if (auto state = weak.lock()) state->on_client_gone();
  });
  if (request_.generation.stream) {
    // NOTE: Responses streams open with response.created at once (the SDKs wait for it); output items
    // follow with the first generated token.
    channel_->start_stream(200, "text/event-stream", {{"Cache-Control", "no-cache"}, {"X-Request-Id", id_}});
    emit("response.created", {{"response", response_json("in_progress")}});
    emit("response.in_progress", {{"response", response_json("in_progress")}});
  }
}

void ResponsesState::on_client_gone() {
  if (client_gone_.exchange(true)) return;
  server_.metrics_->count_disconnect();
  if (const uint64_t id = engine_id_.load()) engine_->cancel(id);
}

void ResponsesState::emit(const std::string& type, Json payload) {
  if (!request_.generation.stream || client_gone_) return;
  payload["type"] = type;
  payload["sequence_number"] = sequence_++;
  channel_->write("event: " + type + "\ndata: " + payload.dump(-1, ' ', false, Json::error_handler_t::replace) +
                  "\n\n");
}

Json ResponsesState::item_json(const Item& item) const {
  const char* status = item.done ? "completed" : "in_progress";
  switch (item.kind) {
    case Kind::kReasoning: {
      Json content = Json::array(), summary = Json::array();
      if (item.done) {
        content.push_back({{"type", "reasoning_text"}, {"text", item.text}});
        // NOTE: no summariser: the summary is the reasoning itself (clients that read only summaries show it).
        summary.push_back({{"type", "summary_text"}, {"text", item.text}});
      }
      Json out = {
          {"type", "reasoning"}, {"id", item.id}, {"summary", summary}, {"content", content}, {"status", status}};
      if (item.done && request_.include_encrypted_reasoning) out["encrypted_content"] = encode_reasoning(item.text);
      return out;
    }
    case Kind::kMessage: {
      Json content = Json::array();
      if (item.done)
        content.push_back({{"type", "output_text"},
                           {"text", item.text},
                           {"annotations", Json::array()},
                           {"logprobs", Json::array()}});
      return {{"type", "message"}, {"id", item.id}, {"status", status}, {"role", "assistant"}, {"content", content}};
    }
    case Kind::kFunctionCall:
      return {{"type", "function_call"},
              {"id", item.id},
              {"call_id", item.call_id},
              {"name", item.name},
              {"arguments", item.done ? item.text : ""},
              {"status", status}};
  }
  return Json::object();
}

ResponsesState::Item& ResponsesState::open_item(Kind kind) {
  if (item_open_ && items_.back().kind == kind && kind != Kind::kFunctionCall) return items_.back();
  close_item();
  Item item;
  item.kind = kind;
  item.id = random_id(kind == Kind::kReasoning ? "rs_" : kind == Kind::kMessage ? "msg_" : "fc_");
  items_.push_back(std::move(item));
  item_open_ = true;
  const int index = static_cast<int>(items_.size()) - 1;
  return items_[static_cast<size_t>(index)];
}

void ResponsesState::close_item() {
  if (!item_open_) return;
  item_open_ = false;
  Item& item = items_.back();
  item.done = true;
  const int index = static_cast<int>(items_.size()) - 1;
  const Json where = {{"item_id", item.id}, {"output_index", index}};
  // `text_event` with the item's text (and `extra`), then `part_event` with the finished `part`; both at
  // `index_key` 0 of the item.
  const auto text_and_part_done = [&](const char* index_key, const char* text_event, const Json& extra,
                                      const char* part_event, const Json& part) {
    Json payload = where;
    payload[index_key] = 0;
    Json text = payload;
    text["text"] = item.text;
    text.update(extra);
    emit(text_event, text);
    payload["part"] = part;
    emit(part_event, payload);
  };
  if (item.kind == Kind::kReasoning) {
    text_and_part_done("content_index", "response.reasoning_text.done", Json::object(), "response.content_part.done",
                       {{"type", "reasoning_text"}, {"text", item.text}});
    text_and_part_done("summary_index", "response.reasoning_summary_text.done", Json::object(),
                       "response.reasoning_summary_part.done", {{"type", "summary_text"}, {"text", item.text}});
  } else if (item.kind == Kind::kMessage) {
    text_and_part_done(
        "content_index", "response.output_text.done", {{"logprobs", Json::array()}}, "response.content_part.done",
        {{"type", "output_text"}, {"text", item.text}, {"annotations", Json::array()}, {"logprobs", Json::array()}});
  } else {
    Json payload = where;
    payload["arguments"] = item.text;
    payload["name"] = item.name;
    emit("response.function_call_arguments.done", payload);
  }
  emit("response.output_item.done", {{"output_index", index}, {"item", item_json(item)}});
}

void ResponsesState::apply(const ChatDelta& delta) {
  const auto text_delta = [&](Kind kind, const std::string& text, const char* event) {
    const bool fresh = !(item_open_ && items_.back().kind == kind);
    Item& item = open_item(kind);
    const int index = static_cast<int>(items_.size()) - 1;
    if (fresh) {
      emit("response.output_item.added", {{"output_index", index}, {"item", item_json(item)}});
      const Json part =
          kind == Kind::kReasoning
              ? Json{{"type", "reasoning_text"}, {"text", ""}}
              : Json{
                    {"type", "output_text"}, {"text", ""}, {"annotations", Json::array()}, {"logprobs", Json::array()}};
      emit("response.content_part.added",
           {{"item_id", item.id}, {"output_index", index}, {"content_index", 0}, {"part", part}});
      if (kind == Kind::kReasoning) {
        emit("response.reasoning_summary_part.added", {{"item_id", item.id},
                                                       {"output_index", index},
                                                       {"summary_index", 0},
                                                       {"part", {{"type", "summary_text"}, {"text", ""}}}});
      }
    }
    item.text += text;
    Json payload = {{"item_id", item.id}, {"output_index", index}, {"content_index", 0}, {"delta", text}};
    if (kind == Kind::kMessage) payload["logprobs"] = Json::array();
    emit(event, std::move(payload));
    if (kind == Kind::kReasoning) {
      emit("response.reasoning_summary_text.delta",
           {{"item_id", item.id}, {"output_index", index}, {"summary_index", 0}, {"delta", text}});
    }
  };
  if (!delta.reasoning.empty()) text_delta(Kind::kReasoning, delta.reasoning, "response.reasoning_text.delta");
  if (!delta.content.empty()) text_delta(Kind::kMessage, delta.content, "response.output_text.delta");
  for (const ToolCallDelta& call : delta.tool_calls) {
    if (call.id) {
      Item& item = open_item(Kind::kFunctionCall);
      item.call_id = *call.id;
      item.name = call.name.value_or("");
      emit("response.output_item.added",
           {{"output_index", static_cast<int>(items_.size()) - 1}, {"item", item_json(item)}});
    }
    if (!call.arguments.empty() && item_open_ && items_.back().kind == Kind::kFunctionCall) {
      Item& item = items_.back();
      item.text += call.arguments;
      emit("response.function_call_arguments.delta",
           {{"item_id", item.id}, {"output_index", static_cast<int>(items_.size()) - 1}, {"delta", call.arguments}});
    }
  }
}

Json ResponsesState::response_json(const std::string& status) const {
  Json output = Json::array();
  for (const Item& item : items_) {
    if (item.done) output.push_back(item_json(item));
  }
  Json response = {{"id", id_},
                   {"object", "response"},
                   {"created_at", created_},
                   {"status", status},
                   {"model", server_.config_.served_model_name},
                   {"output", std::move(output)},
                   {"error", error_},
                   {"incomplete_details", incomplete_details_}};
  response.update(request_.echo);
  if (status != "in_progress") {
    response["usage"] = {{"input_tokens", num_prompt_tokens_},
                         {"input_tokens_details", {{"cached_tokens", 0}}},
                         {"output_tokens", num_output_tokens_},
                         {"output_tokens_details", {{"reasoning_tokens", parser_.num_reasoning_tokens()}}},
                         {"total_tokens", num_prompt_tokens_ + num_output_tokens_}};
  } else {
    response["usage"] = nullptr;
  }
  return response;
}

void ResponsesState::on_output(const engine::RequestOutput& output) {
  { std::lock_guard<std::mutex> started(start_mutex_); }
  ChatDelta delta;
  for (const engine::TokenId token : output.new_tokens) delta.append(parser_.push(token));
  if (output.finished) delta.append(parser_.finish());
  apply(delta);
  if (output.finished) finish(output);
}

void ResponsesState::finish(const engine::RequestOutput& output) {
  close_item();
  num_output_tokens_ = output.num_output_tokens;
  const char* reason = "stop";
  if (output.finish_reason == engine::FinishReason::kLength) {
    status_ = "incomplete";
    incomplete_details_ = {{"reason", "max_output_tokens"}};
    reason = "length";
  } else if (output.finish_reason == engine::FinishReason::kAbort) {
    status_ = "failed";
    error_ = {{"code", "server_error"}, {"message", "the request was aborted (client gone or server shutting down)"}};
    reason = "abort";
  } else {
    status_ = "completed";
    if (!parser_.tool_calls().empty()) reason = "tool_calls";
  }
  server_.metrics_->observe_finished(output, reason, request_.generation.sampling.max_tokens);
  server_.metrics_->count_http(200);
  const Json response = response_json(status_);
  if (request_.store && status_ != "failed") {
    StoredResponse stored;
    stored.response = response;
    stored.messages = request_.messages;
    nlohmann::ordered_json message = {{"role", "assistant"}};
    message["content"] =
        parser_.content().empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(parser_.content());
    if (!parser_.reasoning().empty()) message["reasoning"] = parser_.reasoning();
    if (!parser_.tool_calls().empty()) {
      nlohmann::ordered_json calls = nlohmann::ordered_json::array();
      for (const ToolCall& call : parser_.tool_calls()) {
        calls.push_back({{"id", call.id},
                         {"type", "function"},
                         {"function", {{"name", call.name}, {"arguments", call.arguments}}}});
      }
      message["tool_calls"] = std::move(calls);
    }
    stored.messages.push_back(std::move(message));
    server_.responses_store_.put(id_, std::move(stored));
  }
  if (!client_gone_) {
    if (request_.generation.stream) {
      emit(status_ == "completed"    ? "response.completed"
           : status_ == "incomplete" ? "response.incomplete"
                                     : "response.failed",
           {{"response", response}});
      channel_->end_stream();
    } else {
      HttpResponse http;
      http.headers.emplace_back("X-Request-Id", id_);
      http.body = response.dump(-1, ' ', false, Json::error_handler_t::replace);
      channel_->respond(std::move(http));
    }
  }
  server_.request_done();
}

}  // namespace gossamer::server
