// The CUDA communicator on one GPU (label `gpu`; skipped visibly without one): world size 1 through
// the same code path (NCCL with one rank + the IPC kernel), the one-shot IPC all-reduce between 2–4
// processes sharing the GPU (CUDA IPC works within a device) checked bitwise against the host's sum,
// eager and graph-captured, and a rank that dies mid-run giving every other rank a clear error (the
// kernel's bounded wait), not a hang. Each rank is a gossamer_comm_gpu_worker process.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gpu_test_util.h"

namespace gossamer::comm {
namespace {

using test::free_port;
using test::have_gpu;
using test::start_logged;
using test::wait_until;

struct RankResult {
  int exit_code = -1;  // -1: killed at the test's deadline (a hang)
  std::string output;
};

// Runs `world` workers (all on GPU 0) with `extra` flags; rank `odd_rank` also gets `odd_flag`. A rank
// still running at the deadline is killed (exit_code −1).
std::vector<RankResult> run_workers(int world, const std::vector<std::string>& extra, int odd_rank = -1,
                                    const std::string& odd_flag = "",
                                    std::chrono::seconds deadline = std::chrono::seconds(120)) {
  ::setenv("NCCL_NVLS_ENABLE", "0", 1);  // NVLink multicast stays off in every child
  const int port = free_port();
  char pattern[] = "/tmp/gossamer-comm-gpu-XXXXXX";
  const std::string dir = ::mkdtemp(pattern);
  std::vector<pid_t> pids;
  for (int rank = 0; rank < world; ++rank) {
    std::vector<std::string> args = {GOSSAMER_COMM_GPU_WORKER, "--rank", std::to_string(rank), "--world",
                                     std::to_string(world),    "--port", std::to_string(port)};
    args.insert(args.end(), extra.begin(), extra.end());
    if (rank == odd_rank) args.push_back(odd_flag);
    const std::string log = dir + "/rank" + std::to_string(rank) + ".log";
    pids.push_back(start_logged(args, log));
  }
  std::vector<RankResult> results(static_cast<size_t>(world));
  const auto until = std::chrono::steady_clock::now() + deadline;
  for (int rank = 0; rank < world; ++rank) {
    const int status = wait_until(pids[static_cast<size_t>(rank)], until);
    results[static_cast<size_t>(rank)].exit_code = status == -1 ? -1 : WIFEXITED(status) ? WEXITSTATUS(status) : 128;
    std::ifstream in(dir + "/rank" + std::to_string(rank) + ".log");
    std::stringstream text;
    text << in.rdbuf();
    results[static_cast<size_t>(rank)].output = text.str();
  }
  std::system(("rm -rf " + dir).c_str());
  return results;
}

TEST(CommGpuTest, WorldOneThroughTheSamePath) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA GPU visible: the comm GPU tests need one";
  const auto results = run_workers(1, {"--nccl"});
  ASSERT_EQ(results[0].exit_code, 0) << results[0].output;
  EXPECT_NE(results[0].output.find("via ipc OK"), std::string::npos) << results[0].output;
  EXPECT_NE(results[0].output.find("via nccl OK"), std::string::npos) << results[0].output;
  EXPECT_NE(results[0].output.find("all_gather OK"), std::string::npos) << results[0].output;
  EXPECT_NE(results[0].output.find("(ipc on)"), std::string::npos) << results[0].output;
}

TEST(CommGpuTest, IpcAllReduceBetweenProcessesOnOneGpuMatchesTheHostSum) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA GPU visible: the comm GPU tests need one";
  for (int world : {2, 3, 4}) {
    const auto results = run_workers(world, {});
    for (int rank = 0; rank < world; ++rank) {
      EXPECT_EQ(results[static_cast<size_t>(rank)].exit_code, 0) << "world " << world << " rank " << rank << ":\n"
                                                                 << results[static_cast<size_t>(rank)].output;
      EXPECT_NE(results[static_cast<size_t>(rank)].output.find("OK 25 checks (ipc on)"), std::string::npos)
          << results[static_cast<size_t>(rank)].output;
    }
  }
}

// A rank that stops responding (buffers still mapped): the others' kernels give up at the timeout and
// every survivor names it.
TEST(CommGpuTest, ARankThatHangsTimesOutOnEveryOtherRankWithItsName) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA GPU visible: the comm GPU tests need one";
  const auto results = run_workers(3, {"--timeout-ms", "3000"}, 2, "--hang-after-setup", std::chrono::seconds(20));
  EXPECT_EQ(results[2].exit_code, -1) << "the hanging rank is killed by the test: " << results[2].output;
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_EQ(results[static_cast<size_t>(rank)].exit_code, 2) << results[static_cast<size_t>(rank)].output;
    // Either the IPC all-reduce's own deadline names the missing rank, or (when the peer died inside the
    // collective) the communicator's stream deadline fires: both are a CommError within the timeout.
    const std::string& output = results[static_cast<size_t>(rank)].output;
    EXPECT_TRUE(output.find("rank 2 did not arrive at the IPC all-reduce within 3000 ms") != std::string::npos ||
                output.find("stream did not finish within 3000 ms") != std::string::npos)
        << output;
    EXPECT_NE(output.find("CommError"), std::string::npos) << output;
  }
}

// A rank whose process exits (its IPC memory goes with it; CUDA leaves reads of it undefined): every
// survivor still ends with a CommError well before the deadline, never a hang.
TEST(CommGpuTest, ARankThatDiesGivesEveryOtherRankAClearErrorNotAHang) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA GPU visible: the comm GPU tests need one";
  const auto start = std::chrono::steady_clock::now();
  const auto results = run_workers(3, {"--timeout-ms", "3000"}, 2, "--die-after-setup", std::chrono::seconds(60));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(60));
  EXPECT_EQ(results[2].exit_code, 3) << results[2].output;
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_EQ(results[static_cast<size_t>(rank)].exit_code, 2) << results[static_cast<size_t>(rank)].output;
    EXPECT_NE(results[static_cast<size_t>(rank)].output.find("CommError"), std::string::npos)
        << results[static_cast<size_t>(rank)].output;
    std::printf("[comm gpu] survivor %d: %s", rank, results[static_cast<size_t>(rank)].output.c_str());
  }
}

}  // namespace
}  // namespace gossamer::comm
