// Engine: owns the model, the KV block allocators and the scheduler, and runs the step loop on its own
// thread. A step is three verbs: schedule() picks the sequences and their new tokens (engine/scheduler.h),
// the Runner builds the batch and runs the model (engine/runner.h), postprocess() turns the drawn tokens
// into output events.
//
// The loop never waits on itself. One iteration is
//   schedule(N+1) → wait for step N's tokens, collect(N), admit late arrivals → launch(N+1) → postprocess(N)
// so on a backend whose launch_step returns before the device is done (cuda, device-sampled steps: the
// token ids come back through pinned memory and an event), schedule(N+1) runs while the device computes
// step N, and postprocess(N) (output events, stats, the step observer) and schedule(N+2) run while it
// computes step N+1. schedule(N+1) sees the state before N's tokens are known: a sequence that step N
// samples ends with a placeholder (kPendingToken) and is scheduled its next decode token as usual; collect(N)
// writes the drawn ids over the placeholders and applies stop tokens, length limits and constraints, and
// the sequences that finished leave step N+1 before it is launched, so no token past a stop is computed,
// let alone emitted. A sequence whose token from step N is its last by length is not scheduled again.
// After collect(N) the requests submitted meanwhile, and the waiting ones that the blocks and slots freed by
// finished requests now fit, still join step N+1 (Scheduler::admit_waiting), so admission is not a step late.
// Not overlapped in that order: between step N's end on the device and step N+1's launch the host collects
// N's tokens, admits late arrivals and builds N+1's batch, and the device idles.
//
// Async scheduling (EngineConfig::async_scheduling, vLLM's name; a model that feeds_pending_tokens_on_device(),
// the cuda backend): where Runner::can_launch_ahead(N+1), the iteration is
//   schedule(N+1) → launch(N+1), its pending tokens read on the device from N's → wait + collect(N) → postprocess(N)
// so the device has step N+1 queued when it ends step N. What changes:
//  - a sequence whose step-N token is a stop token (or that is cancelled meanwhile) has one token of N+1
//    computed as well (one whose step-N token is its last by length was not scheduled again): collect(N+1) drops it
//    (never emitted); its KV position was written into blocks that finish() freed meanwhile, which only steps launched
//    after N+1 reuse (the model runs them in order), and that position holds the true token's K/V, so a prefix-cache
//    block is never wrong;
//  - a request is destroyed only once every step launched before it finished is collected;
//  - late arrivals, and the blocks that N's finished requests free, join step N+2 (N+1 is already launched);
//  - steps with a sampled constrained row, or a penalized row whose token is pending, and any step behind
//    one sampled on the host, keep the order above (the grammar, the counts, the logits need N's token).
// Greedy outputs are the same either way, and the same as running each request alone.
// On a backend that runs steps synchronously (the default launch_step: the cpu, sharded and fake models)
// nothing overlaps: the step runs inside the wait, and its events still go out right after it.
//
// Contract:
//  - submit() and cancel() are thread-safe. submit() validates the request and throws QueueFullError
//    when max_queued_requests are already waiting, ContextLengthError when prompt + max_tokens exceed
//    max_model_len, gossamer::Error for other bad input. It returns the request id at once.
//  - Each request's on_output callback is called on the engine thread, in order: zero or more events
//    with new tokens, then exactly one event with finished = true (also after cancel() or shutdown()).
//    Callbacks must be quick (the server only queues them for its HTTP threads: server/output_queue.h);
//    they may call cancel() but nothing else of the engine.
//  - The engine knows no chat format: stop tokens are the request's SamplingParams::stop_token_ids.
//  - cancel() frees the request's KV blocks before the next step is launched; a token of a step in flight
//    for it is dropped. Unknown or finished ids are ignored.
//  - A failed step aborts its requests and the ones already scheduled behind it.
//  - The destructor (or shutdown()) aborts every request (finish_reason kAbort) and joins the thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/error.h"
#include "engine/block_allocator.h"
#include "engine/engine_config.h"
#include "engine/request.h"
#include "engine/runner.h"
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

// Where the engine thread's time went since it started, in seconds: idle (nothing to do), schedule
// (schedule() and late admission), wait (blocked on the device for the step in flight), collect (applying
// that step's tokens: stops, lengths, constraints), launch (building and launching the next step on the
// host, token masks included) and postprocess (output events to the server, stats). wait is the device-bound
// share; the rest is the host's, and while wait is ~0 the host is the bottleneck.
struct EngineLoopSeconds {
  double idle = 0.0, schedule = 0.0, wait = 0.0, collect = 0.0, launch = 0.0, postprocess = 0.0;
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
  // Async scheduling: steps launched while the step before them was still in flight (Runner::can_launch_ahead).
  int64_t num_steps_launched_ahead_total = 0;
  int64_t num_prefix_cache_queries_total = 0;  // tokens looked up in the prefix cache at admission
  int64_t num_prefix_cache_hits_total = 0;     // of those, tokens found cached
  // Speculative decoding (speculative.h; vLLM's spec_decode counters): drafted decode rows, their draft
  // tokens, and the draft tokens the model confirmed.
  int64_t num_spec_drafts_total = 0;
  int64_t num_spec_draft_tokens_total = 0;
  int64_t num_spec_accepted_tokens_total = 0;
  EngineLoopSeconds loop;
  double kv_usage() const { return num_kv_blocks == 0 ? 0.0 : 1.0 - double(num_free_kv_blocks) / num_kv_blocks; }
};

// Reported after every step's postprocess(), on the engine thread.
struct StepInfo {
  int32_t num_sequences = 0;
  int32_t num_tokens = 0;
  int32_t num_prompt_tokens = 0;  // of num_tokens, in prefill chunks; num_tokens − this = the decode rows
  int32_t num_preempted = 0;
  // The loop iteration that finished the step: from schedule() of the step after it to the end of its
  // postprocess() (steps overlap, so these add up to the loop's wall time, not to the steps' latencies).
  double seconds = 0.0;
  // Structured output: the token masks filled in that iteration, for the step it launched (the step after
  // this one; an iteration that collected nothing adds its masks to the next report): the rows whose
  // constraint was asked, and the wall time. Filling them is on the critical path: the device waits between
  // the steps meanwhile.
  int32_t num_constrained_rows = 0;
  double token_mask_seconds = 0.0;
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
  SchedulerOutput schedule();
  // Waits for the oldest step in flight and applies its tokens; the requests that finished leave `next`
  // (null: a step launched ahead, where the step after it is already in flight).
  void collect(SchedulerOutput* next);
  // Destroys the retired requests that no step in flight refers to any more.
  void release_retired();
  // Once a step is collected: the requests submitted meanwhile, and the waiting ones that the blocks and
  // slots of the finished requests now fit, join `next` (else they would wait one step more).
  void admit_late(SchedulerOutput& next, std::vector<std::unique_ptr<Request>>& incoming);
  void launch(SchedulerOutput next);
  // Speculative decoding: gives the eligible decode rows of `next` their drafts (speculative.h), within the
  // step's token budget and the free blocks, before it is launched with no step in flight.
  void propose_drafts(SchedulerOutput& next);
  // Appends a drawn token to the request's output (its oldest placeholder, if any) and finishes the request
  // on a stop token or its length limits, its final event carrying the step's tokens (the kept_before this step
  // kept already, then this one). False once it finished.
  bool keep_token(Request* request, TokenId token, Clock::time_point now, int32_t kept_before);
  // A drafted sequence's 1 + num_draft rows: keeps the tokens up to the first draft the model did not draw
  // (speculative.h), advances its RNG state and its computed positions past the confirmed drafts.
  void keep_speculative(std::span<const SampledRow> rows, Clock::time_point now);
  // Step N's output events, stats and observer (after step N+1 was launched).
  void postprocess(Clock::time_point iteration_start);
  // Aborts a failed step's requests (and `next`'s, scheduled behind it).
  void fail_step(const SchedulerOutput& step, SchedulerOutput* next, const std::exception& error);
  // True when one more output token ends the request by its length limits.
  bool last_by_length(const Request& request, int32_t num_output, int32_t num_tokens) const;
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
  Runner runner_;
  std::unordered_map<RequestId, std::unique_ptr<Request>> requests_;
  // NOTE: a finished request may still be referenced by the steps in flight: it is destroyed only once
  // every step launched before it finished (last_launch, a count of launches) is collected.
  struct RetiredRequest {
    int64_t last_launch = 0;
    std::unique_ptr<Request> request;
  };
  std::vector<RetiredRequest> retired_;
  int64_t num_launched_ = 0;               // steps launched
  int64_t num_collected_ = 0;              // steps collected (or failed)
  std::deque<SchedulerOutput> in_flight_;  // the launched steps, oldest first (runner_'s; two with async scheduling)
  SchedulerOutput collected_;              // the step collected in this iteration, for postprocess()
  // collected_'s requests that got tokens and go on, and how many tokens each got (more than one: drafts).
  std::vector<std::pair<Request*, int32_t>> token_rows_;
  std::vector<TokenId> draft_buffer_;      // propose_drafts' scratch
  int32_t launched_constrained_rows_ = 0;  // launches not reported yet: constrained rows, mask time
  double launched_mask_seconds_ = 0.0;
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
  std::atomic<int64_t> stat_launched_ahead_{0};
  std::atomic<int64_t> stat_prefix_queries_{0};
  std::atomic<int64_t> stat_prefix_hits_{0};
  std::atomic<int64_t> stat_spec_drafts_{0};
  std::atomic<int64_t> stat_spec_draft_tokens_{0};
  std::atomic<int64_t> stat_spec_accepted_{0};
  // EngineLoopSeconds in nanoseconds, in its field order.
  enum LoopPhase { kIdle, kSchedule, kWait, kCollect, kLaunch, kPostprocess, kNumLoopPhases };
  std::atomic<int64_t> stat_loop_ns_[kNumLoopPhases] = {};
  void add_loop_time(LoopPhase phase, Clock::time_point since);  // adds now − since

  std::thread thread_;
};

}  // namespace gossamer::engine
