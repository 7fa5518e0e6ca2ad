// PrepPool: bounded queue (refuses when full), every job called once (run or dropped), and stop() returns
// within its timeout even with a job that never ends.
#include "server/prep_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>

namespace gossamer::server {
namespace {

using namespace std::chrono_literals;

TEST(PrepPool, RunsJobsAndRefusesWhenFull) {
  std::mutex mutex;
  std::condition_variable released;
  bool release = false;
  std::atomic<int> ran{0}, dropped{0};
  PrepPool pool(1, 2);
  const auto blocking = [&](bool run) {
    if (!run) {
      ++dropped;
      return;
    }
    std::unique_lock<std::mutex> lock(mutex);
    released.wait(lock, [&] { return release; });
    ++ran;
  };
  ASSERT_TRUE(pool.try_submit(blocking));  // running (or about to)
  std::this_thread::sleep_for(50ms);
  EXPECT_TRUE(pool.try_submit(blocking));   // queued
  EXPECT_TRUE(pool.try_submit(blocking));   // queued
  EXPECT_FALSE(pool.try_submit(blocking));  // the queue holds 2
  {
    std::lock_guard<std::mutex> lock(mutex);
    release = true;
  }
  released.notify_all();
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (ran.load() < 3 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(5ms);
  EXPECT_EQ(ran.load(), 3);
  EXPECT_TRUE(pool.stop(1s));
  EXPECT_FALSE(pool.try_submit(blocking));  // stopped
  EXPECT_EQ(dropped.load(), 0);
}

TEST(PrepPool, StopDropsQueuedJobsAndReturnsDespiteAStuckOne) {
  auto stuck = std::make_shared<std::atomic<bool>>(true);
  std::atomic<int> dropped{0};
  auto pool = std::make_unique<PrepPool>(1, 8);
  ASSERT_TRUE(pool->try_submit([stuck](bool) {
    while (stuck->load()) std::this_thread::sleep_for(1ms);
  }));
  std::this_thread::sleep_for(50ms);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(pool->try_submit([&](bool run) { dropped += run ? 0 : 1; }));
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(pool->stop(200ms));  // the stuck worker is left behind, detached
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  EXPECT_EQ(dropped.load(), 3);
  pool.reset();
  stuck->store(false);  // let the detached worker finish
  std::this_thread::sleep_for(20ms);
}

}  // namespace
}  // namespace gossamer::server
