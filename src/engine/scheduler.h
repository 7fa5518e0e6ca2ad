// Scheduler: continuous batching with chunked prefill and preemption by recompute.
//
// Each step gets a budget of max_num_batched_tokens. Running requests are served first, oldest first:
// a decoding request takes 1 token, a prefilling one (or one recomputing after preemption) takes the
// largest chunk the budget allows. When the KV cache has no block for a running request, the newest
// running request is preempted (its blocks freed, its progress dropped, put back at the front of the
// queue). Waiting requests are admitted in arrival order only while blocks are free for their first
// chunk and no preemption happened in this step. A request never fails because the cache is full:
// EngineConfig::validate guarantees one max_model_len sequence fits in the whole cache.
//
// The sliding-window ring (a second allocator): every scheduled sequence also gets sliding-pool blocks
// for its new positions, and at the start of each schedule() every running sequence returns the blocks
// that lie wholly below its window start − kSlidingKeepMargin (model.h). The pool is sized by
// EngineConfig::ring_blocks_needed, so it never runs out (asserted).
//
// Contract: not thread-safe; the engine thread owns it. Requests are owned by the caller and must
// outlive their time in the scheduler (until finish() or remove()).
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "engine/block_allocator.h"
#include "engine/engine_config.h"
#include "engine/request.h"

namespace gossamer::engine {

struct ScheduledSequence {
  Request* request = nullptr;
  int32_t num_new = 0;   // tokens [num_computed, num_computed + num_new) run this step
  bool sample = false;   // this chunk reaches the end of the known tokens: sample the next one
};

struct SchedulerOutput {
  std::vector<ScheduledSequence> sequences;  // in batch order
  std::vector<Request*> preempted;           // preempted during this step
  int32_t num_tokens = 0;
  bool empty() const { return sequences.empty(); }
};

class Scheduler {
 public:
  // `sliding_allocator` is the ring's pool, or null without a ring.
  Scheduler(const EngineConfig& config, BlockAllocator& allocator, BlockAllocator* sliding_allocator = nullptr);

  // Queues a new request (state kWaiting).
  void add(Request* request);
  SchedulerOutput schedule();
  // Removes a running or waiting request, frees its blocks and marks it kFinished with `reason`.
  void finish(Request* request, FinishReason reason);

  int32_t num_waiting() const { return static_cast<int32_t>(waiting_.size()); }
  int32_t num_running() const { return static_cast<int32_t>(running_.size()); }
  bool has_work() const { return !waiting_.empty() || !running_.empty(); }
  int64_t num_preemptions_total() const { return num_preemptions_total_; }

 private:
  int32_t blocks_for(int32_t num_positions) const;
  void preempt(Request* request);
  void release_blocks(Request* request);
  // Ring: returns the sliding blocks this request no longer reads; then grows both tables by `count`.
  void trim_ring(Request* request);
  void grow_tables(Request* request, int32_t count);

  EngineConfig config_;
  BlockAllocator& allocator_;
  BlockAllocator* sliding_allocator_ = nullptr;
  std::deque<Request*> waiting_;
  std::vector<Request*> running_;  // in admission order
  int64_t num_preemptions_total_ = 0;
};

}  // namespace gossamer::engine
