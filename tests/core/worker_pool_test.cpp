// WorkerPool: every index runs exactly once per run, run after run (workers that wake late must not touch
// a finished run), on every thread count; an exception comes back to the caller and the pool stays usable.
#include "core/worker_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

namespace gossamer {
namespace {

TEST(WorkerPool, EveryIndexOnceRunAfterRun) {
  for (const int threads : {1, 2, 5, 16}) {
    WorkerPool pool(threads);
    EXPECT_EQ(pool.num_threads(), threads);
    for (int run = 0; run < 300; ++run) {
      const int64_t count = run % 70;  // 0, 1 (the caller alone), ... more indices than threads
      std::vector<std::atomic<int>> hits(static_cast<size_t>(count));
      pool.run(count, [&](int64_t i) { hits[static_cast<size_t>(i)].fetch_add(1); });
      for (int64_t i = 0; i < count; ++i) ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1) << threads << " " << run;
    }
  }
}

TEST(WorkerPool, ThreadsShareTheIndices) {
  WorkerPool pool(4);
  std::atomic<int> distinct_threads{0};
  std::mutex mutex;
  std::vector<std::thread::id> seen;
  pool.run(64, [&](int64_t) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::lock_guard<std::mutex> lock(mutex);
    if (std::find(seen.begin(), seen.end(), std::this_thread::get_id()) == seen.end()) {
      seen.push_back(std::this_thread::get_id());
      ++distinct_threads;
    }
  });
  EXPECT_GT(distinct_threads.load(), 1);
}

TEST(WorkerPool, AnExceptionReachesTheCallerAndThePoolGoesOn) {
  WorkerPool pool(3);
  std::atomic<int> ran{0};
  EXPECT_THROW(pool.run(20,
                        [&](int64_t i) {
                          ++ran;
                          if (i == 7) throw std::runtime_error("seven");
                        }),
               std::runtime_error);
  EXPECT_EQ(ran.load(), 20) << "the other indices still run";
  int64_t sum = 0;
  std::mutex mutex;
  pool.run(10, [&](int64_t i) {
    std::lock_guard<std::mutex> lock(mutex);
    sum += i;
  });
  EXPECT_EQ(sum, 45);
}

}  // namespace
}  // namespace gossamer
