#include "engine/scheduler.h"

#include <algorithm>

#include "core/error.h"
#include "engine/block_hash.h"
#include "model/model.h"

namespace gossamer::engine {

Scheduler::Scheduler(const EngineConfig& config, BlockAllocator& allocator, BlockAllocator* sliding_allocator)
    : config_(config),
      allocator_(allocator),
      sliding_allocator_(config.num_sliding_kv_blocks > 0 ? sliding_allocator : nullptr) {}

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

SchedulerOutput Scheduler::schedule() {
  SchedulerOutput out;
  int32_t budget = config_.max_num_batched_tokens;

  for (Request* request : running_) trim_ring(request);
  // Running requests first, oldest first; preempt from the newest end when blocks run out.
  size_t index = 0;
  while (index < running_.size() && budget > 0) {
    Request* request = running_[index];
    const int32_t num_new = std::min(request->num_uncomputed(), budget);
    if (num_new == 0) {  // its last token is sampled by the step in flight (engine.h)
      ++index;
      continue;
    }
    const int32_t needed =
        blocks_for(request->num_computed + num_new) - static_cast<int32_t>(request->block_table.size());
    bool self_preempted = false;
    while (needed > allocator_.num_free()) {
      Request* victim = running_.back();
      running_.pop_back();
      preempt(victim);
      out.preempted.push_back(victim);
      if (victim == request) {
        self_preempted = true;
        break;
      }
    }
    if (self_preempted) break;
    grow_tables(request, needed);
    cache_blocks(*request, request->num_computed + num_new);
    out.sequences.push_back({request, num_new, request->num_computed + num_new == request->num_tokens()});
    budget -= num_new;
    ++index;
  }

  out.num_tokens = config_.max_num_batched_tokens - budget;
  admit_waiting(out);
  return out;
}

void Scheduler::admit_waiting(SchedulerOutput& out) {
  int32_t budget = config_.max_num_batched_tokens - out.num_tokens;
  // Admit waiting requests while blocks and budget last.
  if (out.preempted.empty()) {
    // NOTE: keep a small reserve of free blocks when admitting next to running requests, so that
    // running decodes do not immediately preempt what was just admitted.
    const int32_t watermark = running_.empty() ? 0 : std::max(1, allocator_.num_blocks() / 100);
    while (!waiting_.empty() && budget > 0 && static_cast<int32_t>(running_.size()) < config_.max_num_seqs) {
      Request* request = waiting_.front();
      PrefixMatch match;
      match_prefix(*request, match);
      const int32_t num_hit = match.num_blocks * config_.block_size;
      const int32_t num_new = std::min(request->num_tokens() - num_hit, budget);
      const int32_t needed = blocks_for(num_hit + num_new) - match.num_blocks;
      const int32_t reserve = running_.empty() ? 0 : watermark;
      if (needed + reserve + match.num_free > allocator_.num_free()) break;
      take_prefix(*request, match);
      grow_tables(request, needed);
      cache_blocks(*request, request->num_computed + num_new);
      waiting_.pop_front();
      request->state = RequestState::kRunning;
      running_.push_back(request);
      out.sequences.push_back({request, num_new, request->num_computed + num_new == request->num_tokens()});
      budget -= num_new;
    }
  }
  out.num_tokens = config_.max_num_batched_tokens - budget;
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
  GOSSAMER_ASSERT(!request.token_pending, "request ", request.id, " leaves the queue with a pending token");
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
