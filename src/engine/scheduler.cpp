#include "engine/scheduler.h"

#include <algorithm>

#include "core/error.h"
#include "model/model.h"

namespace gossamer::engine {

Scheduler::Scheduler(const EngineConfig& config, BlockAllocator& allocator, BlockAllocator* sliding_allocator)
    : config_(config), allocator_(allocator), sliding_allocator_(config.num_sliding_kv_blocks > 0 ? sliding_allocator : nullptr) {}

void Scheduler::release_blocks(Request* request) {
  allocator_.free_all(request->block_table);
  request->block_table.clear();
  if (sliding_allocator_ != nullptr) {
    sliding_allocator_->free_all(std::span(request->sliding_block_table).subspan(static_cast<size_t>(request->sliding_trimmed)));
  }
  request->sliding_block_table.clear();
  request->sliding_trimmed = 0;
}

void Scheduler::trim_ring(Request* request) {
  if (sliding_allocator_ == nullptr) return;
  // The next step's first query is at num_computed: it reads keys from num_computed − window + 1 on.
  const int64_t first_read =
      std::max<int64_t>(0, int64_t{request->num_computed} - config_.sliding_window + 1 - model::kSlidingKeepMargin);
  const int32_t keep_from = std::min(static_cast<int32_t>(first_read / config_.block_size),
                                     static_cast<int32_t>(request->sliding_block_table.size()));
  for (int32_t b = request->sliding_trimmed; b < keep_from; ++b) sliding_allocator_->free(request->sliding_block_table[static_cast<size_t>(b)]);
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
    GOSSAMER_ASSERT(num_new > 0, "running request ", request->id, " has nothing to compute");
    const int32_t needed = blocks_for(request->num_computed + num_new) - static_cast<int32_t>(request->block_table.size());
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
    out.sequences.push_back({request, num_new, request->num_computed + num_new == request->num_tokens()});
    budget -= num_new;
    ++index;
  }

  // Admit waiting requests while blocks and budget last.
  if (out.preempted.empty()) {
    // NOTE: keep a small reserve of free blocks when admitting next to running requests, so that
    // running decodes do not immediately preempt what was just admitted.
    const int32_t watermark = running_.empty() ? 0 : std::max(1, allocator_.num_blocks() / 100);
    while (!waiting_.empty() && budget > 0 && static_cast<int32_t>(running_.size()) < config_.max_num_seqs) {
      Request* request = waiting_.front();
      const int32_t num_new = std::min(request->num_uncomputed(), budget);
      const int32_t needed = blocks_for(request->num_computed + num_new);
      const int32_t reserve = running_.empty() ? 0 : watermark;
      if (needed + reserve > allocator_.num_free()) break;
      grow_tables(request, needed);
      waiting_.pop_front();
      request->state = RequestState::kRunning;
      running_.push_back(request);
      out.sequences.push_back({request, num_new, request->num_computed + num_new == request->num_tokens()});
      budget -= num_new;
    }
  }
  out.num_tokens = config_.max_num_batched_tokens - budget;
  return out;
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
