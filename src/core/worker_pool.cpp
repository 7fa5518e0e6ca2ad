#include "core/worker_pool.h"

#include <algorithm>
#include <atomic>
#include <exception>

#include "core/error.h"

namespace gossamer {

struct WorkerPool::Job {
  const std::function<void(int64_t)>* fn = nullptr;  // NOTE: only called for an index below count
  int64_t count = 0;
  std::atomic<int64_t> next{0}, done{0};
  std::mutex failure_mutex;
  std::exception_ptr failure;
};

WorkerPool::WorkerPool(int num_threads) {
  GOSSAMER_CHECK(num_threads >= 1, "WorkerPool: ", num_threads, " threads");
  workers_.reserve(static_cast<size_t>(num_threads - 1));
  for (int i = 1; i < num_threads; ++i) workers_.emplace_back([this] { work(); });
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (std::thread& worker : workers_) worker.join();
}

void WorkerPool::drain(Job& job) {
  for (int64_t i = job.next.fetch_add(1); i < job.count; i = job.next.fetch_add(1)) {
    try {
      (*job.fn)(i);
    } catch (...) {
      std::lock_guard<std::mutex> lock(job.failure_mutex);
      if (!job.failure) job.failure = std::current_exception();
    }
    if (job.done.fetch_add(1) + 1 == job.count) {
      std::lock_guard<std::mutex> lock(mutex_);  // NOTE: so that the waiting caller cannot miss the notify
      finished_.notify_all();
    }
  }
}

void WorkerPool::work() {
  uint64_t seen = 0;
  while (true) {
    std::shared_ptr<Job> job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      job = job_;
    }
    drain(*job);
  }
}

void WorkerPool::run(int64_t count, const std::function<void(int64_t)>& fn) {
  if (count <= 0) return;
  auto job = std::make_shared<Job>();
  job->fn = &fn;
  job->count = count;
  const auto helpers = static_cast<size_t>(std::min<int64_t>(count - 1, static_cast<int64_t>(workers_.size())));
  if (helpers > 0) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      job_ = job;
      ++generation_;
    }
    for (size_t i = 0; i < helpers; ++i) wake_.notify_one();
  }
  drain(*job);
  if (helpers > 0) {
    std::unique_lock<std::mutex> lock(mutex_);
    finished_.wait(lock, [&] { return job->done.load() == count; });
  }
  if (job->failure) std::rethrow_exception(job->failure);
}

}  // namespace gossamer
