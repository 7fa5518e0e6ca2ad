#include "engine/engine.h"

#include <algorithm>
#include <exception>
#include <utility>

#include "core/log.h"
#include "engine/sampler.h"
#include "engine/speculative.h"
#include "engine/token_constraint.h"

namespace gossamer::engine {

Engine::Engine(std::unique_ptr<model::Model> model, const EngineConfig& config, StepObserver observer)
    : model_(std::move(model)),
      config_(config.resolve(*model_)),
      observer_(std::move(observer)),
      vocab_size_(model_->config().vocab_size),
      allocator_(config_.num_kv_blocks, config_.enable_prefix_caching ? config_.block_size : 0),
      sliding_allocator_(config_.num_sliding_kv_blocks, config_.enable_prefix_caching ? config_.block_size : 0),
      scheduler_(config_, allocator_, &sliding_allocator_),
      runner_(*model_, config_) {
  model_->allocate_kv_cache(config_.num_kv_blocks, config_.block_size, config_.num_sliding_kv_blocks);
  stat_free_blocks_ = allocator_.num_free();
  {  // the load summary: what the weights and the KV cache take, and how many tokens fit
    const double gib = 1024.0 * 1024.0 * 1024.0;
    const model::KvPoolBytes pool = model::kv_pool_bytes_per_token(*model_, config_.num_sliding_kv_blocks > 0);
    const double kv_bytes =
        static_cast<double>(config_.num_kv_blocks) * config_.block_size * static_cast<double>(pool.main) +
        static_cast<double>(config_.num_sliding_kv_blocks) * config_.block_size * static_cast<double>(pool.ring);
    GOSSAMER_LOG_INFO("ready: weights ", static_cast<double>(model_->weight_bytes()) / gib, " GiB on the ",
                      model_->backend_name(), " device, KV cache ", kv_bytes / gib, " GiB (",
                      model_->kv_cache_dtype_name(), "), max tokens in the cache ",
                      static_cast<int64_t>(config_.num_kv_blocks) * config_.block_size);
  }
  GOSSAMER_LOG_INFO("engine: ", config_.num_kv_blocks, " KV blocks of ", config_.block_size, " positions (",
                    static_cast<int64_t>(config_.num_kv_blocks) * config_.block_size, " tokens), max_model_len ",
                    config_.max_model_len, ", max_num_seqs ", config_.max_num_seqs, ", max_num_batched_tokens ",
                    config_.max_num_batched_tokens,
                    config_.decode_first
                        ? detail::concat(", decode-first (max_prefill_tokens ", config_.max_prefill_tokens,
                                         config_.max_step_ms > 0.0
                                             ? detail::concat(" adapted to steps of ", config_.max_step_ms, " ms")
                                             : std::string(),
                                         ", long_prefill_token_threshold ", config_.long_prefill_token_threshold,
                                         ", max_num_partial_prefills ", config_.max_num_partial_prefills, ")")
                        : std::string(", the old scheduler (--no-decode-first)"),
                    config_.num_sliding_kv_blocks > 0
                        ? ", sliding-window ring of " + std::to_string(config_.num_sliding_kv_blocks) + " blocks"
                        : std::string(", no sliding-window ring"),
                    config_.enable_prefix_caching ? ", prefix caching on" : ", prefix caching off",
                    config_.speculative.enabled()
                        ? detail::concat(", speculative decoding: ngram, ", config_.speculative.num_speculative_tokens,
                                         " tokens, lookup ", config_.speculative.prompt_lookup_min, "-",
                                         config_.speculative.prompt_lookup_max)
                        : std::string(),
                    !config_.async_scheduling                  ? ", async scheduling off"
                    : model_->feeds_pending_tokens_on_device() ? ", async scheduling on"
                                                               : ", async scheduling on (the backend cannot: off)");
  thread_ = std::thread([this] { loop(); });
}

Engine::~Engine() {
  shutdown();
}

void Engine::shutdown() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

RequestId Engine::submit(SubmitParams params) {
  const auto prompt_len = static_cast<int32_t>(params.prompt.size());
  GOSSAMER_CHECK(prompt_len > 0, "the prompt is empty");
  for (const TokenId token : params.prompt) {
    GOSSAMER_CHECK(token >= 0 && token < vocab_size_, "prompt token id ", token, " is outside the vocabulary [0, ",
                   vocab_size_, ")");
  }
  const SamplingParams& sampling = params.sampling;
  GOSSAMER_CHECK(sampling.max_tokens >= 0, "max_tokens must be >= 0");
  GOSSAMER_CHECK(sampling.temperature >= 0.0f, "temperature must be >= 0");
  GOSSAMER_CHECK(sampling.top_p > 0.0f && sampling.top_p <= 1.0f, "top_p must be in (0, 1]");
  GOSSAMER_CHECK(sampling.top_k >= 0, "top_k must be >= 0");
  const int64_t wanted = static_cast<int64_t>(prompt_len) + std::max(sampling.max_tokens, 1);
  if (wanted > config_.max_model_len) {
    throw ContextLengthError(
        detail::concat("This model's maximum context length is ", config_.max_model_len,
                       " tokens. However, you requested ", wanted, " tokens (", prompt_len, " in the prompt, ",
                       std::max(sampling.max_tokens, 1),
                       " in the completion). Please reduce the length of the prompt or the completion."),
        prompt_len, sampling.max_tokens, config_.max_model_len);
  }

  auto request = std::make_unique<Request>();
  request->prompt = std::move(params.prompt);
  request->sampling = std::move(params.sampling);
  request->on_output = std::move(params.on_output);
  request->max_total_tokens =
      request->sampling.max_tokens > 0 ? prompt_len + request->sampling.max_tokens : config_.max_model_len;
  request->times.arrival = Clock::now();
  RequestId id = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    GOSSAMER_CHECK(!stop_, "the engine is shutting down");
    if (num_waiting_snapshot_ + static_cast<int32_t>(incoming_.size()) >= config_.max_queued_requests) {
      throw QueueFullError(detail::concat("the server is overloaded: ", config_.max_queued_requests,
                                          " requests are already waiting; retry later"));
    }
    id = next_id_++;
    request->id = id;
    request->rng_state = initial_rng_state(request->sampling, config_.default_seed, id);
    incoming_.push_back(std::move(request));
  }
  wake_.notify_one();
  return id;
}

void Engine::cancel(RequestId id) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    cancels_.push_back(id);
  }
  wake_.notify_one();
}

EngineStats Engine::stats() const {
  EngineStats stats;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stats.num_waiting = num_waiting_snapshot_ + static_cast<int32_t>(incoming_.size());
  }
  stats.num_running = stat_running_.load();
  stats.num_kv_blocks = config_.num_kv_blocks;
  stats.num_free_kv_blocks = stat_free_blocks_.load();
  stats.num_preemptions_total = stat_preemptions_.load();
  stats.num_prompt_tokens_total = stat_prompt_tokens_.load();
  stats.num_generation_tokens_total = stat_generation_tokens_.load();
  stats.num_steps_total = stat_steps_.load();
  stats.num_steps_launched_ahead_total = stat_launched_ahead_.load();
  stats.num_prefix_cache_queries_total = stat_prefix_queries_.load();
  stats.num_prefix_cache_hits_total = stat_prefix_hits_.load();
  stats.num_spec_drafts_total = stat_spec_drafts_.load();
  stats.num_spec_draft_tokens_total = stat_spec_draft_tokens_.load();
  stats.num_spec_accepted_tokens_total = stat_spec_accepted_.load();
  const auto seconds = [&](LoopPhase phase) { return static_cast<double>(stat_loop_ns_[phase].load()) * 1e-9; };
  stats.loop = {seconds(kIdle),    seconds(kSchedule), seconds(kWait),
                seconds(kCollect), seconds(kLaunch),   seconds(kPostprocess)};
  return stats;
}

void Engine::add_loop_time(LoopPhase phase, Clock::time_point since) {
  const auto elapsed = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - since).count();
  stat_loop_ns_[phase].fetch_add(static_cast<int64_t>(elapsed), std::memory_order_relaxed);
}

void Engine::loop() {
  std::vector<std::unique_ptr<Request>> incoming;
  std::vector<RequestId> cancels;
  while (true) {
    bool stopping = false;
    const auto idle_start = Clock::now();
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] {
        return stop_ || !incoming_.empty() || !cancels_.empty() || scheduler_.has_work() || runner_.in_flight();
      });
      incoming.swap(incoming_);
      cancels.swap(cancels_);
      stopping = stop_;
      // NOTE: the waiting count must include the requests just taken, or submit() could overshoot the cap.
      num_waiting_snapshot_ = scheduler_.num_waiting() + static_cast<int32_t>(incoming.size());
    }
    const auto iteration_start = Clock::now();
    add_loop_time(kIdle, idle_start);
    admit_incoming(incoming);
    apply_cancels(cancels);
    if (!cancels.empty()) {  // their final events go out now, not after the step in flight
      publish_stats();
      flush_outputs();
    }
    cancels.clear();
    if (stopping) {
      while (runner_.in_flight()) {
        try {
          runner_.wait();  // its tokens are dropped: every request is aborted below
        } catch (const std::exception& error) {
          GOSSAMER_LOG_WARN("engine: the last step failed at shutdown: ", error.what());
        }
      }
      std::vector<Request*> all;
      for (auto& [id, request] : requests_) all.push_back(request.get());
      std::sort(all.begin(), all.end(), [](const Request* a, const Request* b) { return a->id < b->id; });
      for (Request* request : all) finish(request, FinishReason::kAbort);
      publish_stats();
      flush_outputs();
      return;
    }
    auto phase_start = Clock::now();
    SchedulerOutput next = schedule();  // overlaps the step in flight
    add_loop_time(kSchedule, phase_start);
    if (runner_.can_launch_ahead(next)) {  // async scheduling: N+1 goes before N's tokens are back
      phase_start = Clock::now();
      launch(std::move(next));
      add_loop_time(kLaunch, phase_start);
      if (runner_.num_in_flight() == 2) ++stat_launched_ahead_;  // not when the launch failed
      collect(nullptr);  // step N; what N+1 computed for the requests N finishes is dropped when it is collected
      release_retired();
    } else {
      if (runner_.in_flight()) {
        collect(&next);  // times its wait and the rest itself
        phase_start = Clock::now();
        admit_late(next, incoming);
        add_loop_time(kSchedule, phase_start);
      }
      release_retired();
      phase_start = Clock::now();
      launch(std::move(next));
      add_loop_time(kLaunch, phase_start);
    }
    phase_start = Clock::now();
    postprocess(iteration_start);  // overlaps the step just launched
    add_loop_time(kPostprocess, phase_start);
  }
}

void Engine::admit_incoming(std::vector<std::unique_ptr<Request>>& incoming) {
  for (auto& request : incoming) {
    Request* raw = request.get();
    requests_.emplace(raw->id, std::move(request));
    scheduler_.add(raw);
  }
  incoming.clear();
}

void Engine::apply_cancels(const std::vector<RequestId>& cancels) {
  for (const RequestId id : cancels) {
    const auto found = requests_.find(id);
    if (found != requests_.end()) finish(found->second.get(), FinishReason::kAbort);
  }
}

SchedulerOutput Engine::schedule() {
  return scheduler_.schedule();
}

void Engine::admit_late(SchedulerOutput& next, std::vector<std::unique_ptr<Request>>& incoming) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    incoming.swap(incoming_);
    num_waiting_snapshot_ = scheduler_.num_waiting() + static_cast<int32_t>(incoming.size());
  }
  admit_incoming(incoming);
  scheduler_.admit_waiting(next);
}

bool Engine::last_by_length(const Request& request, int32_t num_output, int32_t num_tokens) const {
  const bool at_max_tokens = request.sampling.max_tokens > 0 && num_output >= request.sampling.max_tokens;
  return at_max_tokens || num_tokens >= request.max_total_tokens || num_tokens >= config_.max_model_len;
}

void Engine::launch(SchedulerOutput next) {
  if (next.empty()) return;
  // NOTE: never with a step in flight: the drafts come from the tokens its predecessor kept.
  if (config_.speculative.enabled() && !runner_.in_flight()) propose_drafts(next);
  const auto now = Clock::now();
  for (const ScheduledSequence& seq : next.sequences) {
    Request* request = seq.request;
    if (request->times.first_scheduled == Clock::time_point{}) {
      request->times.first_scheduled = now;
      stat_prompt_tokens_ += static_cast<int64_t>(request->prompt.size());
    }
  }
  try {
    runner_.launch(next);
  } catch (const std::exception& error) {
    fail_step(next, nullptr, error);
    return;
  }
  launched_constrained_rows_ += runner_.last_num_constrained_rows();
  launched_mask_seconds_ += runner_.last_token_mask_seconds();
  ++num_launched_;
  // The state the next schedule() sees: the new tokens are computed (or being computed), and a sampled
  // sequence's next token is a placeholder unless it is its last by length (then it is not scheduled).
  // NOTE: placeholders count as tokens here: a sequence launched ahead on its step-N placeholder gets a second.
  for (const ScheduledSequence& seq : next.sequences) {
    Request* request = seq.request;
    request->num_computed += seq.num_new;
    if (!seq.sample) continue;
    const int32_t num_output = static_cast<int32_t>(request->output.size()) + 1;
    if (last_by_length(*request, num_output, request->num_tokens() + 1)) continue;
    request->output.push_back(kPendingToken);
    ++request->num_pending;
  }
  in_flight_.push_back(std::move(next));
}

void Engine::propose_drafts(SchedulerOutput& next) {
  const SpeculativeConfig& spec = config_.speculative;
  if (spec.disable_by_batch_size > 0 && scheduler_.num_running() > spec.disable_by_batch_size) return;
  int32_t token_budget = config_.max_num_batched_tokens - next.num_tokens;
  int32_t block_budget = scheduler_.draft_block_budget();
  for (ScheduledSequence& seq : next.sequences) {
    if (token_budget <= 0) break;
    Request* request = seq.request;
    if (!seq.sample || seq.prefill || seq.num_new != 1 || request->num_pending > 0) continue;
    if (!speculation_eligible(*request)) continue;
    // The step may give it 1 + k tokens: all within its limits.
    const int32_t num_known = request->num_known_tokens();
    int32_t room = std::min(request->max_total_tokens, config_.max_model_len) - num_known;
    if (request->sampling.max_tokens > 0)
      room = std::min(room, request->sampling.max_tokens - request->num_known_output());
    const int32_t max_draft = std::min(room - 1, token_budget);
    if (max_draft <= 0) continue;
    if (!request->ngram_index) request->ngram_index = std::make_shared<NgramIndex>();
    request->ngram_index->propose(request->prompt,
                                  std::span<const TokenId>(request->output).first(request->num_known_output()), spec,
                                  max_draft, draft_buffer_);
    auto num_draft = static_cast<int32_t>(draft_buffer_.size());
    if (num_draft == 0) continue;
    // Its tables cover the drafts and the position after them (the next step's token when all are kept),
    // from free blocks, else as many drafts as they already cover.
    if (!scheduler_.grow_for_draft(request, request->num_computed + num_draft + 2, block_budget)) {
      const int32_t covered = static_cast<int32_t>(request->block_table.size()) * config_.block_size;
      num_draft = std::min(num_draft, covered - request->num_computed - 2);
      if (num_draft <= 0) continue;
    }
    request->draft.assign(draft_buffer_.begin(), draft_buffer_.begin() + num_draft);
    request->draft_preemptions = request->num_preemptions;
    seq.num_draft = num_draft;
    next.num_tokens += num_draft;
    token_budget -= num_draft;
    ++stat_spec_drafts_;
    stat_spec_draft_tokens_ += num_draft;
  }
}

void Engine::release_retired() {
  // NOTE: a request retired after launch L may be referenced by steps up to L still in flight.
  std::erase_if(retired_, [&](const RetiredRequest& retired) { return retired.last_launch <= num_collected_; });
}

void Engine::collect(SchedulerOutput* next) {
  collected_ = std::move(in_flight_.front());
  in_flight_.pop_front();
  token_rows_.clear();
  const std::vector<SampledRow>* rows = nullptr;
  const auto wait_start = Clock::now();
  try {
    rows = &runner_.wait();
    ++num_collected_;
  } catch (const std::exception& error) {
    ++num_collected_;
    add_loop_time(kWait, wait_start);
    fail_step(collected_, next, error);
    // A step launched on top of the failed one read its tokens: it is waited for and fails with it.
    while (!in_flight_.empty()) {
      try {
        runner_.wait();
      } catch (const std::exception&) {  // NOTE: the first step's error is the one reported
      }
      ++num_collected_;
      fail_step(in_flight_.front(), nullptr, error);
      in_flight_.pop_front();
    }
    collected_ = {};
    return;
  }
  const auto now = Clock::now();
  add_loop_time(kWait, wait_start);
  const std::span<const SampledRow> sampled(*rows);
  for (size_t r = 0; r < sampled.size(); ++r) {
    const SampledRow& row = sampled[r];
    Request* request = row.request;
    if (row.speculative) {
      keep_speculative(sampled.subspan(r, static_cast<size_t>(1 + row.num_draft)), now);
      r += static_cast<size_t>(row.num_draft);
      continue;
    }
    // Cancelled while the step ran, or (async scheduling) finished by the previous step's token, which this
    // step computed as if it went on: the token is dropped.
    if (request->state == RequestState::kFinished) continue;
    if (row.no_token_allowed) {  // a constraint that allows nothing: its bug, never an invalid answer
      GOSSAMER_LOG_ERROR("engine: request ", request->id, "'s token constraint allows no token; aborting it");
      finish(request, FinishReason::kAbort);
      continue;
    }
    if (keep_token(request, row.token, now, 0)) token_rows_.emplace_back(request, 1);
  }
  // NOTE: a sequence that finished was scheduled behind this step on its placeholder: it leaves before launch.
  if (next != nullptr) {
    std::erase_if(next->sequences, [&](const ScheduledSequence& seq) {
      if (seq.request->state != RequestState::kFinished) return false;
      next->num_tokens -= seq.num_new;
      if (seq.prefill) next->num_prompt_tokens -= seq.num_new;
      return true;
    });
  }
  add_loop_time(kCollect, now);
}

bool Engine::keep_token(Request* request, TokenId token, Clock::time_point now, int32_t kept_before) {
  if (request->num_pending > 0) {  // the oldest placeholder (a step launched ahead added the newest)
    request->output[request->output.size() - static_cast<size_t>(request->num_pending)] = token;
    --request->num_pending;
  } else {
    request->output.push_back(token);
  }
  if (request->sampling.constraint) request->sampling.constraint->accept(token);
  ++stat_generation_tokens_;
  const int32_t num_output = request->num_known_output();
  // The final event carries the step's tokens: this one and the kept_before before it (the last known outputs).
  const auto kept = [&] {
    const auto end = request->output.begin() + num_output;
    return std::vector<TokenId>(end - (kept_before + 1), end);
  };
  if (num_output == 1) request->times.first_token = now;
  const auto& stops = request->sampling.stop_token_ids;
  const bool is_stop = !request->sampling.ignore_eos && std::find(stops.begin(), stops.end(), token) != stops.end();
  if (is_stop) {
    finish(request, FinishReason::kStop, kept(), token);
    return false;
  }
  if (last_by_length(*request, num_output, request->num_known_tokens())) {
    finish(request, FinishReason::kLength, kept());
    return false;
  }
  return true;
}

void Engine::keep_speculative(std::span<const SampledRow> rows, Clock::time_point now) {
  Request* request = rows.front().request;
  if (request->state == RequestState::kFinished) return;  // cancelled while the step ran
  std::vector<TokenId> drawn;
  for (const SampledRow& row : rows) drawn.push_back(row.token);
  const int32_t accepted = count_accepted_drafts(request->draft, drawn);
  stat_spec_accepted_ += accepted;
  request->rng_state = rng_state_after(request->sampling, request->rng_state, accepted + 1);
  // Preempted meanwhile: the tokens stand (they are what it would have drawn), its KV is gone anyway.
  const bool kv_kept =
      request->state == RequestState::kRunning && request->num_preemptions == request->draft_preemptions;
  request->draft.clear();
  for (int32_t i = 0; i <= accepted; ++i) {
    if (rows[static_cast<size_t>(i)].logprobs)
      request->pending_logprobs.push_back(*rows[static_cast<size_t>(i)].logprobs);
    if (!keep_token(request, drawn[static_cast<size_t>(i)], now, i)) return;
  }
  // The last known token was counted at launch; the confirmed drafts' positions hold the right K/V too.
  if (kv_kept) request->num_computed += accepted;
  token_rows_.emplace_back(request, accepted + 1);
}

void Engine::fail_step(const SchedulerOutput& step, SchedulerOutput* next, const std::exception& error) {
  const size_t behind = next != nullptr ? next->sequences.size() : 0;
  GOSSAMER_LOG_ERROR("engine: a step failed, aborting its ", step.sequences.size(), " requests",
                     behind > 0 ? detail::concat(" and the ", behind, " scheduled behind it") : std::string(), ": ",
                     error.what());
  scheduler_.reset_prefix_cache();  // blocks registered for the step may hold garbage
  for (const ScheduledSequence& seq : step.sequences) finish(seq.request, FinishReason::kAbort);
  if (next != nullptr) {
    for (const ScheduledSequence& seq : next->sequences) finish(seq.request, FinishReason::kAbort);
    next->sequences.clear();
    next->num_tokens = 0;
    next->num_prompt_tokens = 0;
  }
}

void Engine::postprocess(Clock::time_point iteration_start) {
  for (const auto& [request, count] : token_rows_) {
    if (!request->on_output) continue;
    RequestOutput output;
    output.id = request->id;
    const auto end = request->output.begin() + request->num_known_output();
    output.new_tokens.assign(end - count, end);
    output.num_prompt_tokens = static_cast<int32_t>(request->prompt.size());
    output.num_output_tokens = request->num_known_output();
    output.times = request->times;
    output.num_preemptions = request->num_preemptions;
    output.num_cached_tokens = request->num_cached_tokens;
    output.logprobs = std::exchange(request->pending_logprobs, {});
    pending_outputs_.emplace_back(request->on_output, std::move(output));
  }
  token_rows_.clear();
  if (!collected_.empty()) {
    ++stat_steps_;
    StepInfo info;
    info.num_sequences = static_cast<int32_t>(collected_.sequences.size());
    info.num_tokens = collected_.num_tokens;
    info.num_prompt_tokens = collected_.num_prompt_tokens;
    info.num_preempted = static_cast<int32_t>(collected_.preempted.size());
    info.seconds = std::chrono::duration<double>(Clock::now() - iteration_start).count();
    info.num_constrained_rows = std::exchange(launched_constrained_rows_, 0);
    info.token_mask_seconds = std::exchange(launched_mask_seconds_, 0.0);
    scheduler_.observe_step(info.num_tokens - info.num_prompt_tokens, info.num_prompt_tokens, info.seconds);
    if (observer_) observer_(info);
    collected_ = {};
  }
  publish_stats();
  flush_outputs();
}

void Engine::finish(Request* request, FinishReason reason, std::vector<TokenId> new_tokens,
                    std::optional<TokenId> stop_token) {
  if (request->state == RequestState::kFinished) return;  // e.g. cancelled, then its step failed
  scheduler_.finish(request, reason);
  request->times.finished = Clock::now();
  RequestOutput output;
  output.id = request->id;
  output.new_tokens = std::move(new_tokens);
  output.num_prompt_tokens = static_cast<int32_t>(request->prompt.size());
  output.num_output_tokens = request->num_known_output();
  output.finished = true;
  output.finish_reason = reason;
  output.stop_token = stop_token;
  output.times = request->times;
  output.num_preemptions = request->num_preemptions;
  output.num_cached_tokens = request->num_cached_tokens;
  if (!output.new_tokens.empty()) output.logprobs = std::exchange(request->pending_logprobs, {});
  OutputCallback callback = std::move(request->on_output);
  const auto found = requests_.find(request->id);
  retired_.push_back({num_launched_, std::move(found->second)});  // NOTE: alive until its steps are collected
  requests_.erase(found);
  if (callback) pending_outputs_.emplace_back(std::move(callback), std::move(output));
}

void Engine::flush_outputs() {
  std::vector<std::pair<OutputCallback, RequestOutput>> outputs;
  outputs.swap(pending_outputs_);
  for (auto& [callback, output] : outputs) callback(std::move(output));
}

void Engine::publish_stats() {
  stat_running_ = scheduler_.num_running();
  stat_free_blocks_ = allocator_.num_free();
  stat_preemptions_ = scheduler_.num_preemptions_total();
  stat_prefix_queries_ = scheduler_.num_prefix_cache_queries_total();
  stat_prefix_hits_ = scheduler_.num_prefix_cache_hits_total();
  std::lock_guard<std::mutex> lock(mutex_);
  num_waiting_snapshot_ = scheduler_.num_waiting();
}

}  // namespace gossamer::engine
