#include "server/openai_server.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>

#include "core/error.h"
#include "core/log.h"
#include "server/api_error.h"
#include "server/generation.h"
#include "server/responses_generation.h"
#include "text/incremental_detokenizer.h"

namespace gossamer::server {

namespace {

using Json = nlohmann::json;

bool constant_time_equal(const std::string& a, const std::string& b) {
  // NOTE: compares every byte of the longer string so timing does not reveal a prefix match.
  const size_t n = std::max(a.size(), b.size());
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < n; ++i) {
    diff |= static_cast<unsigned char>((i < a.size() ? a[i] : 0) ^ (i < b.size() ? b[i] : 0));
  }
  return diff == 0;
}

HttpResponse json_response(const Json& body, int status = 200) {
  HttpResponse response;
  response.status = status;
  response.body = body.dump(-1, ' ', false, Json::error_handler_t::replace);
  return response;
}

}  // namespace

OpenAiServer::OpenAiServer(ServerConfig config) : config_(std::move(config)) {
  started_at_ = std::chrono::system_clock::now();
  http_ =
      std::make_unique<HttpServer>(config_.http, [this](HttpRequest request, std::shared_ptr<ResponseChannel> channel) {
        handle(std::move(request), std::move(channel));
      });
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  prep_ = std::make_unique<PrepPool>(config_.prep_threads > 0 ? config_.prep_threads : std::min(4, cores),
                                     config_.prep_max_queued);
}

OpenAiServer::~OpenAiServer() {
  stop_stats_ = true;
  stats_wake_.notify_all();
  if (stats_thread_.joinable()) stats_thread_.join();
  prep_->stop(std::chrono::seconds(5));
  http_->stop();
  replicas_.reset();
}

void OpenAiServer::start() {
  http_->start();
  GOSSAMER_LOG_INFO("listening on http://", config_.http.host, ":", http_->port(), " (", config_.http.num_threads,
                    " I/O threads); /health answers 503 until the model is loaded");
}

void OpenAiServer::set_loading_message(const std::string& message) {
  std::lock_guard<std::mutex> lock(mutex_);
  status_message_ = message;
}

void OpenAiServer::attach(std::vector<std::unique_ptr<model::Model>> replicas,
                          const engine::EngineConfig& engine_config, std::shared_ptr<const text::Tokenizer> tokenizer) {
  GOSSAMER_CHECK(!replicas.empty(), "a server needs at least one replica");
  tokenizer_ = std::move(tokenizer);
  renderer_ = std::make_unique<text::harmony::HarmonyRenderer>(tokenizer_);
  const engine::EngineConfig resolved = engine_config.resolve(*replicas.front());
  metrics_ = std::make_unique<Metrics>(config_.served_model_name, resolved.max_model_len, config_.vllm_metrics_alias);
  Metrics* metrics = metrics_.get();
  std::vector<std::unique_ptr<engine::Engine>> engines;
  for (auto& model : replicas) {
    engines.push_back(std::make_unique<engine::Engine>(
        std::move(model), resolved, [metrics](const engine::StepInfo& step) { metrics->observe_step(step); }));
  }
  replicas_ = std::make_unique<ReplicaRouter>(std::move(engines));
  const engine::Engine& first = replicas_->replica(0);
  api_context_.served_model_name = config_.served_model_name;
  api_context_.model_aliases = config_.model_aliases;
  api_context_.max_model_len = first.config().max_model_len;
  // NOTE: the replicas share one model and config: replica 0's blocks stand for each one's.
  metrics_->set_cache_config_info({{"block_size", std::to_string(first.config().block_size)},
                                   {"num_gpu_blocks", std::to_string(first.stats().num_kv_blocks)}});
  if (config_.log_stats) stats_thread_ = std::thread([this] { stats_loop(); });
  state_ = State::kReady;
  GOSSAMER_LOG_INFO("ready: serving '", config_.served_model_name, "' (", first.model().backend_name(), " backend, ",
                    replicas_->num_replicas(), " replica(s)); try: curl http://", config_.http.host, ":", http_->port(),
                    "/v1/models");
}

void OpenAiServer::set_failed(const std::string& message) {
  set_loading_message("model failed to load: " + message);
  state_ = State::kFailed;
}

void OpenAiServer::request_done() {
  if (active_.fetch_sub(1) == 1) {
    std::lock_guard<std::mutex> lock(drain_mutex_);
    drained_.notify_all();
  }
}

void OpenAiServer::drain_and_stop() {
  // NOTE: the watchdog guarantees the exit deadline even if some part below never returns.
  const double deadline_s = config_.shutdown_timeout_s + 10.0;
  auto done = std::make_shared<std::atomic<bool>>(false);
  std::thread([done, deadline_s] {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(deadline_s);
    while (!done->load() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (!done->load()) {
      GOSSAMER_LOG_ERROR("shutdown did not finish within --shutdown-timeout + 10 s: exiting now");
      std::_Exit(1);
    }
  }).detach();
  const bool was_ready = state_ == State::kReady;
  state_ = State::kDraining;
  set_loading_message("server is shutting down");
  GOSSAMER_LOG_INFO("draining: ", active_.load(), " request(s) in flight, new requests get 503 (timeout ",
                    config_.shutdown_timeout_s, " s)");
  if (was_ready) {
    std::unique_lock<std::mutex> lock(drain_mutex_);
    const bool drained = drained_.wait_for(lock, std::chrono::duration<double>(config_.shutdown_timeout_s),
                                           [&] { return active_.load() == 0; });
    if (!drained) {
      GOSSAMER_LOG_WARN("drain timed out with ", active_.load(), " request(s) in flight: aborting them");
      lock.unlock();
      prep_->stop(std::chrono::seconds(2));  // queued preparations answer 503
      replicas_->shutdown();                 // aborts every request; their streams end with finish_reason "abort"
      lock.lock();
      drained_.wait_for(lock, std::chrono::seconds(5), [&] { return active_.load() == 0; });
    }
  }
  // NOTE: give the I/O threads a moment to flush the last bytes of finished streams before stopping.
  http_->stop_accepting();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  stop_stats_ = true;
  stats_wake_.notify_all();
  if (stats_thread_.joinable()) stats_thread_.join();
  prep_->stop(std::chrono::seconds(2));
  if (replicas_) replicas_->shutdown();
  http_->stop();
  done->store(true);
  GOSSAMER_LOG_INFO("shut down cleanly");
}

void OpenAiServer::stats_loop() {
  const size_t num_replicas = replicas_->num_replicas();
  std::vector<int64_t> last_prompt(num_replicas, 0), last_generation(num_replicas, 0);
  auto last = std::chrono::steady_clock::now();
  while (true) {
    {
      std::unique_lock<std::mutex> lock(stats_mutex_);
      if (stats_wake_.wait_for(lock, std::chrono::seconds(5), [&] { return stop_stats_.load(); })) return;
    }
    const std::vector<engine::EngineStats> replicas = replicas_->stats();
    const auto now = std::chrono::steady_clock::now();
    const double seconds = std::chrono::duration<double>(now - last).count();
    for (size_t r = 0; r < num_replicas; ++r) {
      const engine::EngineStats& stats = replicas[r];
      const int64_t prompt = stats.num_prompt_tokens_total - last_prompt[r];
      const int64_t generation = stats.num_generation_tokens_total - last_generation[r];
      if (prompt > 0 || generation > 0 || stats.num_running > 0 || stats.num_waiting > 0) {
        char line[256];
        std::snprintf(line, sizeof(line),
                      "Engine %03zu: Avg prompt throughput: %.1f tokens/s, Avg generation throughput: %.1f tokens/s, "
                      "Running: %d reqs, Waiting: %d reqs, KV cache usage: %.1f%%, Preemptions: %lld",
                      r, prompt / seconds, generation / seconds, stats.num_running, stats.num_waiting,
                      100.0 * stats.kv_usage(), static_cast<long long>(stats.num_preemptions_total));
        GOSSAMER_LOG_INFO(line);
      }
      last_prompt[r] = stats.num_prompt_tokens_total;
      last_generation[r] = stats.num_generation_tokens_total;
    }
    last = now;
  }
}

HttpResponse OpenAiServer::unavailable() const {
  std::string message;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    message = status_message_;
  }
  HttpResponse response = ApiError(503, "unavailable_error", message, std::nullopt).to_response();
  response.headers.emplace_back("Retry-After", "5");
  return response;
}

bool OpenAiServer::authorized(const HttpRequest& request) const {
  if (config_.api_keys.empty()) return true;
  std::string key = request.header("authorization");
  std::string scheme = key.substr(0, 7);
  for (char& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (scheme == "bearer ") {  // NOTE: auth schemes are case-insensitive (RFC 9110 §11.1)
    key = key.substr(7);
    while (!key.empty() && key.front() == ' ') key.erase(0, 1);
  } else if (key.empty()) {
    key = request.header("x-api-key");
  } else {
    return false;
  }
  bool ok = false;
  for (const auto& allowed : config_.api_keys) ok |= constant_time_equal(key, allowed);
  return ok;
}

void OpenAiServer::reply(const std::shared_ptr<ResponseChannel>& channel, HttpResponse response) {
  const State state = state_.load();
  if ((state == State::kReady || state == State::kDraining) && metrics_) metrics_->count_http(response.status);
  channel->respond(std::move(response));
}

void OpenAiServer::handle(HttpRequest request, std::shared_ptr<ResponseChannel> channel) {
  GOSSAMER_LOG_DEBUG(request.remote, " - \"", request.method, " ", request.target, "\"");
  const State state = state_.load();
  const bool serving = state == State::kReady;
  const std::string& path = request.path;
  const bool get = request.method == "GET" || request.method == "HEAD";
  const bool post = request.method == "POST";
  try {
    if (path == "/health" || path == "/ping") {
      return reply(channel, serving ? json_response(Json::object()) : unavailable());
    }
    if (path == "/version" && get) return reply(channel, json_response({{"version", "0.1.0"}}));
    if (path == "/metrics" && get) {
      HttpResponse response;
      response.content_type = "text/plain; version=0.0.4; charset=utf-8";
      if (state == State::kReady || state == State::kDraining) {
        response.body = metrics_->render(replicas_->stats());
      } else {
        response.body = "# the model is not loaded yet\n";
      }
      return reply(channel, std::move(response));
    }
    const bool generation = path == "/v1/chat/completions" || path == "/v1/completions" || path == "/v1/responses";
    const bool model_path = path == "/v1/models" || path.rfind("/v1/models/", 0) == 0;
    const bool stored_response = path.rfind("/v1/responses/", 0) == 0;
    const bool known = generation || model_path || stored_response || path == "/tokenize" || path == "/detokenize";
    if (!known)
      return reply(channel,
                   ApiError(404, "not_found_error", "Not found: " + request.method + " " + path).to_response());
    const bool method_ok = model_path ? get : stored_response ? (get || request.method == "DELETE") : post;
    if (!method_ok) {
      return reply(
          channel,
          ApiError(405, "invalid_request_error", "Method " + request.method + " not allowed on " + path).to_response());
    }
    // NOTE: every API route needs the key (GET /v1/models too, as vLLM); /health, /metrics and /version do not.
    if (!authorized(request)) {
      if (serving && metrics_) metrics_->count_rejected("auth");
      return reply(channel, ApiError(401, "authentication_error",
                                     "Incorrect API key provided. Pass it as 'Authorization: Bearer <key>'.")
                                .to_response());
    }
    if (!serving) {
      if (state == State::kDraining && metrics_) metrics_->count_rejected("draining");
      return reply(channel, unavailable());
    }
    if (path == "/v1/models") return reply(channel, handle_models());
    if (model_path) return reply(channel, handle_model(path.substr(std::string("/v1/models/").size())));
    if (stored_response) return reply(channel, handle_stored_response(request));
    return prepare_on_pool(std::move(request), std::move(channel));
  } catch (const ApiError& error) {
    if (serving && metrics_ && error.status == 400) metrics_->count_rejected("validation");
    reply(channel, error.to_response());
  } catch (const std::exception& error) {
    GOSSAMER_LOG_ERROR("internal error on ", request.method, " ", path, ": ", error.what());
    reply(channel, ApiError(500, "server_error", std::string("internal error: ") + error.what()).to_response());
  }
}

void OpenAiServer::prepare_on_pool(HttpRequest request, std::shared_ptr<ResponseChannel> channel) {
  auto owned = std::make_shared<HttpRequest>(std::move(request));
  auto client_gone = std::make_shared<std::atomic<bool>>(false);
  channel->on_close([client_gone] { client_gone->store(true); });
  active_.fetch_add(1);
  const bool queued = prep_->try_submit([this, owned, channel, client_gone](bool run) {
    if (client_gone->load()) {  // left while queued: nothing to prepare, nobody to answer
      request_done();
      return;
    }
    if (!run || state_.load() != State::kReady) {
      reply(channel, unavailable());
      request_done();
      return;
    }
    run_prepared(*owned, channel);
  });
  if (!queued) {
    request_done();
    if (metrics_) metrics_->count_rejected("overload");
    ApiError busy(429, "rate_limit_error",
                  "the server is overloaded: too many requests are waiting to be prepared; retry later", std::nullopt,
                  "too_many_requests");
    HttpResponse response = busy.to_response();
    response.headers.emplace_back("Retry-After", "1");
    reply(channel, std::move(response));
  }
}

void OpenAiServer::run_prepared(const HttpRequest& request, const std::shared_ptr<ResponseChannel>& channel) {
  const std::string& path = request.path;
  bool handed_over = false;  // a submitted generation calls request_done() itself
  try {
    if (path == "/tokenize") {
      reply(channel, handle_tokenize(request));
    } else if (path == "/detokenize") {
      reply(channel, handle_detokenize(request));
    } else if (path == "/v1/responses") {
      handle_responses(request, channel);
      handed_over = true;
    } else {
      handle_generation(request, channel, path == "/v1/chat/completions");
      handed_over = true;
    }
  } catch (const ApiError& error) {
    if (metrics_ && error.status == 400) metrics_->count_rejected("validation");
    reply(channel, error.to_response());
  } catch (const std::exception& error) {
    GOSSAMER_LOG_ERROR("internal error on ", request.method, " ", path, ": ", error.what());
    reply(channel, ApiError(500, "server_error", std::string("internal error: ") + error.what()).to_response());
  }
  if (!handed_over) request_done();
}

void OpenAiServer::handle_generation(const HttpRequest& request, std::shared_ptr<ResponseChannel> channel, bool chat) {
  const auto body = parse_json_body(request.body);
  GenerationRequest parsed = chat ? parse_chat_request(body, api_context_, *renderer_)
                                  : parse_completion_request(body, api_context_, *tokenizer_);
  if (!parsed.ignored_fields.empty()) {
    std::string fields;
    for (const auto& field : parsed.ignored_fields) fields += (fields.empty() ? "" : ", ") + field;
    GOSSAMER_LOG_WARN("ignoring unsupported request fields: ", fields);
  }
  auto state =
      std::make_shared<GenerationState>(*this, channel, std::move(parsed), chat, request.header("x-request-id"));
  state->submit();
}

nlohmann::json OpenAiServer::model_json(const std::string& id) const {
  const int64_t created = std::chrono::duration_cast<std::chrono::seconds>(started_at_.time_since_epoch()).count();
  return {{"id", id},
          {"object", "model"},
          {"created", created},
          {"owned_by", "gossamer"},
          {"root", config_.served_model_name},
          {"max_model_len", api_context_.max_model_len}};
}

void OpenAiServer::handle_responses(const HttpRequest& request, std::shared_ptr<ResponseChannel> channel) {
  const auto body = parse_json_body(request.body);
  ResponsesRequest parsed = parse_responses_request(body, api_context_, *renderer_, responses_store_);
  if (!parsed.generation.ignored_fields.empty()) {
    std::string fields;
    for (const auto& field : parsed.generation.ignored_fields) fields += (fields.empty() ? "" : ", ") + field;
    GOSSAMER_LOG_WARN("ignoring unsupported request fields: ", fields);
  }
  auto state = std::make_shared<ResponsesState>(*this, std::move(channel), std::move(parsed));
  state->submit();
}

HttpResponse OpenAiServer::handle_stored_response(const HttpRequest& request) {
  const std::string id = request.path.substr(std::string("/v1/responses/").size());
  if (request.method == "DELETE") {
    if (!responses_store_.erase(id)) {
      return ApiError(404, "invalid_request_error", "Response with id '" + id + "' not found.", "response_id")
          .to_response();
    }
    return json_response({{"id", id}, {"object", "response"}, {"deleted", true}});
  }
  const auto stored = responses_store_.get(id);
  if (!stored)
    return ApiError(404, "invalid_request_error", "Response with id '" + id + "' not found.", "response_id")
        .to_response();
  return json_response(stored->response);
}

HttpResponse OpenAiServer::handle_models() const {
  Json data = Json::array();
  data.push_back(model_json(config_.served_model_name));
  return json_response({{"object", "list"}, {"data", data}});
}

HttpResponse OpenAiServer::handle_model(const std::string& id) const {
  const auto& aliases = config_.model_aliases;
  if (id != config_.served_model_name && std::find(aliases.begin(), aliases.end(), id) == aliases.end()) {
    return ApiError(404, "not_found_error", "The model `" + id + "` does not exist.", "model", "model_not_found")
        .to_response();
  }
  return json_response(model_json(id));
}

HttpResponse OpenAiServer::handle_tokenize(const HttpRequest& request) const {
  const auto body = parse_json_body(request.body);
  std::vector<engine::TokenId> tokens;
  if (body.contains("messages")) {
    tokens = parse_chat_request(body, api_context_, *renderer_).prompt;
  } else {
    const auto prompt = body.find("prompt");
    if (prompt == body.end() || !prompt->is_string())
      throw ApiError::invalid("'prompt' (a string) or 'messages' is required", "prompt");
    try {
      tokens = tokenizer_->encode(prompt->get<std::string>(), {}, true);
    } catch (const Error& error) {
      throw ApiError::invalid(std::string("cannot tokenize the prompt: ") + error.what(), "prompt");
    }
  }
  Json out = {{"count", tokens.size()}, {"max_model_len", api_context_.max_model_len}, {"tokens", tokens}};
  const auto strs = body.find("return_token_strs");
  if (strs != body.end() && strs->is_boolean() && strs->get<bool>()) {
    Json token_strs = Json::array();
    for (const auto token : tokens) {
      text::IncrementalDetokenizer detokenizer(*tokenizer_);
      token_strs.push_back(detokenizer.push(token) + detokenizer.flush());
    }
    out["token_strs"] = std::move(token_strs);
  }
  return json_response(out);
}

HttpResponse OpenAiServer::handle_detokenize(const HttpRequest& request) const {
  const auto body = parse_json_body(request.body);
  const auto tokens = body.find("tokens");
  if (tokens == body.end() || !tokens->is_array())
    throw ApiError::invalid("'tokens' (an array of ids) is required", "tokens");
  text::IncrementalDetokenizer detokenizer(*tokenizer_);
  std::string text;
  for (const auto& token : *tokens) {
    if (!token.is_number_integer() || token.get<int64_t>() < 0 || token.get<int64_t>() >= tokenizer_->vocab_size()) {
      throw ApiError::invalid("'tokens' must hold token ids in [0, " + std::to_string(tokenizer_->vocab_size()) + ")",
                              "tokens");
    }
    try {
      text += detokenizer.push(static_cast<engine::TokenId>(token.get<int64_t>()));
    } catch (const Error& error) {
      throw ApiError::invalid(error.what(), "tokens");
    }
  }
  text += detokenizer.flush();
  return json_response({{"prompt", text}});
}

}  // namespace gossamer::server
