// GenerationState: one /v1/chat/completions or /v1/completions request in flight, from engine events to
// the client's response (non-streamed JSON or SSE chunks, docs/server-http.md).
//
// Contract: created on an I/O thread, then driven by engine events on the engine thread (one at a time)
// and by a disconnect notice from an I/O thread (which only cancels). It calls OpenAiServer::request_done()
// exactly once, after the final engine event.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/request.h"
#include "server/chat_output.h"
#include "server/http_types.h"
#include "server/openai_request.h"
#include "server/stop_strings.h"
#include "text/incremental_detokenizer.h"

namespace gossamer::server {

class OpenAiServer;

class GenerationState : public std::enable_shared_from_this<GenerationState> {
 public:
  // client_request_id: the client's X-Request-Id, echoed back (empty = none).
  GenerationState(OpenAiServer& server, std::shared_ptr<ResponseChannel> channel, GenerationRequest request, bool chat,
                  std::string client_request_id = {});

  // Submits to the engine; throws ApiError (429, 400 context length, 503) before anything is sent.
  void submit();
  void on_output(const engine::RequestOutput& output);
  void on_client_gone();

 private:
  void cancel_engine_request();
  void send_stream_start();
  void send_chunk(nlohmann::json choice_delta, const std::optional<std::string>& finish_reason);
  void send_usage_chunk(int32_t completion_tokens);
  void finish(const engine::RequestOutput& output);
  nlohmann::json delta_json(const ChatDelta& delta) const;
  nlohmann::json usage_json(int32_t completion_tokens) const;
  std::string finish_reason(engine::FinishReason reason) const;
  std::string dump(const nlohmann::json& json) const;

  OpenAiServer& server_;
  std::shared_ptr<ResponseChannel> channel_;
  GenerationRequest request_;
  bool chat_;
  std::string id_;
  std::string request_id_header_;  // X-Request-Id sent back
  int64_t created_ = 0;

  // Engine-thread state.
  std::optional<ChatOutputParser> chat_parser_;
  std::optional<text::IncrementalDetokenizer> detokenizer_;
  std::optional<StopStringMatcher> stop_;
  std::string text_;  // completions: all text sent
  bool started_ = false;
  bool responded_ = false;
  bool stopped_by_string_ = false;
  int32_t num_tokens_seen_ = 0;
  int32_t num_prompt_tokens_ = 0;
  int32_t num_cached_tokens_ = 0;  // prompt tokens served from the prefix cache
  engine::Clock::time_point last_token_time_;

  std::atomic<uint64_t> engine_id_{0};
  std::atomic<bool> cancel_wanted_{false};
  std::atomic<bool> client_gone_{false};
};

}  // namespace gossamer::server
