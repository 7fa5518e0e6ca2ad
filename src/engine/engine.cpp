#include "engine/engine.h"

#include <algorithm>
#include <exception>

#include "core/log.h"
#include "core/parallel.h"
#include "engine/sampler.h"
#include "engine/token_constraint.h"

namespace gossamer::engine {

Engine::Engine(std::unique_ptr<model::Model> model, const EngineConfig& config, StepObserver observer)
    : model_(std::move(model)),
      config_(config.resolve(*model_)),
      observer_(std::move(observer)),
      vocab_size_(model_->config().vocab_size),
      allocator_(config_.num_kv_blocks, config_.enable_prefix_caching ? config_.block_size : 0),
      sliding_allocator_(config_.num_sliding_kv_blocks, config_.enable_prefix_caching ? config_.block_size : 0),
      scheduler_(config_, allocator_, &sliding_allocator_) {
  model_->allocate_kv_cache(config_.num_kv_blocks, config_.block_size, config_.num_sliding_kv_blocks);
  stat_free_blocks_ = allocator_.num_free();
  {  // the load summary: what the weights and the KV cache take, and how many tokens fit
    const double gib = 1024.0 * 1024.0 * 1024.0;
    const int64_t per_token = model_->kv_bytes_per_token(), layers = std::max(1, model_->config().num_layers);
    const int64_t sliding_layers = config_.num_sliding_kv_blocks > 0 ? model_->num_sliding_layers() : 0;
    const double kv_bytes = static_cast<double>(config_.num_kv_blocks) * config_.block_size *
                                static_cast<double>(per_token * (layers - sliding_layers) / layers) +
                            static_cast<double>(config_.num_sliding_kv_blocks) * config_.block_size *
                                static_cast<double>(per_token * sliding_layers / layers);
    GOSSAMER_LOG_INFO("ready: weights ", static_cast<double>(model_->weight_bytes()) / gib, " GiB on the ",
                      model_->backend_name(), " device, KV cache ", kv_bytes / gib, " GiB, max tokens in the cache ",
                      static_cast<int64_t>(config_.num_kv_blocks) * config_.block_size);
  }
  GOSSAMER_LOG_INFO("engine: ", config_.num_kv_blocks, " KV blocks of ", config_.block_size, " positions (",
                    static_cast<int64_t>(config_.num_kv_blocks) * config_.block_size, " tokens), max_model_len ",
                    config_.max_model_len, ", max_num_seqs ", config_.max_num_seqs, ", max_num_batched_tokens ",
                    config_.max_num_batched_tokens,
                    config_.num_sliding_kv_blocks > 0
                        ? ", sliding-window ring of " + std::to_string(config_.num_sliding_kv_blocks) + " blocks"
                        : std::string(", no sliding-window ring"),
                    config_.enable_prefix_caching ? ", prefix caching on" : ", prefix caching off");
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
  stats.num_prefix_cache_queries_total = stat_prefix_queries_.load();
  stats.num_prefix_cache_hits_total = stat_prefix_hits_.load();
  return stats;
}

void Engine::loop() {
  std::vector<std::unique_ptr<Request>> incoming;
  std::vector<RequestId> cancels;
  while (true) {
    bool stopping = false;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || !incoming_.empty() || !cancels_.empty() || scheduler_.has_work(); });
      incoming.swap(incoming_);
      cancels.swap(cancels_);
      stopping = stop_;
      // NOTE: the waiting count must include the requests just taken, or submit() could overshoot the cap.
      num_waiting_snapshot_ = scheduler_.num_waiting() + static_cast<int32_t>(incoming.size());
    }
    admit_incoming(incoming);
    apply_cancels(cancels);
    if (!cancels.empty()) {
      publish_stats();
      flush_outputs();
    }
    cancels.clear();
    if (stopping) {
      std::vector<Request*> all;
      for (auto& [id, request] : requests_) all.push_back(request.get());
      std::sort(all.begin(), all.end(), [](const Request* a, const Request* b) { return a->id < b->id; });
      for (Request* request : all) finish(request, FinishReason::kAbort);
      publish_stats();
      flush_outputs();
      return;
    }
    const SchedulerOutput scheduled = scheduler_.schedule();
    if (!scheduled.empty()) run_step(scheduled);
    publish_stats();
    flush_outputs();
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

void Engine::run_step(const SchedulerOutput& scheduled) {
  const auto start = Clock::now();
  // Build the batch: each sequence's new tokens are a contiguous slice of its known tokens.
  std::vector<std::vector<TokenId>> token_storage(scheduled.sequences.size());
  model::ForwardBatch batch;
  batch.sequences.reserve(scheduled.sequences.size());
  for (size_t i = 0; i < scheduled.sequences.size(); ++i) {
    const ScheduledSequence& seq = scheduled.sequences[i];
    Request* request = seq.request;
    if (request->times.first_scheduled == Clock::time_point{}) {
      request->times.first_scheduled = start;
      stat_prompt_tokens_ += static_cast<int64_t>(request->prompt.size());
    }
    auto& tokens = token_storage[i];
    tokens.reserve(seq.num_new);
    for (int32_t p = request->num_computed; p < request->num_computed + seq.num_new; ++p)
      tokens.push_back(request->token_at(p));
    model::SequenceInput input;
    input.tokens = tokens;
    input.num_cached = request->num_computed;
    input.block_table = request->block_table;
    input.sliding_block_table = request->sliding_block_table;
    input.logits = seq.sample ? model::LogitsWanted::kLast : model::LogitsWanted::kNone;
    batch.sequences.push_back(input);
  }

  std::vector<Request*> sampled;
  for (const ScheduledSequence& seq : scheduled.sequences) {
    if (seq.sample) sampled.push_back(seq.request);
  }
  std::vector<TokenId> sampled_tokens(sampled.size());
  // Structured output: each constrained row's token mask, filled here (rows in parallel, each
  // constraint owned by its request) before the forward step.
  const auto words = static_cast<size_t>(token_mask_words(vocab_size_));
  std::vector<uint8_t> masked(sampled.size(), 0), mask_empty(sampled.size(), 0);
  const bool any_constraint =
      std::any_of(sampled.begin(), sampled.end(), [](const Request* r) { return r->sampling.constraint != nullptr; });
  if (any_constraint) {
    masks_.resize(sampled.size() * words);
    parallel_for(static_cast<int64_t>(sampled.size()), 1, [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {
        TokenConstraint* constraint = sampled[static_cast<size_t>(row)]->sampling.constraint.get();
        if (constraint == nullptr) continue;
        const std::span<uint32_t> mask(masks_.data() + static_cast<size_t>(row) * words, words);
        masked[static_cast<size_t>(row)] = constraint->fill_mask(mask);
        mask_empty[static_cast<size_t>(row)] =
            masked[static_cast<size_t>(row)] && !token_mask_allows_any(mask, vocab_size_);
      }
    });
  }
  // On the device when the backend can: only token ids cross back (no [rows, vocab] logits copy and
  // host softmax). The rows' RNG states advance before the step; a failed step aborts its requests.
  // NOTE: a step with a masked row samples on the host unless the backend applies token masks itself
  // (kernels/token_mask.h).
  const bool any_masked = std::any_of(masked.begin(), masked.end(), [](uint8_t m) { return m != 0; });
  const bool on_device =
      config_.device_sampling && model_->samples_on_device() && (!any_masked || model_->samples_with_token_masks());
  try {
    if (on_device) {
      std::vector<model::RowSampling> rows;
      rows.reserve(sampled.size());
      for (size_t row = 0; row < sampled.size(); ++row) {
        rows.push_back(device_row_sampling(*sampled[row]));
        if (masked[row]) rows.back().token_mask = masks_.data() + row * words;
      }
      std::vector<model::RowLogprobs> row_logprobs;
      model_->forward_sample(batch, rows, sampled_tokens, row_logprobs);
      for (size_t i = 0; i < sampled.size(); ++i) {
        if (sampled[i]->sampling.logprobs >= 0) take_device_logprobs(*sampled[i], row_logprobs[i]);
      }
    } else {
      model_->forward(batch, logits_);
    }
  } catch (const std::exception& error) {
    GOSSAMER_LOG_ERROR("engine: forward failed, aborting ", scheduled.sequences.size(), " requests: ", error.what());
    scheduler_.reset_prefix_cache();  // blocks registered for this step may hold garbage
    for (const ScheduledSequence& seq : scheduled.sequences) finish(seq.request, FinishReason::kAbort);
    return;
  }

  // Host sampling: every logits row in parallel (each request owns its RNG state, so the result does not
  // depend on the thread count): a full-vocabulary softmax per sequence dominated the step on the CPU.
  if (!on_device) {
    parallel_for(static_cast<int64_t>(sampled.size()), 1, [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {
        const std::span<float> logits(logits_.data() + row * vocab_size_, vocab_size_);
        Request* request = sampled[static_cast<size_t>(row)];
        if (masked[static_cast<size_t>(row)]) {
          apply_token_mask(logits, std::span<const uint32_t>(masks_.data() + static_cast<size_t>(row) * words, words));
        }
        sampled_tokens[static_cast<size_t>(row)] = sample_request_token(logits, *request);
      }
    });
  }

  // Post-process in batch order: advance, stop, stream out.
  size_t row = 0;
  for (const ScheduledSequence& seq : scheduled.sequences) {
    Request* request = seq.request;
    request->num_computed += seq.num_new;
    if (!seq.sample) continue;
    if (mask_empty[row]) {  // a constraint that allows nothing: its bug, never an invalid answer
      GOSSAMER_LOG_ERROR("engine: request ", request->id, "'s token constraint allows no token; aborting it");
      ++row;
      finish(request, FinishReason::kAbort);
      continue;
    }
    const TokenId token = sampled_tokens[row++];
    request->output.push_back(token);
    if (request->sampling.constraint) request->sampling.constraint->accept(token);
    ++stat_generation_tokens_;
    const auto now = Clock::now();
    if (request->output.size() == 1) request->times.first_token = now;

    const auto& stops = request->sampling.stop_token_ids;
    const bool is_stop = !request->sampling.ignore_eos && std::find(stops.begin(), stops.end(), token) != stops.end();
    const bool at_max_tokens = request->sampling.max_tokens > 0 &&
                               static_cast<int32_t>(request->output.size()) >= request->sampling.max_tokens;
    const bool at_context =
        request->num_tokens() >= request->max_total_tokens || request->num_tokens() >= config_.max_model_len;
    if (is_stop) {
      finish(request, token == kTokenCall ? FinishReason::kToolCall : FinishReason::kStop, {token}, token);
    } else if (at_max_tokens || at_context) {
      finish(request, FinishReason::kLength, {token});
    } else if (request->on_output) {
      RequestOutput output;
      output.id = request->id;
      output.new_tokens = {token};
      output.num_prompt_tokens = static_cast<int32_t>(request->prompt.size());
      output.num_output_tokens = static_cast<int32_t>(request->output.size());
      output.times = request->times;
      output.num_preemptions = request->num_preemptions;
      output.num_cached_tokens = request->num_cached_tokens;
      if (request->last_logprobs)
        output.logprobs.push_back(std::move(*std::exchange(request->last_logprobs, std::nullopt)));
      pending_outputs_.emplace_back(request->on_output, std::move(output));
    }
  }
  ++stat_steps_;
  if (observer_) {
    StepInfo info;
    info.num_sequences = static_cast<int32_t>(scheduled.sequences.size());
    info.num_tokens = scheduled.num_tokens;
    info.num_preempted = static_cast<int32_t>(scheduled.preempted.size());
    info.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    observer_(info);
  }
}

void Engine::finish(Request* request, FinishReason reason, std::vector<TokenId> new_tokens,
                    std::optional<TokenId> stop_token) {
  scheduler_.finish(request, reason);
  request->times.finished = Clock::now();
  RequestOutput output;
  output.id = request->id;
  output.new_tokens = std::move(new_tokens);
  output.num_prompt_tokens = static_cast<int32_t>(request->prompt.size());
  output.num_output_tokens = static_cast<int32_t>(request->output.size());
  output.finished = true;
  output.finish_reason = reason;
  output.stop_token = stop_token;
  output.times = request->times;
  output.num_preemptions = request->num_preemptions;
  output.num_cached_tokens = request->num_cached_tokens;
  if (request->last_logprobs && !output.new_tokens.empty())
    output.logprobs.push_back(std::move(*request->last_logprobs));
  OutputCallback callback = std::move(request->on_output);
  const RequestId id = request->id;  // NOTE: erase(request->id) would read the key while destroying it
  requests_.erase(id);               // `request` dangles from here on
  if (callback) pending_outputs_.emplace_back(std::move(callback), std::move(output));
}

void Engine::flush_outputs() {
  std::vector<std::pair<OutputCallback, RequestOutput>> outputs;
  outputs.swap(pending_outputs_);
  for (auto& [callback, output] : outputs) callback(output);
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
