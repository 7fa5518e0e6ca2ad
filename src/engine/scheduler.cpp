#include "engine/scheduler.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "engine/block_hash.h"
#include "model/model.h"

namespace gossamer::engine {

Scheduler::Scheduler(const EngineConfig& config, BlockAllocator& allocator, BlockAllocator* sliding_allocator)
    : config_(config),
      allocator_(allocator),
      sliding_allocator_(config.num_sliding_kv_blocks > 0 ? sliding_allocator : nullptr) {
  config_.resolve_budgets();
  prefill_tokens_ = config_.max_step_ms > 0.0
                        ? std::min(config_.max_prefill_tokens, EngineConfig::kDefaultPrefillTokens)
                        : config_.max_prefill_tokens;
}

void Scheduler::observe_step(int32_t decode_rows, int32_t prompt_tokens, double seconds) {
  if (config_.max_step_ms <= 0.0 || !config_.decode_first || decode_rows == 0) return;
  // A damped multiplicative step towards the budget whose steps take max_step_ms: down whenever a step took
  // longer, up only when the budget was used (an idle queue says nothing about the cost of prompt tokens).
  const double ratio = std::clamp(config_.max_step_ms / std::max(seconds * 1e3, 1e-3), 0.5, 1.25);
  if (ratio >= 1.0 && prompt_tokens * 2 < prefill_tokens_) return;
  const double low = std::min(EngineConfig::kMinAdaptivePrefillTokens, config_.max_prefill_tokens);
  prefill_tokens_ = std::clamp(static_cast<double>(prefill_tokens_) * std::sqrt(ratio), low,
                               static_cast<double>(config_.max_prefill_tokens));
}

void Scheduler::release_blocks(Request* request) {
  allocator_.free_all(request->block_table);
  request->block_table.clear();
  if (sliding_allocator_ != nullptr) {
    sliding_allocator_->free_all(
        std::span(request->sliding_block_table).subspan(static_cast<size_t>(request->sliding_trimmed)));
  }
  request->sliding_block_table.clear();
  request->sliding_trimmed = 0;
  request->num_cached_blocks = 0;
}

int32_t Scheduler::first_sliding_block(int32_t num_positions) const {
  // The next step's first query is at num_positions: it reads keys from num_positions − window + 1 on.
  const int64_t first_read =
      std::max<int64_t>(0, int64_t{num_positions} - config_.sliding_window + 1 - model::kSlidingKeepMargin);
  return static_cast<int32_t>(first_read / config_.block_size);
}

void Scheduler::trim_ring(Request* request) {
  if (sliding_allocator_ == nullptr) return;
  const int32_t keep_from =
      std::min(first_sliding_block(request->num_computed), static_cast<int32_t>(request->sliding_block_table.size()));
  for (int32_t b = request->sliding_trimmed; b < keep_from; ++b)
    sliding_allocator_->free(request->sliding_block_table[static_cast<size_t>(b)]);
  request->sliding_trimmed = std::max(request->sliding_trimmed, keep_from);
}

void Scheduler::grow_tables(Request* request, int32_t count) {
  if (count <= 0) return;
  GOSSAMER_ASSERT(allocator_.allocate_many(count, request->block_table), "allocation failed");
  if (sliding_allocator_ != nullptr) {
    GOSSAMER_ASSERT(sliding_allocator_->allocate_many(count, request->sliding_block_table),
                    "the sliding-window pool ran out (", sliding_allocator_->num_blocks(), " blocks): sizing bug");
  }
}

void Scheduler::add(Request* request) {
  GOSSAMER_ASSERT(request->num_tokens() > 0, "a request needs at least one prompt token");
  request->state = RequestState::kWaiting;
  waiting_.push_back(request);
}

int32_t Scheduler::blocks_for(int32_t num_positions) const {
  return (num_positions + config_.block_size - 1) / config_.block_size;
}

void Scheduler::preempt(Request* request) {
  release_blocks(request);
  request->num_computed = 0;
  request->state = RequestState::kPreempted;
  ++request->num_preemptions;
  ++num_preemptions_total_;
  waiting_.push_front(request);
}

Request* Scheduler::pick_victim(const Request* current, bool newer_only) const {
  // The newest running request that has no tokens in the step being composed (its blocks are not yet
  // registered for it, scheduler.h NOTE), other than `current`; with newer_only one admitted after it.
  for (auto it = running_.rbegin(); it != running_.rend(); ++it) {
    if (*it == current) {
      if (newer_only) break;
      continue;
    }
    if ((*it)->scheduled_step != step_) return *it;
  }
  return nullptr;
}

void Scheduler::add_to_step(Request* request, int32_t num_new, SchedulerOutput& out) {
  const int32_t needed =
      blocks_for(request->num_computed + num_new) - static_cast<int32_t>(request->block_table.size());
  grow_tables(request, needed);
  cache_blocks(*request, request->num_computed + num_new);
  request->scheduled_step = step_;
  request->num_scheduled = num_new;
  const bool prefill = num_new > 1 || request->num_uncomputed() > 1;
  out.sequences.push_back({request, num_new, request->num_computed + num_new == request->num_tokens(), prefill});
  out.num_tokens += num_new;
  if (prefill) out.num_prompt_tokens += num_new;
}

int32_t Scheduler::schedule_running(Request* request, int32_t num_new, bool shrink, SchedulerOutput& out) {
  const auto needed = [&](int32_t count) {
    return blocks_for(request->num_computed + count) - static_cast<int32_t>(request->block_table.size());
  };
  while (needed(num_new) > allocator_.num_free()) {
    // NOTE: without decode_first the running order is the age, so the newest is never in the step yet.
    Request* victim = config_.decode_first ? pick_victim(request, shrink) : running_.back();
    if (victim == nullptr) {
      if (shrink) {  // decode-first prefill: take what the free blocks hold, or wait for a later step
        const int32_t slots = static_cast<int32_t>(request->block_table.size()) * config_.block_size -
                              request->num_computed + allocator_.num_free() * config_.block_size;
        num_new = std::min(num_new, slots);
        if (num_new <= 0) return 0;
        break;
      }
      victim = request;  // nothing else to free: recompute this one later
    }
    running_.erase(std::find(running_.begin(), running_.end(), victim));
    preempt(victim);
    out.preempted.push_back(victim);
    if (victim == request) return -1;
  }
  add_to_step(request, num_new, out);
  return num_new;
}

int32_t Scheduler::prefill_chunk(const Request& request, int32_t budget) const {
  int32_t chunk = std::min(request.num_uncomputed(), budget);
  if (config_.long_prefill_token_threshold > 0) chunk = std::min(chunk, config_.long_prefill_token_threshold);
  return chunk;
}

SchedulerOutput Scheduler::schedule() {
  SchedulerOutput out;
  ++step_;
  for (Request* request : running_) trim_ring(request);
  if (!config_.decode_first) {
    // Before #14 §6: running requests in admission order, a prefill takes what is left of the budget, and
    // blocks come from preempting the newest (which is never scheduled yet: the order is the age).
    const std::vector<Request*> order = running_;
    for (Request* request : order) {
      const int32_t budget = config_.max_num_batched_tokens - out.num_tokens;
      if (budget <= 0) break;
      if (request->state != RequestState::kRunning) continue;  // preempted in this step
      const int32_t num_new = std::min(request->num_uncomputed(), budget);
      if (num_new == 0) continue;  // its last token is sampled by the step in flight (engine.h)
      if (schedule_running(request, num_new, false, out) < 0) break;
    }
    admit_waiting(out);
    return out;
  }
  // 1. Decodes: every running request with one token to compute gets it, oldest first; when blocks run
  //    out the newest request not yet in the step is preempted (a partial prefill before any decode).
  const std::vector<Request*> order = running_;
  for (Request* request : order) {
    if (out.num_tokens >= config_.max_num_batched_tokens) break;
    if (request->state != RequestState::kRunning || request->num_uncomputed() != 1) continue;
    if (schedule_running(request, 1, false, out) < 0) break;
  }
  // 2. Running partial prefills (and recomputes), oldest first, in what is left of the prefill budget.
  //    They never preempt a request that is already in the step; short of blocks they shrink or wait.
  for (Request* request : order) {
    const int32_t budget = prefill_budget(out);
    if (budget <= 0) break;
    if (request->state != RequestState::kRunning || request->num_uncomputed() <= 1) continue;
    schedule_running(request, prefill_chunk(*request, budget), true, out);
  }
  // 3. Waiting requests, in arrival order (admit_waiting).
  admit_waiting(out);
  return out;
}

int32_t Scheduler::prefill_budget(const SchedulerOutput& out) const {
  const int32_t total = config_.max_num_batched_tokens - out.num_tokens;
  // NOTE: the prompt budget protects decode rows' TPOT; a step without any may take the whole budget.
  const bool decodes = out.num_tokens > out.num_prompt_tokens;
  if (!config_.decode_first || !decodes) return total;
  return std::min(total, static_cast<int32_t>(prefill_tokens_) - out.num_prompt_tokens);
}

int32_t Scheduler::num_partial_prefills() const {
  int32_t count = 0;
  for (const Request* request : running_) {
    const int32_t scheduled = request->scheduled_step == step_ ? request->num_scheduled : 0;
    count += request->num_uncomputed() - scheduled > 0 && (scheduled > 0 || request->num_uncomputed() > 1);
  }
  return count;
}

int32_t Scheduler::num_reserved_blocks() const {
  // Blocks the running partial prefills still need to reach the end of their known tokens.
  int64_t reserved = 0;
  for (const Request* request : running_) {
    reserved += std::max(0, blocks_for(request->num_tokens()) - static_cast<int32_t>(request->block_table.size()));
  }
  return static_cast<int32_t>(std::min<int64_t>(reserved, allocator_.num_blocks()));
}

void Scheduler::admit_waiting(SchedulerOutput& out) {
  // Admit waiting requests while blocks and budget last, and only if nothing was preempted in this step.
  if (!out.preempted.empty()) return;
  // NOTE: keep a small reserve of free blocks when admitting next to running requests, so that
  // running decodes do not immediately preempt what was just admitted.
  // (The old policy took no reserve at all in a step that began with nothing running.)
  const int32_t watermark = !config_.decode_first && running_.empty() ? 0 : std::max(1, allocator_.num_blocks() / 100);
  // Decode-first also keeps the blocks that the running prefills still need (their whole known tokens),
  // and admits only a request whose whole prompt fits next to them: admission never overcommits prompts.
  int32_t reserved = config_.decode_first ? num_reserved_blocks() : 0;
  int32_t partial = config_.decode_first ? num_partial_prefills() : 0;
  while (!waiting_.empty() && static_cast<int32_t>(running_.size()) < config_.max_num_seqs) {
    const int32_t budget = prefill_budget(out);
    if (budget <= 0) break;
    Request* request = waiting_.front();
    PrefixMatch match;
    match_prefix(*request, match);
    const int32_t num_hit = match.num_blocks * config_.block_size;
    const int32_t num_new =
        std::min(request->num_tokens() - num_hit, config_.decode_first ? prefill_chunk(*request, budget) : budget);
    const bool is_partial = num_hit + num_new < request->num_tokens();
    if (config_.decode_first && is_partial && config_.max_num_partial_prefills > 0 &&
        partial >= config_.max_num_partial_prefills) {
      break;
    }
    const int32_t needed = blocks_for(num_hit + num_new) - match.num_blocks;
    const int32_t later = config_.decode_first ? blocks_for(request->num_tokens()) - match.num_blocks - needed : 0;
    const int32_t reserve = running_.empty() ? 0 : watermark + reserved + later;
    if (needed + reserve + match.num_free > allocator_.num_free()) break;
    take_prefix(*request, match);
    waiting_.pop_front();
    request->state = RequestState::kRunning;
    running_.push_back(request);
    add_to_step(request, num_new, out);
    reserved += later;
    partial += is_partial;
  }
}

std::span<const int32_t> Scheduler::block_tokens(const Request& request, int32_t block) {
  token_buffer_.resize(static_cast<size_t>(config_.block_size));
  for (int32_t i = 0; i < config_.block_size; ++i)
    token_buffer_[static_cast<size_t>(i)] = request.token_at(block * config_.block_size + i);
  return token_buffer_;
}

void Scheduler::ensure_hashes(Request& request, int32_t num_blocks) {
  for (auto b = static_cast<int32_t>(request.block_hashes.size()); b < num_blocks; ++b) {
    const uint64_t parent = b == 0 ? kRootBlockHash : request.block_hashes[static_cast<size_t>(b - 1)];
    request.block_hashes.push_back(hash_block(parent, block_tokens(request, b)));
  }
}

void Scheduler::match_prefix(Request& request, PrefixMatch& match) {
  GOSSAMER_ASSERT(request.num_computed == 0 && request.block_table.empty(), "prefix match of a request holding blocks");
  GOSSAMER_ASSERT(request.num_pending == 0, "request ", request.id, " leaves the queue with a pending token");
  if (!allocator_.caching()) return;
  // NOTE: at most up to the last known token, which must run to give the next token's logits.
  const int32_t max_blocks = (request.num_tokens() - 1) / config_.block_size;
  ensure_hashes(request, max_blocks);
  for (int32_t b = 0; b < max_blocks; ++b) {
    const auto block = allocator_.lookup(request.block_hashes[static_cast<size_t>(b)], block_tokens(request, b));
    if (!block) break;
    match.blocks.push_back(*block);
  }
  auto hit = static_cast<int32_t>(match.blocks.size());
  if (sliding_allocator_ != nullptr) {
    // The ring holds only the window: a hit of `hit` blocks also needs the sliding blocks
    // [first_sliding_block(hit · block_size), hit). A missing block m rules out every hit in (m, m + window].
    std::vector<int32_t> sliding(static_cast<size_t>(hit), -1);
    std::vector<uint8_t> looked(static_cast<size_t>(hit), 0);
    while (hit > 0) {
      const int32_t first = first_sliding_block(hit * config_.block_size);
      int32_t missing = -1;
      for (int32_t b = hit - 1; b >= first; --b) {
        if (!looked[static_cast<size_t>(b)]) {
          looked[static_cast<size_t>(b)] = 1;
          const auto block =
              sliding_allocator_->lookup(request.block_hashes[static_cast<size_t>(b)], block_tokens(request, b));
          sliding[static_cast<size_t>(b)] = block.value_or(-1);
        }
        if (sliding[static_cast<size_t>(b)] < 0) {
          missing = b;
          break;
        }
      }
      if (missing < 0) {
        match.first_sliding = first;
        match.sliding.assign(sliding.begin() + first, sliding.begin() + hit);
        break;
      }
      hit = missing;
    }
    match.blocks.resize(static_cast<size_t>(hit));
  }
  match.num_blocks = hit;
  for (const int32_t block : match.blocks) match.num_free += allocator_.ref_count(block) == 0;
}

void Scheduler::take_prefix(Request& request, const PrefixMatch& match) {
  if (!allocator_.caching()) return;
  for (const int32_t block : match.blocks) allocator_.acquire(block);
  request.block_table = match.blocks;
  if (sliding_allocator_ != nullptr && match.num_blocks > 0) {
    // Entries below the window are stale placeholders (block 0), never read (model.h).
    request.sliding_block_table.assign(static_cast<size_t>(match.first_sliding), 0);
    for (const int32_t block : match.sliding) {
      sliding_allocator_->acquire(block);
      request.sliding_block_table.push_back(block);
    }
    request.sliding_trimmed = match.first_sliding;
  }
  const int32_t num_hit = match.num_blocks * config_.block_size;
  request.num_computed = num_hit;
  request.num_cached_blocks = match.num_blocks;
  if (request.num_preemptions == 0) request.num_cached_tokens = num_hit;
  num_prefix_cache_queries_total_ += request.num_tokens();
  num_prefix_cache_hits_total_ += num_hit;
}

void Scheduler::cache_blocks(Request& request, int32_t num_positions) {
  if (!allocator_.caching()) return;
  // NOTE: a block holding a pending token (engine.h) is offered once the token is known, next schedule().
  const int32_t num_full = std::min(num_positions, request.num_known_tokens()) / config_.block_size;
  ensure_hashes(request, num_full);
  for (int32_t b = request.num_cached_blocks; b < num_full; ++b) {
    const uint64_t hash = request.block_hashes[static_cast<size_t>(b)];
    const std::span<const int32_t> tokens = block_tokens(request, b);
    allocator_.cache(request.block_table[static_cast<size_t>(b)], hash, tokens);
    if (sliding_allocator_ != nullptr && b >= request.sliding_trimmed) {
      sliding_allocator_->cache(request.sliding_block_table[static_cast<size_t>(b)], hash, tokens);
    }
  }
  request.num_cached_blocks = std::max(request.num_cached_blocks, num_full);
}

int32_t Scheduler::draft_block_budget() const {
  const int32_t watermark = std::max(1, allocator_.num_blocks() / 100);
  return std::max(0, allocator_.num_free() - watermark - num_reserved_blocks());
}

bool Scheduler::grow_for_draft(Request* request, int32_t num_positions, int32_t& budget) {
  GOSSAMER_ASSERT(request->state == RequestState::kRunning, "request ", request->id, " drafts while not running");
  const int32_t needed = blocks_for(num_positions) - static_cast<int32_t>(request->block_table.size());
  if (needed <= 0) return true;
  if (needed > budget || (sliding_allocator_ != nullptr && needed > sliding_allocator_->num_free())) return false;
  grow_tables(request, needed);
  budget -= needed;
  return true;
}

void Scheduler::reset_prefix_cache() {
  allocator_.reset_cache();
  if (sliding_allocator_ != nullptr) sliding_allocator_->reset_cache();
}

void Scheduler::finish(Request* request, FinishReason reason) {
  if (request->state == RequestState::kFinished) return;
  if (request->state == RequestState::kRunning) {
    const auto found = std::find(running_.begin(), running_.end(), request);
    GOSSAMER_ASSERT(found != running_.end(), "running request ", request->id, " not in the running list");
    running_.erase(found);
  } else {
    const auto found = std::find(waiting_.begin(), waiting_.end(), request);
    GOSSAMER_ASSERT(found != waiting_.end(), "waiting request ", request->id, " not in the queue");
    waiting_.erase(found);
  }
  release_blocks(request);
  request->state = RequestState::kFinished;
  request->finish_reason = reason;
}

}  // namespace gossamer::engine
