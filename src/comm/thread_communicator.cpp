#include "comm/thread_communicator.h"

#include <algorithm>
#include <cstring>
#include <sstream>

#include "core/error.h"

namespace gossamer::comm {

class ThreadCommunicator final : public Communicator {
 public:
  ThreadCommunicator(ThreadGroup& group, int rank) : group_(group), rank_(rank) {}
  int rank() const override { return rank_; }
  int world_size() const override { return group_.world_size_; }

  void all_reduce(void* data, int64_t count, DType dtype, ReduceOp op, void*) override {
    GOSSAMER_CHECK(dtype == DType::kF32, "ThreadCommunicator::all_reduce supports f32, got ", name_of(dtype));
    group_.bytes_sent_ += count * 4;
    if (group_.world_size_ == 1) return;
    // Phase 1: publish; phase 2: everyone read every input (in rank order); phase 3: write back.
    group_.slots_[static_cast<size_t>(rank_)] = data;
    group_.arrive_and_wait(rank_, "all_reduce");
    scratch_.resize(static_cast<size_t>(count));
    const float* first = static_cast<const float*>(group_.slots_[0]);
    std::copy_n(first, count, scratch_.data());
    for (int r = 1; r < group_.world_size_; ++r) {
      const float* other = static_cast<const float*>(group_.slots_[static_cast<size_t>(r)]);
      if (op == ReduceOp::kSum) {
        for (int64_t i = 0; i < count; ++i) scratch_[static_cast<size_t>(i)] += other[i];
      } else {
        for (int64_t i = 0; i < count; ++i)
          scratch_[static_cast<size_t>(i)] = std::max(scratch_[static_cast<size_t>(i)], other[i]);
      }
    }
    group_.arrive_and_wait(rank_, "all_reduce");
    std::copy_n(scratch_.data(), count, static_cast<float*>(data));
  }

  void all_gather(const void* send, void* recv, int64_t bytes_per_rank, void*) override {
    group_.bytes_sent_ += bytes_per_rank;
    group_.slots_[static_cast<size_t>(rank_)] = send;
    group_.arrive_and_wait(rank_, "all_gather");
    for (int r = 0; r < group_.world_size_; ++r) {
      std::memcpy(static_cast<uint8_t*>(recv) + r * bytes_per_rank, group_.slots_[static_cast<size_t>(r)],
                  static_cast<size_t>(bytes_per_rank));
    }
    group_.arrive_and_wait(rank_, "all_gather");  // nobody reuses its send buffer before all have read it
  }

  void barrier() override { group_.arrive_and_wait(rank_, "barrier"); }
  void abort(const std::string& reason) override { group_.abort("rank " + std::to_string(rank_) + ": " + reason); }

 private:
  ThreadGroup& group_;
  int rank_;
  std::vector<float> scratch_;
};

ThreadGroup::ThreadGroup(int world_size, std::chrono::milliseconds timeout)
    : world_size_(world_size),
      timeout_(timeout),
      arrived_(static_cast<size_t>(world_size), 0),
      slots_(static_cast<size_t>(world_size), nullptr) {
  GOSSAMER_CHECK(world_size >= 1, "a communicator group needs at least one rank, got ", world_size);
  for (int r = 0; r < world_size; ++r) communicators_.push_back(std::make_unique<ThreadCommunicator>(*this, r));
}

Communicator& ThreadGroup::communicator(int rank) {
  GOSSAMER_CHECK(rank >= 0 && rank < world_size_, "rank ", rank, " outside a group of ", world_size_);
  return *communicators_[static_cast<size_t>(rank)];
}

void ThreadGroup::abort(const std::string& reason) {
  {
    std::lock_guard lock(mutex_);
    if (abort_reason_.empty()) abort_reason_ = reason.empty() ? "aborted" : reason;
  }
  changed_.notify_all();
}

void ThreadGroup::reset() {
  std::lock_guard lock(mutex_);
  abort_reason_.clear();
  num_arrived_ = 0;
  std::fill(arrived_.begin(), arrived_.end(), generation_);
}

void ThreadGroup::arrive_and_wait(int rank, const char* what) {
  std::unique_lock lock(mutex_);
  if (!abort_reason_.empty())
    throw CommError(std::string(what) + " on rank " + std::to_string(rank) + ": group failed: " + abort_reason_);
  const int64_t target = generation_ + 1;
  arrived_[static_cast<size_t>(rank)] = target;
  if (++num_arrived_ == world_size_) {
    num_arrived_ = 0;
    generation_ = target;
    lock.unlock();
    changed_.notify_all();
    return;
  }
  const bool done = changed_.wait_for(lock, timeout_, [&] { return generation_ >= target || !abort_reason_.empty(); });
  if (done && generation_ >= target) return;
  if (abort_reason_.empty()) {
    std::ostringstream missing;
    for (int r = 0; r < world_size_; ++r) {
      if (arrived_[static_cast<size_t>(r)] < target) missing << (missing.tellp() > 0 ? ", " : "") << r;
    }
    abort_reason_ = std::string(what) + " timed out after " + std::to_string(timeout_.count()) +
                    " ms waiting for rank(s) " + missing.str();
    lock.unlock();
    changed_.notify_all();
  }
  throw CommError(std::string(what) + " on rank " + std::to_string(rank) + ": group failed: " + abort_reason_);
}

}  // namespace gossamer::comm
