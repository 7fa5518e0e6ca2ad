// WorkerPool: persistent threads for short parallel loops that run over and over (a step's token masks),
// where parallel_for's thread start-up per call would cost more than the work.
//
// run(count, fn) calls fn(i) once for every i in [0, count) and returns when all calls have finished; the
// caller works too, and each thread takes the next index as it gets free (so one slow index does not hold
// up a fixed share of the others). At most count - 1 workers are woken. The first exception thrown by fn is
// rethrown (the other indices still run).
//
// Contract: num_threads >= 1 threads in all (the caller and num_threads - 1 workers); run() is called by one
// thread at a time and not from inside fn. Idle workers sleep on a condition variable. The destructor joins
// the workers.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace gossamer {

class WorkerPool {
 public:
  explicit WorkerPool(int num_threads);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  int num_threads() const { return static_cast<int>(workers_.size()) + 1; }
  void run(int64_t count, const std::function<void(int64_t index)>& fn);

 private:
  struct Job;
  void work();
  void drain(Job& job);

  std::mutex mutex_;
  std::condition_variable wake_, finished_;
  std::shared_ptr<Job> job_;  // the latest run's (a late worker finds its indices all taken)
  uint64_t generation_ = 0;
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace gossamer
