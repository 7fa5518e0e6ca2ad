#include "server/prep_pool.h"

#include <condition_variable>
#include <deque>
#include <mutex>

#include "core/log.h"

namespace gossamer::server {

struct PrepPool::State {
  std::mutex mutex;
  std::condition_variable wake;     // a job arrived or the pool stops
  std::condition_variable settled;  // a worker finished a job or exited
  std::deque<Job> queue;
  size_t max_queued = 0;
  int num_alive = 0;
  bool stopping = false;
};

PrepPool::PrepPool(int num_threads, size_t max_queued) : state_(std::make_shared<State>()) {
  state_->max_queued = max_queued;
  state_->num_alive = std::max(1, num_threads);
  for (int i = 0; i < std::max(1, num_threads); ++i) threads_.emplace_back([state = state_] { worker_loop(state); });
}

PrepPool::~PrepPool() {
  stop(std::chrono::seconds(5));
}

bool PrepPool::try_submit(Job job) {
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    if (state_->stopping || state_->queue.size() >= state_->max_queued) return false;
    state_->queue.push_back(std::move(job));
  }
  state_->wake.notify_one();
  return true;
}

bool PrepPool::stop(std::chrono::duration<double> timeout) {
  if (threads_.empty()) return true;
  std::deque<Job> dropped;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->stopping = true;
    dropped.swap(state_->queue);
  }
  state_->wake.notify_all();
  for (Job& job : dropped) job(false);
  bool finished = false;
  {
    std::unique_lock<std::mutex> lock(state_->mutex);
    finished = state_->settled.wait_for(lock, timeout, [&] { return state_->num_alive == 0; });
  }
  for (std::thread& thread : threads_) {
    if (finished) {
      thread.join();
    } else {
      thread.detach();
    }
  }
  threads_.clear();
  if (!finished) GOSSAMER_LOG_WARN("request preparation: workers still busy at shutdown were left to finish");
  return finished;
}

void PrepPool::worker_loop(const std::shared_ptr<State>& state) {
  std::unique_lock<std::mutex> lock(state->mutex);
  while (true) {
    state->wake.wait(lock, [&] { return state->stopping || !state->queue.empty(); });
    if (state->queue.empty()) break;  // stopping
    PrepPool::Job job = std::move(state->queue.front());
    state->queue.pop_front();
    lock.unlock();
    try {
      job(true);
    } catch (const std::exception& error) {
      GOSSAMER_LOG_ERROR("request preparation: a job failed: ", error.what());
    }
    lock.lock();
  }
  --state->num_alive;
  state->settled.notify_all();
}

}  // namespace gossamer::server
