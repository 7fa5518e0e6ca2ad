// PrepPool: a bounded pool of worker threads for request preparation (parsing the body, rendering Harmony,
// tokenizing) so that no request's CPU work runs on an HTTP I/O thread (issue #11 §1, #17 §5).
//
// Contract: try_submit() never blocks; it refuses (returns false) when max_queued jobs already wait or the
// pool is stopping. Each accepted job is called exactly once: job(true) on a worker, or job(false) when
// stop() drops it before it started (the job then answers its client itself). stop() returns within its
// timeout: workers still busy then are detached (they hold the pool's state, so they finish safely and the
// process may exit under them). Thread-safe.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

namespace gossamer::server {

class PrepPool {
 public:
  using Job = std::function<void(bool run)>;

  PrepPool(int num_threads, size_t max_queued);
  ~PrepPool();
  PrepPool(const PrepPool&) = delete;
  PrepPool& operator=(const PrepPool&) = delete;

  bool try_submit(Job job);
  // Drops the queued jobs (job(false)), waits up to `timeout` for running ones; false if some still run.
  bool stop(std::chrono::duration<double> timeout);

 private:
  struct State;
  static void worker_loop(const std::shared_ptr<State>& state);
  std::shared_ptr<State> state_;
  std::vector<std::thread> threads_;
};

}  // namespace gossamer::server
