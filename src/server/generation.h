// GenerationState: one /v1/chat/completions or /v1/completions request in flight, from engine events to
// the client's response (non-streamed JSON or SSE chunks, docs/server-http.md). With n > 1 it runs n engine
// requests on the same prompt (choice i draws with seed + i when a seed is given; the engine's prefix cache
// lets them share the prompt's KV blocks) and merges them into one response, choices in index order.
//
// Contract: created on a preparation worker, then driven by engine events, which its OutputQueue hands over
// on an HTTP I/O thread (one at a time, never on the engine thread), and by a disconnect notice from an I/O
// thread (which only cancels). Once submit() returned, it calls OpenAiServer::request_done() exactly once,
// after the last choice's final engine event.
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
#include "server/openai_request.h"
#include "server/output_queue.h"
#include "server/stop_strings.h"
#include "text/incremental_detokenizer.h"

namespace gossamer::server {

class OpenAiServer;

class GenerationState : public std::enable_shared_from_this<GenerationState> {
 public:
  // client_request_id: the client's X-Request-Id, echoed back (empty = none).
  GenerationState(OpenAiServer& server, std::shared_ptr<ResponseChannel> channel, GenerationRequest request, bool chat,
                  std::string client_request_id = {});

  // Submits the n engine requests; throws ApiError (429, 400 context length, 503) before anything is sent
  // (engine requests already submitted are then cancelled and their events ignored).
  void submit();
  void on_client_gone();

 private:
  // One choice: its engine request and its decoding state (the event thread).
  struct Choice {
    int index = 0;
    std::atomic<uint64_t> engine_id{0};
    std::optional<ChatOutputParser> chat_parser;
    std::optional<text::IncrementalDetokenizer> detokenizer;
    std::optional<StopStringMatcher> stop;
    std::string text;         // completions: all text sent
    nlohmann::json logprobs;  // chat: the content entries; completions: the legacy arrays
    bool role_sent = false;
    bool responded = false;        // its part of the answer is complete
    bool engine_finished = false;  // its final engine event arrived
    bool stopped_by_string = false;
    int32_t num_tokens_seen = 0;
    int32_t completion_tokens = 0;
    int32_t cached_tokens = 0;  // prompt tokens whose KV came from the prefix cache
    std::string finish_reason;
    engine::Clock::time_point last_token_time;
  };

  // Submits requests[i] (made by submit()) as choice i's engine request, on engine_ (under the router's lock).
  void submit_choices(std::vector<engine::SubmitParams>& requests);
  void on_output(Choice& choice, const engine::RequestOutput& output);
  void cancel_engine_requests();
  void send_stream_start();
  void send_chunk(const Choice& choice, nlohmann::json payload, nlohmann::json logprobs,
                  const std::optional<std::string>& finish_reason);
  void send_usage_chunk();
  void finish_choice(Choice& choice, const engine::RequestOutput& output);
  void respond_all();
  nlohmann::json choice_json(const Choice& choice) const;
  nlohmann::json delta_json(const ChatDelta& delta) const;
  nlohmann::json usage_json() const;
  std::string finish_reason(const Choice& choice, engine::FinishReason reason) const;
  std::string dump(const nlohmann::json& json) const;
  bool wants_logprobs() const { return request_.sampling.logprobs >= 0; }

  OpenAiServer& server_;
  std::shared_ptr<ResponseChannel> channel_;
  GenerationRequest request_;
  bool chat_;
  std::string id_;
  std::string request_id_header_;  // X-Request-Id sent back
  int64_t created_ = 0;
  int32_t num_prompt_tokens_ = 0;
  std::vector<std::unique_ptr<Choice>> choices_;
  engine::Engine* engine_ = nullptr;      // the replica of every choice (set by submit())
  std::shared_ptr<OutputQueue> outputs_;  // the choices' engine events, to the channel's I/O thread

  // Event-thread state.
  bool stream_started_ = false;
  int num_responded_ = 0;
  int num_engine_finished_ = 0;

  std::mutex submit_mutex_;             // held by submit() until every choice is submitted
  std::atomic<bool> abandoned_{false};  // submit() failed part-way: events only close the books
  std::atomic<bool> client_gone_{false};
};

}  // namespace gossamer::server
