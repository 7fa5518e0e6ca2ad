// Scheduler: continuous batching with chunked prefill and preemption by recompute.
//
// Decode-first steps (EngineConfig::decode_first, opt-in --decode-first; issue #14 §6, docs/engine-scheduler.md):
//   1. every running request with one token to compute (a decode) gets it, oldest first;
//   2. running partial prefills (and recomputes after preemption), oldest first, then
//   3. waiting requests in arrival order (admit_waiting) share the prompt budget: at most
//      max_prefill_tokens prompt tokens in a step with decodes (the whole max_num_batched_tokens in one
//      without), each request's chunk capped at long_prefill_token_threshold when set. A waiting request
//      whose chunk would leave its prompt unfinished joins only while fewer than max_num_partial_prefills
//      requests are mid-prompt.
// With max_step_ms the prompt budget is not fixed: observe_step() moves it (within [128, max_prefill_tokens])
// so that steps with decodes take about that long by the engine's measured step times.
// The step's total stays within max_num_batched_tokens (auto: max_num_seqs + max_prefill_tokens, so every
// decode always fits). When a decode needs a block and none is free, the newest running request that is
// not in the step yet is preempted (its blocks freed, its progress dropped, put back at the front of the
// queue); a prefill chunk short of blocks preempts only newer requests, else shrinks to the free blocks or
// waits. Admission happens only in a step without preemption, and only when the request's whole remaining
// prompt fits in the free blocks beside a 1% watermark and the blocks the running prefills still need
// (so admission never overcommits prompts). A request never fails because the cache is full:
// EngineConfig::validate guarantees one max_model_len sequence fits in the whole cache.
//
// decode_first = false (the default: it measured more output tok/s and lower TTFT at 256 clients on the
// H200, docs/PERF.md) is the policy before #14 §6: one budget (2048 by default), running
// requests in admission order taking 1 token or the largest chunk left, the newest preempted when blocks run
// out, admission while blocks for the first chunk are free.
//
// The sliding-window ring (a second allocator): every scheduled sequence also gets sliding-pool blocks
// for its new positions, and at the start of each schedule() every running sequence returns the blocks
// that lie wholly below its window start − kSlidingKeepMargin (model.h). The pool is sized by
// EngineConfig::ring_blocks_needed, so it never runs out (asserted).
//
// Prefix caching (when the allocators were built with a cache block size, EngineConfig::enable_prefix_
// caching): a request leaving the queue (new or preempted) first takes every cached full block of its
// known tokens' prefix (by hash chain, block_hash.h), at most up to its last token (which is always
// computed, to give logits). With the ring it also needs the sliding-pool blocks of the window before
// that point; the hit is shortened until they are all cached ("where the window allows"). Blocks are
// offered to the cache as soon as a step is scheduled to fill them, so a request admitted later in the
// same step, or in any later step, shares a prefix still being computed.
// NOTE: that is safe because a forward step writes the new K/V of every sequence of a layer before any
// of that layer's attention reads (model.h), and a block registered this step is never freed before the
// step runs: preemption victims are requests not yet grown in this step. When a step fails the engine
// calls reset_prefix_cache(), since registered blocks may then hold garbage.
//
// Overlapped steps (engine.h): schedule() may run while the previous step is in flight. A request that step
// samples ends with a pending token (Request::num_pending), which is scheduled as its next decode token
// like any other (the engine fills the id in before the step is launched), but its block is offered to the
// prefix cache only once the token is known; a running request with nothing to compute (its last token is
// in flight) is skipped. Blocks freed while a step is in flight may still be written by it; they are
// reused only by steps launched after it, which the model runs after it.
//
// Contract: not thread-safe; the engine thread owns it. Requests are owned by the caller and must
// outlive their time in the scheduler (until finish() or remove()).
#pragma once

#include <cstdint>
#include <deque>
#include <span>
#include <vector>

#include "engine/block_allocator.h"
#include "engine/engine_config.h"
#include "engine/request.h"

namespace gossamer::engine {

struct ScheduledSequence {
  Request* request = nullptr;
  int32_t num_new = 0;   // tokens [num_computed, num_computed + num_new) run this step
  bool sample = false;   // this chunk reaches the end of the known tokens: sample the next one
  bool prefill = false;  // a prompt (or recompute) chunk, not a decode row
  // Speculative decoding (speculative.h; set by the engine before launch): request->draft's tokens run after
  // the num_new known ones, each with a logits row of its own (num_new is then 1).
  int32_t num_draft = 0;
};

struct SchedulerOutput {
  std::vector<ScheduledSequence> sequences;  // in batch order
  std::vector<Request*> preempted;           // preempted during this step
  int32_t num_tokens = 0;
  int32_t num_prompt_tokens = 0;  // of num_tokens, in prefill chunks (the rest: one decode token per row)
  bool empty() const { return sequences.empty(); }
};

class Scheduler {
 public:
  // `sliding_allocator` is the ring's pool, or null without a ring.
  Scheduler(const EngineConfig& config, BlockAllocator& allocator, BlockAllocator* sliding_allocator = nullptr);

  // Queues a new request (state kWaiting).
  void add(Request* request);
  SchedulerOutput schedule();
  // Admits waiting requests into `out` (a schedule() result not yet run) while its token budget, free blocks
  // and max_num_seqs allow, and only if nothing was preempted in it; schedule() ends with this. The engine
  // calls it again once the step in flight is collected, so that requests that arrived and blocks that
  // were freed meanwhile make the step (engine.h).
  void admit_waiting(SchedulerOutput& out);
  // Speculative decoding: free blocks that drafts may take this step without touching the running prefills'
  // reserve (num_reserved_blocks) or the admission watermark, and a best-effort growth of a running request's
  // tables (both pools) to cover num_positions, never preempting: false (nothing taken) when `budget` (free
  // blocks still allowed, decremented) or the ring's free blocks fall short.
  int32_t draft_block_budget() const;
  bool grow_for_draft(Request* request, int32_t num_positions, int32_t& budget);
  // Removes a running or waiting request, frees its blocks and marks it kFinished with `reason`.
  void finish(Request* request, FinishReason reason);

  // max_step_ms: the engine reports every step it ran (its decode rows, prompt tokens and wall time), and
  // the prompt budget of the steps with decodes follows (prefill_tokens()). No-op otherwise.
  void observe_step(int32_t decode_rows, int32_t prompt_tokens, double seconds);
  // The prompt budget of a step with decodes now: max_prefill_tokens, or where max_step_ms has taken it.
  int32_t prefill_tokens() const { return static_cast<int32_t>(prefill_tokens_); }

  int32_t num_waiting() const { return static_cast<int32_t>(waiting_.size()); }
  int32_t num_running() const { return static_cast<int32_t>(running_.size()); }
  bool has_work() const { return !waiting_.empty() || !running_.empty(); }
  int64_t num_preemptions_total() const { return num_preemptions_total_; }
  // vLLM's prefix-cache counters: tokens looked up at admission, and how many of them were cached.
  int64_t num_prefix_cache_queries_total() const { return num_prefix_cache_queries_total_; }
  int64_t num_prefix_cache_hits_total() const { return num_prefix_cache_hits_total_; }
  // Forgets every cached block of both pools (after a failed step).
  void reset_prefix_cache();

 private:
  int32_t blocks_for(int32_t num_positions) const;
  void preempt(Request* request);
  // Decode-first composition (schedule()).
  Request* pick_victim(const Request* current, bool newer_only) const;
  // Schedules `num_new` tokens of a running request, preempting the newest unscheduled ones while blocks
  // are short; then, with `shrink`, takes what the free blocks hold (0: not scheduled), else preempts the
  // request itself (−1). Returns the tokens scheduled.
  int32_t schedule_running(Request* request, int32_t num_new, bool shrink, SchedulerOutput& out);
  void add_to_step(Request* request, int32_t num_new, SchedulerOutput& out);
  int32_t prefill_chunk(const Request& request, int32_t budget) const;
  int32_t prefill_budget(const SchedulerOutput& out) const;
  int32_t num_partial_prefills() const;
  int32_t num_reserved_blocks() const;
  void release_blocks(Request* request);
  // Ring: returns the sliding blocks this request no longer reads; then grows both tables by `count`.
  void trim_ring(Request* request);
  void grow_tables(Request* request, int32_t count);

  // Prefix cache.
  struct PrefixMatch {
    int32_t num_blocks = 0;        // full blocks hit
    std::vector<int32_t> blocks;   // [num_blocks] full-pool ids
    int32_t first_sliding = 0;     // first block index the ring needs
    std::vector<int32_t> sliding;  // [num_blocks - first_sliding] sliding-pool ids
    int32_t num_free = 0;          // hit blocks that are free now (taking them uses free blocks)
  };
  std::span<const int32_t> block_tokens(const Request& request, int32_t block);
  void ensure_hashes(Request& request, int32_t num_blocks);
  int32_t first_sliding_block(int32_t num_positions) const;
  void match_prefix(Request& request, PrefixMatch& match);
  void take_prefix(Request& request, const PrefixMatch& match);
  // Offers the request's full blocks below num_positions to the cache.
  void cache_blocks(Request& request, int32_t num_positions);

  EngineConfig config_;
  BlockAllocator& allocator_;
  BlockAllocator* sliding_allocator_ = nullptr;
  std::deque<Request*> waiting_;
  std::vector<Request*> running_;  // in admission order
  int64_t step_ = 0;               // schedule() calls: marks the requests in the step being composed
  double prefill_tokens_ = 0.0;    // the prompt budget next to decodes (adapted under max_step_ms)
  int64_t num_preemptions_total_ = 0;
  int64_t num_prefix_cache_queries_total_ = 0;
  int64_t num_prefix_cache_hits_total_ = 0;
  std::vector<int32_t> token_buffer_;  // [block_size] one block's tokens
};

}  // namespace gossamer::engine
