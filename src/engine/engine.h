// Engine: owns the model, the KV block allocator and the scheduler, and runs the step loop on its own
// thread: schedule → run (Model::forward) → post-process (sample, stop, stream out, free blocks).
//
// Contract:
//  - submit() and cancel() are thread-safe. submit() validates the request and throws QueueFullError
//    when max_queued_requests are already waiting, ContextLengthError when prompt + max_tokens exceed
//    max_model_len, gossamer::Error for other bad input. It returns the request id at once.
//  - Each request's on_output callback is called on the engine thread, in order: zero or more events
//    with new tokens, then exactly one event with finished = true (also after cancel() or shutdown()).
//    Callbacks must be quick; they may call cancel() but nothing else of the engine.
//  - cancel() frees the request's KV blocks before the next step runs; unknown or finished ids are ignored.
//  - The destructor (or shutdown()) aborts every request (finish_reason kAbort) and joins the thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/error.h"
#include "engine/block_allocator.h"
#include "engine/engine_config.h"
#include "engine/request.h"
#include "engine/scheduler.h"
#include "model/model.h"

namespace gossamer::engine {

class QueueFullError : public Error {
 public:
  using Error::Error;
};

class ContextLengthError : public Error {
 public:
  ContextLengthError(const std::string& message, int32_t prompt_tokens, int32_t max_tokens, int32_t max_model_len)
      : Error(message), prompt_tokens(prompt_tokens), max_tokens(max_tokens), max_model_len(max_model_len) {}
  int32_t prompt_tokens;
  int32_t max_tokens;
  int32_t max_model_len;
};

struct SubmitParams {
  std::vector<TokenId> prompt;
  SamplingParams sampling;
  OutputCallback on_output;
};

struct EngineStats {
  int32_t num_running = 0;
  int32_t num_waiting = 0;  // queued, including preempted requests and ones not yet picked up
  int32_t num_kv_blocks = 0;
  int32_t num_free_kv_blocks = 0;
  int64_t num_preemptions_total = 0;
  int64_t num_prompt_tokens_total = 0;  // prompt tokens computed (recomputes not counted)
  int64_t num_generation_tokens_total = 0;
  int64_t num_steps_total = 0;
  int64_t num_prefix_cache_queries_total = 0;  // tokens looked up in the prefix cache at admission
  int64_t num_prefix_cache_hits_total = 0;     // of those, tokens found cached
  double kv_usage() const { return num_kv_blocks == 0 ? 0.0 : 1.0 - double(num_free_kv_blocks) / num_kv_blocks; }
};

// Reported after every step, on the engine thread.
struct StepInfo {
  int32_t num_sequences = 0;
  int32_t num_tokens = 0;
  int32_t num_preempted = 0;
  double seconds = 0.0;
};
using StepObserver = std::function<void(const StepInfo&)>;

class Engine {
 public:
  // Resolves and validates `config` against the model, allocates the KV cache and starts the loop.
  Engine(std::unique_ptr<model::Model> model, const EngineConfig& config, StepObserver observer = {});
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  RequestId submit(SubmitParams params);
  void cancel(RequestId id);
  // Aborts all requests and stops the loop; idempotent.
  void shutdown();

  EngineStats stats() const;
  const EngineConfig& config() const { return config_; }
  const model::Model& model() const { return *model_; }
  int32_t vocab_size() const { return vocab_size_; }

 private:
  void loop();
  void admit_incoming(std::vector<std::unique_ptr<Request>>& incoming);
  void apply_cancels(const std::vector<RequestId>& cancels);
  void run_step(const SchedulerOutput& scheduled);
  void finish(Request* request, FinishReason reason, std::vector<TokenId> new_tokens = {},
              std::optional<TokenId> stop_token = std::nullopt);
  void publish_stats();
  // Delivers the queued events (after publish_stats, so a finished event sees its blocks freed).
  void flush_outputs();

  std::unique_ptr<model::Model> model_;
  EngineConfig config_;
  StepObserver observer_;
  int32_t vocab_size_ = 0;

  // Engine-thread state.
  BlockAllocator allocator_;
  BlockAllocator sliding_allocator_;  // the sliding-window ring's pool (0 blocks without a ring)
  Scheduler scheduler_;
  std::unordered_map<RequestId, std::unique_ptr<Request>> requests_;
  std::vector<float> logits_;    // [num_rows, vocab_size] float32
  std::vector<uint32_t> masks_;  // [num_rows, token_mask_words(vocab_size)] constrained rows' token masks
  std::vector<std::pair<OutputCallback, RequestOutput>> pending_outputs_;

  // Shared with submitters (guarded by mutex_).
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<std::unique_ptr<Request>> incoming_;
  std::vector<RequestId> cancels_;
  bool stop_ = false;
  RequestId next_id_ = 1;
  int32_t num_waiting_snapshot_ = 0;  // scheduler waiting count after the last step

  std::atomic<int32_t> stat_running_{0};
  std::atomic<int32_t> stat_free_blocks_{0};
  std::atomic<int64_t> stat_preemptions_{0};
  std::atomic<int64_t> stat_prompt_tokens_{0};
  std::atomic<int64_t> stat_generation_tokens_{0};
  std::atomic<int64_t> stat_steps_{0};
  std::atomic<int64_t> stat_prefix_queries_{0};
  std::atomic<int64_t> stat_prefix_hits_{0};

  std::thread thread_;
};

}  // namespace gossamer::engine
