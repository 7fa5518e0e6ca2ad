// The in-process communicator group: rank-ordered (bitwise identical) reductions, gathers, and failures
// that reach every rank as a clear CommError (a rank that throws, a rank that never arrives).
#include "comm/thread_communicator.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace gossamer::comm {
namespace {

// Runs fn(rank) on one thread per rank; returns each rank's error message ("" = none).
std::vector<std::string> run_group(ThreadGroup& group, const std::function<void(Communicator&)>& fn) {
  std::vector<std::string> errors(static_cast<size_t>(group.world_size()));
  std::vector<std::thread> threads;
  for (int rank = 0; rank < group.world_size(); ++rank) {
    threads.emplace_back([&, rank] {
      try {
        fn(group.communicator(rank));
      } catch (const std::exception& error) {
        errors[static_cast<size_t>(rank)] = error.what();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  return errors;
}

TEST(ThreadCommunicatorTest, AllReduceSumsInRankOrderOnEveryRank) {
  for (int world : {1, 2, 3, 8}) {
    ThreadGroup group(world);
    std::vector<std::vector<float>> results(static_cast<size_t>(world));
    const auto errors = run_group(group, [&](Communicator& comm) {
      for (int round = 0; round < 3; ++round) {  // repeated collectives reuse the rendezvous
        std::vector<float> data(1000);
        for (size_t i = 0; i < data.size(); ++i)
          data[i] = 0.1f * static_cast<float>(comm.rank() + 1) + 1e-3f * static_cast<float>(i + round);
        comm.all_reduce(data.data(), static_cast<int64_t>(data.size()), DType::kF32);
        results[static_cast<size_t>(comm.rank())] = data;
      }
    });
    for (const auto& error : errors) EXPECT_EQ(error, "");
    for (size_t i = 0; i < 1000; ++i) {
      float expected = 0.0f;
      for (int r = 0; r < world; ++r) expected += 0.1f * static_cast<float>(r + 1) + 1e-3f * static_cast<float>(i + 2);
      EXPECT_EQ(results[0][i], expected) << "world " << world << " element " << i;  // rank order: exact
      for (int r = 1; r < world; ++r) EXPECT_EQ(results[static_cast<size_t>(r)][i], results[0][i]);
    }
  }
}

TEST(ThreadCommunicatorTest, MaxAndGather) {
  ThreadGroup group(4);
  std::vector<std::vector<int32_t>> gathered(4);
  std::vector<float> maxima(4);
  const auto errors = run_group(group, [&](Communicator& comm) {
    float value = static_cast<float>((comm.rank() * 7) % 4);
    comm.all_reduce(&value, 1, DType::kF32, ReduceOp::kMax);
    maxima[static_cast<size_t>(comm.rank())] = value;
    const int32_t mine[2] = {comm.rank(), 10 * comm.rank()};
    std::vector<int32_t> all(8);
    comm.all_gather(mine, all.data(), sizeof(mine));
    gathered[static_cast<size_t>(comm.rank())] = all;
    comm.barrier();
  });
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(errors[static_cast<size_t>(r)], "");
    EXPECT_EQ(maxima[static_cast<size_t>(r)], 3.0f);
    EXPECT_EQ(gathered[static_cast<size_t>(r)], (std::vector<int32_t>{0, 0, 1, 10, 2, 20, 3, 30}));
  }
}

TEST(ThreadCommunicatorTest, ARankThatFailsFailsEveryRankWithItsReason) {
  ThreadGroup group(4);
  const auto errors = run_group(group, [&](Communicator& comm) {
    float value = 1.0f;
    comm.all_reduce(&value, 1, DType::kF32);
    if (comm.rank() == 2) {
      comm.abort("out of memory in layer 3");
      throw std::runtime_error("out of memory in layer 3");
    }
    comm.all_reduce(&value, 1, DType::kF32);
  });
  for (int r = 0; r < 4; ++r) {
    if (r == 2) continue;
    EXPECT_NE(errors[static_cast<size_t>(r)].find("rank 2: out of memory in layer 3"), std::string::npos)
        << errors[static_cast<size_t>(r)];
  }
  group.reset();  // re-armed: the next collective works
  const auto again = run_group(group, [&](Communicator& comm) { comm.barrier(); });
  for (const auto& error : again) EXPECT_EQ(error, "");
}

TEST(ThreadCommunicatorTest, ARankThatNeverArrivesTimesOutOnEveryOtherRank) {
  ThreadGroup group(3, std::chrono::milliseconds(200));
  const auto start = std::chrono::steady_clock::now();
  const auto errors = run_group(group, [&](Communicator& comm) {
    if (comm.rank() == 1) return;  // dies before the collective
    float value = 1.0f;
    comm.all_reduce(&value, 1, DType::kF32);
  });
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_NE(errors[0].find("timed out after 200 ms waiting for rank(s) 1"), std::string::npos) << errors[0];
  EXPECT_NE(errors[2].find("timed out after 200 ms waiting for rank(s) 1"), std::string::npos) << errors[2];
}

}  // namespace
}  // namespace gossamer::comm
