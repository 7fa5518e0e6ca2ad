// ThreadCommunicator: a group of ranks that are threads of one process, exchanging host buffers in
// memory (the cpu backend's simulated tensor/expert-parallel ranks).
//
// Contract: make a ThreadGroup of N ranks, hand communicator(r) to the thread playing rank r; the group
// outlives every call. Supports f32 sum/max. Each collective is a rendezvous: a rank that has not
// arrived within `timeout` (or a rank that called abort) makes the waiting ranks throw CommError naming
// the missing ranks (or the reason). Once aborted, a group stays failed; reset() re-arms it.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

#include "comm/communicator.h"

namespace gossamer::comm {

class ThreadGroup {
 public:
  explicit ThreadGroup(int world_size, std::chrono::milliseconds timeout = std::chrono::seconds(300));
  int world_size() const { return world_size_; }
  Communicator& communicator(int rank);
  // Fails every pending and future collective of the group (thread-safe).
  void abort(const std::string& reason);
  // Re-arms an aborted group (call only while no rank is inside a collective).
  void reset();
  // The bytes the ranks have handed to all_reduce and all_gather so far, summed over ranks (what a test
  // reads to see what a step communicates).
  int64_t bytes_sent() const { return bytes_sent_.load(); }

 private:
  friend class ThreadCommunicator;
  // Blocks until all ranks reached this phase; throws CommError on abort or timeout.
  void arrive_and_wait(int rank, const char* what);

  int world_size_;
  std::chrono::milliseconds timeout_;
  std::mutex mutex_;
  std::condition_variable changed_;
  int64_t generation_ = 0;        // completed rendezvous
  std::vector<int64_t> arrived_;  // per rank: the generation it last arrived at + 1
  int num_arrived_ = 0;
  std::string abort_reason_;        // non-empty: failed
  std::vector<const void*> slots_;  // per rank: the buffer it published for the current collective
  std::atomic<int64_t> bytes_sent_ = 0;
  std::vector<std::unique_ptr<Communicator>> communicators_;
};

}  // namespace gossamer::comm
