// ResponsesState: one POST /v1/responses in flight, from engine events to the Responses API answer: a
// response object with output items (reasoning from the analysis channel, message from the final one and
// preambles, function_call from tool calls), or its SSE event sequence (spec §1.5: response.created,
// response.in_progress, output_item.added / content_part.added / deltas / .done per item, then
// response.completed, response.incomplete or response.failed; every event has a monotonic sequence_number,
// no [DONE]). A stored response (store: true) goes to the ResponsesStore with its conversation.
//
// Contract: as GenerationState (created on a preparation worker, driven by engine events that its
// OutputQueue hands over on an HTTP I/O thread, calls OpenAiServer::request_done() exactly once after the
// final engine event).
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/request.h"
#include "server/chat_output.h"
#include "server/http_types.h"
#include "server/output_queue.h"
#include "server/responses_request.h"

namespace gossamer::server {

class OpenAiServer;

class ResponsesState : public std::enable_shared_from_this<ResponsesState> {
 public:
  ResponsesState(OpenAiServer& server, std::shared_ptr<ResponseChannel> channel, ResponsesRequest request);

  // Throws ApiError (429, 400 context length) before anything is sent.
  void submit();
  void on_client_gone();

 private:
  enum class Kind { kReasoning, kMessage, kFunctionCall };
  struct Item {
    Kind kind = Kind::kMessage;
    std::string id;
    std::string text;     // reasoning text, message text or call arguments
    std::string call_id;  // function calls
    std::string name;     // function calls
    bool done = false;
  };

  void on_output(const engine::RequestOutput& output);
  void apply(const ChatDelta& delta);
  Item& open_item(Kind kind);
  void close_item();
  void emit(const std::string& type, nlohmann::json payload);
  nlohmann::json item_json(const Item& item) const;
  nlohmann::json response_json(const std::string& status) const;
  void finish(const engine::RequestOutput& output);

  OpenAiServer& server_;
  std::shared_ptr<ResponseChannel> channel_;
  ResponsesRequest request_;
  std::string id_;
  int64_t created_ = 0;
  int32_t num_prompt_tokens_ = 0;

  std::shared_ptr<OutputQueue> outputs_;  // the engine events, to the channel's I/O thread

  // Event-thread state.
  ChatOutputParser parser_;
  std::vector<Item> items_;
  bool item_open_ = false;
  int64_t sequence_ = 0;
  int32_t num_output_tokens_ = 0;
  std::string status_ = "in_progress";
  nlohmann::json incomplete_details_ = nullptr;
  nlohmann::json error_ = nullptr;

  std::mutex start_mutex_;            // held by submit() until the stream's opening events are out
  engine::Engine* engine_ = nullptr;  // the replica the router gave the request (set by submit())
  std::atomic<uint64_t> engine_id_{0};
  std::atomic<bool> client_gone_{false};
};

}  // namespace gossamer::server
