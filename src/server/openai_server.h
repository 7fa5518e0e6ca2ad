// OpenAiServer: the OpenAI-compatible HTTP API in front of one engine::Engine per data-parallel replica
// (docs/server-http.md, docs/scaling.md); a ReplicaRouter picks each request's replica.
//
// Life cycle: start() serves HTTP at once with /health 503 ("loading"); attach() builds the engines and turns
// the server ready (every replica up); drain_and_stop() (SIGTERM) turns /health and new requests to 503, lets in-flight
// requests finish (up to shutdown_timeout_s, then aborts them) and stops HTTP.
//
// Contract: all public methods are called from one controlling thread (the app's main thread); handlers and
// the requests' engine events (server/output_queue.h) run on the HTTP I/O threads, nothing of the server on
// the engine threads but the events' queueing. The server owns the engines and the HTTP layer.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/engine.h"
#include "server/http_server.h"
#include "server/metrics.h"
#include "server/openai_request.h"
#include "server/prep_pool.h"
#include "server/replica_router.h"
#include "server/responses_store.h"
#include "text/harmony_renderer.h"
#include "text/tokenizer.h"

namespace gossamer::server {

enum class ReasoningField { kReasoning, kReasoningContent, kBoth };

struct ServerConfig {
  HttpServerOptions http;
  std::string served_model_name = "gpt-oss";  // the id in /v1/models and responses
  std::vector<std::string> model_aliases;     // other names accepted in "model"
  std::vector<std::string> api_keys;          // empty = no auth
  ReasoningField reasoning_field =
      ReasoningField::kBoth;         // where the analysis channel goes (both names: clients read either)
  bool vllm_metrics_alias = true;    // also emit vllm:* metric names
  bool enable_log_requests = false;  // log each request (INFO) with its figures
  bool log_stats = true;             // a vLLM-style stats line every 5 s while busy
  double shutdown_timeout_s = 60.0;  // drain limit before in-flight requests are aborted
  int prep_threads = 0;              // request-preparation workers (0 = min(4, cores))
  size_t prep_max_queued = 1024;     // requests waiting for a worker before 429
};

class GenerationState;
class ResponsesState;

class OpenAiServer {
 public:
  explicit OpenAiServer(ServerConfig config);
  ~OpenAiServer();

  void start();
  int port() const { return http_->port(); }
  void set_loading_message(const std::string& message);
  // One engine per model in `replicas` (not empty), each with `engine_config` (its KV budget is per replica).
  void attach(std::vector<std::unique_ptr<model::Model>> replicas, const engine::EngineConfig& engine_config,
              std::shared_ptr<const text::Tokenizer> tokenizer);
  // The model could not be loaded: /health and requests answer 503 with the message.
  void set_failed(const std::string& message);
  void drain_and_stop();

  int32_t num_active_requests() const { return active_.load(); }

 private:
  friend class GenerationState;
  friend class ResponsesState;
  enum class State { kLoading, kReady, kDraining, kFailed };

  void handle(HttpRequest request, std::shared_ptr<ResponseChannel> channel);
  void prepare_on_pool(HttpRequest request, std::shared_ptr<ResponseChannel> channel);
  void run_prepared(const HttpRequest& request, const std::shared_ptr<ResponseChannel>& channel);
  void reply(const std::shared_ptr<ResponseChannel>& channel, HttpResponse response);
  bool authorized(const HttpRequest& request) const;
  // Submits to the engine; from then on the request's GenerationState calls request_done().
  void handle_generation(const HttpRequest& request, std::shared_ptr<ResponseChannel> channel, bool chat);
  void handle_responses(const HttpRequest& request, std::shared_ptr<ResponseChannel> channel);
  HttpResponse handle_stored_response(const HttpRequest& request);
  HttpResponse handle_models() const;
  HttpResponse handle_model(const std::string& id) const;
  nlohmann::json model_json(const std::string& id) const;
  HttpResponse handle_tokenize(const HttpRequest& request) const;
  HttpResponse handle_detokenize(const HttpRequest& request) const;
  HttpResponse unavailable() const;
  void request_done();
  void stats_loop();

  ServerConfig config_;
  std::unique_ptr<HttpServer> http_;
  std::unique_ptr<PrepPool> prep_;
  std::atomic<State> state_{State::kLoading};
  mutable std::mutex mutex_;  // guards status_message_
  std::string status_message_ = "loading model";
  std::chrono::system_clock::time_point started_at_;

  std::shared_ptr<const text::Tokenizer> tokenizer_;
  std::unique_ptr<text::harmony::HarmonyRenderer> renderer_;
  std::unique_ptr<Metrics> metrics_;
  std::unique_ptr<ReplicaRouter> replicas_;
  ApiContext api_context_;
  ResponsesStore responses_store_;

  std::atomic<int32_t> active_{0};
  std::mutex drain_mutex_;
  std::condition_variable drained_;

  std::atomic<bool> stop_stats_{false};
  std::mutex stats_mutex_;
  std::condition_variable stats_wake_;
  std::thread stats_thread_;
};

}  // namespace gossamer::server
