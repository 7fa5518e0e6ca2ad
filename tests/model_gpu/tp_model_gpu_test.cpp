// The cuda backend split over two processes sharing one GPU (label `gpu`; skipped visibly without one):
// each rank holds half the attention heads and half of every expert (TP) or half the experts (EP), and
// the partial outputs are summed through the IPC all-reduce. Against the float32 golden of the
// conditioned tiny checkpoint the logits keep the single-GPU bounds (bf16 ≤ 2e-2 relative L2, ≥ 98% same
// argmax; fp8 and mxfp4, the default, ≤ 6e-2, ≥ 95%), prefill and decode (graphs), and both ranks' logits are
// bitwise equal. The embedding is vocab-parallel too: each rank uploads only its half of the rows (checked from its
// log), looks up the tokens of its half and the group sums the rows; the golden tokens fall in both halves.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "../model/golden_test.h"
#include "gpu_test_util.h"
#include "model/dummy_checkpoint.h"
#include "model/sharding.h"
#include "run_binary.h"
#include "tp_penalty_rows.h"

namespace gossamer::model {
namespace {

using test::free_port;
using test::have_gpu;
using test::start_logged;
using test::wait_until;

namespace fs = std::filesystem;

struct TpCase {
  bool expert_parallel;
  std::string weights;
};

// The number after `key ` in a worker's log (its "embedding_rows N weight_bytes B" line), −1 without one.
int64_t logged_value(const std::string& log, const std::string& key) {
  const size_t at = log.find(key + " ");
  return at == std::string::npos ? -1 : std::stoll(log.substr(at + key.size() + 1));
}

// Rows of the embedding each rank of `layout` should hold, checked against the workers' logs.
void expect_vocab_slices(const ParallelLayout& layout, const std::vector<std::string>& logs) {
  const GptOssConfig config = preset_config("tiny");
  for (int32_t rank = 0; rank < layout.tensor_parallel; ++rank) {
    EXPECT_EQ(logged_value(logs[static_cast<size_t>(rank)], "embedding_rows"),
              shard_for(layout, config, rank).vocab.size())
        << "rank " << rank << " of " << layout.describe() << " must upload only its vocabulary rows of the embedding";
  }
}

void PrintTo(const TpCase& c, std::ostream* out) {
  *out << (c.expert_parallel ? "EP2 " : "TP2 ") << c.weights;
}

class TpModelGpuTest : public ::testing::TestWithParam<TpCase> {};

TEST_P(TpModelGpuTest, TwoRanksOnOneGpuKeepTheSingleGpuBounds) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA GPU visible: the tensor-parallel cuda model test needs one";
  ::setenv("NCCL_NVLS_ENABLE", "0", 1);
  const fs::path dir = fs::temp_directory_path() / ("gossamer_tp_gpu." + std::to_string(::getpid()));
  fs::create_directories(dir);
  write_dummy_checkpoint(preset_config("tiny"), 0, (dir / "model").string(), DummyInit::kConditioned);
  const std::string tokens = testing::golden_dir() + "/tiny_conditioned_tokens.json";
  const int port = free_port();
  std::vector<pid_t> pids;
  for (int rank = 0; rank < 2; ++rank) {
    std::vector<std::string> args = {GOSSAMER_TP_MODEL_WORKER,
                                     "--model",
                                     (dir / "model").string(),
                                     "--tokens",
                                     tokens,
                                     "--out",
                                     (dir / ("rank" + std::to_string(rank) + ".npy")).string(),
                                     "--rank",
                                     std::to_string(rank),
                                     "--world",
                                     "2",
                                     "--port",
                                     std::to_string(port),
                                     "--weights",
                                     GetParam().weights,
                                     "--prefix",
                                     "160"};
    if (GetParam().expert_parallel) args.push_back("--expert-parallel");
    const std::string log = (dir / ("rank" + std::to_string(rank) + ".log")).string();
    pids.push_back(start_logged(args, log));
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(300);
  std::vector<std::string> logs;
  for (int rank = 0; rank < 2; ++rank) {
    const int status = wait_until(pids[static_cast<size_t>(rank)], deadline);
    std::ifstream in(dir / ("rank" + std::to_string(rank) + ".log"));
    std::stringstream text;
    text << in.rdbuf();
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "rank " << rank << ":\n" << text.str();
    std::printf("%s", text.str().c_str());
    logs.push_back(text.str());
  }
  expect_vocab_slices(ParallelLayout{2, GetParam().expert_parallel, 1}, logs);
  {  // both ranks' embedding rows are looked up: the tokens fall in both halves of the vocabulary
    const auto sequences = testing::golden_tokens("tiny_conditioned");
    const int64_t half = vocab_shard_rows(ParallelLayout{2, false, 1}, preset_config("tiny"));
    int64_t low = 0, high = 0;
    for (const auto& sequence : sequences) {
      for (const int32_t token : sequence) (token < half ? low : high) += 1;
    }
    ASSERT_GT(low, 0);
    ASSERT_GT(high, 0);
  }
  const NpyArray ref = testing::golden_logits("tiny_conditioned");
  const NpyArray rank0 = read_npy_f32((dir / "rank0.npy").string());
  const NpyArray rank1 = read_npy_f32((dir / "rank1.npy").string());
  ASSERT_EQ(rank0.shape, ref.shape);
  EXPECT_EQ(rank0.data, rank1.data) << "the ranks' logits must be bitwise equal (rank-order sums)";
  const double max_l2 = GetParam().weights == "bf16" ? 2e-2 : 6e-2,
               min_match = GetParam().weights == "bf16" ? 0.98 : 0.95;
  const int64_t length = ref.shape[1], vocab = ref.shape[2];
  for (int64_t s = 0; s < ref.shape[0]; ++s) {
    const auto agreement = testing::compare_rows(rank0.data.data() + s * length * vocab,
                                                 ref.data.data() + s * length * vocab, length, vocab);
    std::printf("[tp gpu] %s %s seq %lld: rel L2 %.3e, argmax match %.4f\n", GetParam().expert_parallel ? "EP2" : "TP2",
                GetParam().weights.c_str(), static_cast<long long>(s), agreement.relative_l2, agreement.argmax_match);
    EXPECT_LE(agreement.relative_l2, max_l2);
    EXPECT_GE(agreement.argmax_match, min_match);
  }
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Layouts, TpModelGpuTest,
                         ::testing::Values(TpCase{false, "bf16"}, TpCase{true, "bf16"}, TpCase{false, "fp8"},
                                           TpCase{true, "fp8"}, TpCase{false, "mxfp4"}, TpCase{true, "mxfp4"}),
                         [](const ::testing::TestParamInfo<TpCase>& info) {
                           return std::string(info.param.expert_parallel ? "EP2_" : "TP2_") + info.param.weights;
                         });

// Sampling on the vocab-parallel slices (kernels/vocab_sampling.h): the same steps run again as sampled
// steps. Greedy tokens equal the argmax (lowest id) of the rank's own gathered logits exactly, both ranks
// draw the same tokens (greedy, temperature/top-k/top-p, and greedy under a token mask of the even ids),
// masked greedy tokens equal the argmax over the even ids exactly, and the TP2 greedy tokens keep TP1's
// argmax bound (TP1: the same worker with --world 1, no communicator, its greedy equal to its logits' argmax).
// Rows with penalties and 5 top logprobs (tests/model_gpu/tp_penalty_rows.h; on the slices at TP2, nothing
// gathered): the greedy token is the argmax of the penalized logits (within f32 rounding of the max: nvcc
// may contract the penalty), the top ids are the logits' first 5 (ties → the lower id) exactly, the
// logprobs z − logsumexp(z) within 1e-4, both ranks give the same bits, and TP2 keeps TP1's argmax bound.
TEST(TpModelGpuSamplingTest, SlicesDrawTheGatheredArgmaxOnEveryRank) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA GPU visible: the tensor-parallel cuda model test needs one";
  ::setenv("NCCL_NVLS_ENABLE", "0", 1);
  const fs::path dir = fs::temp_directory_path() / ("gossamer_tp_sampling." + std::to_string(::getpid()));
  fs::create_directories(dir);
  write_dummy_checkpoint(preset_config("tiny"), 0, (dir / "model").string(), DummyInit::kConditioned);
  const std::string tokens = testing::golden_dir() + "/tiny_conditioned_tokens.json";
  auto run_group = [&](int world) {
    std::vector<std::string> logs;
    const int port = free_port();
    std::vector<pid_t> pids;
    for (int rank = 0; rank < world; ++rank) {
      const std::string name = "w" + std::to_string(world) + "r" + std::to_string(rank);
      const std::vector<std::string> args = {GOSSAMER_TP_MODEL_WORKER,
                                             "--model",
                                             (dir / "model").string(),
                                             "--tokens",
                                             tokens,
                                             "--out",
                                             (dir / (name + ".npy")).string(),
                                             "--tokens-out",
                                             (dir / (name + "_tokens.npy")).string(),
                                             "--logprobs-out",
                                             (dir / (name + "_logprobs.npy")).string(),
                                             "--rank",
                                             std::to_string(rank),
                                             "--world",
                                             std::to_string(world),
                                             "--port",
                                             std::to_string(port),
                                             "--weights",
                                             "bf16",
                                             "--prefix",
                                             "160"};
      pids.push_back(start_logged(args, (dir / (name + ".log")).string()));
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(300);
    for (int rank = 0; rank < world; ++rank) {
      const int status = wait_until(pids[static_cast<size_t>(rank)], deadline);
      std::ifstream in(dir / ("w" + std::to_string(world) + "r" + std::to_string(rank) + ".log"));
      std::stringstream text;
      text << in.rdbuf();
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "world " << world << " rank " << rank << ":\n"
                                                                 << text.str();
      logs.push_back(text.str());
    }
    expect_vocab_slices(ParallelLayout{world, false, 1}, logs);  // TP1: the whole vocabulary
  };
  run_group(1);
  run_group(2);
  ASSERT_FALSE(HasFailure());
  const NpyArray tp1_logits = read_npy_f32((dir / "w1r0.npy").string());
  const NpyArray tp2_logits = read_npy_f32((dir / "w2r0.npy").string());
  const NpyArray tp1 = read_npy_f32((dir / "w1r0_tokens.npy").string());
  const NpyArray rank0 = read_npy_f32((dir / "w2r0_tokens.npy").string());
  const NpyArray rank1 = read_npy_f32((dir / "w2r1_tokens.npy").string());
  ASSERT_EQ(rank0.shape.size(), 3u);
  EXPECT_EQ(rank0.data, rank1.data) << "both ranks must draw the same tokens";
  const int64_t seqs = rank0.shape[1], length = rank0.shape[2], vocab = tp2_logits.shape[2];
  auto argmax = [&](const NpyArray& logits, int64_t row) {
    const float* x = logits.data.data() + row * vocab;
    return static_cast<float>(std::max_element(x, x + vocab) - x);  // the first maximum: the lowest id
  };
  auto even_argmax = [&](const NpyArray& logits, int64_t row) {
    const float* x = logits.data.data() + row * vocab;
    int64_t best = 0;
    for (int64_t t = 2; t < vocab; t += 2) best = x[t] > x[best] ? t : best;
    return static_cast<float>(best);
  };
  int64_t agree = 0;
  for (int64_t row = 0; row < seqs * length; ++row) {
    EXPECT_EQ(rank0.data[static_cast<size_t>(row)], argmax(tp2_logits, row)) << "TP2 greedy, row " << row;
    EXPECT_EQ(tp1.data[static_cast<size_t>(row)], argmax(tp1_logits, row)) << "TP1 greedy, row " << row;
    const size_t masked = static_cast<size_t>(2 * seqs * length + row);
    EXPECT_EQ(rank0.data[masked], even_argmax(tp2_logits, row)) << "TP2 masked greedy, row " << row;
    EXPECT_EQ(tp1.data[masked], even_argmax(tp1_logits, row)) << "TP1 masked greedy, row " << row;
    agree += rank0.data[static_cast<size_t>(row)] == tp1.data[static_cast<size_t>(row)];
  }
  const double match = static_cast<double>(agree) / static_cast<double>(seqs * length);
  std::printf("[tp gpu sampling] TP2 greedy on the slices vs TP1: %.4f of %lld rows\n", match,
              static_cast<long long>(seqs * length));
  EXPECT_GE(match, 0.98);
  // ---- penalized greedy rows with logprobs ----
  const NpyArray tp1_lp = read_npy_f32((dir / "w1r0_logprobs.npy").string());
  const NpyArray rank0_lp = read_npy_f32((dir / "w2r0_logprobs.npy").string());
  const NpyArray rank1_lp = read_npy_f32((dir / "w2r1_logprobs.npy").string());
  constexpr int kTop = gossamer::testing::kTpTopLogprobs, kWidth = 1 + 2 * kTop;
  ASSERT_EQ(rank0_lp.shape, (std::vector<int64_t>{seqs, length, kWidth}));
  EXPECT_EQ(rank0_lp.data, rank1_lp.data) << "both ranks must report the same logprobs";
  auto check_penalized = [&](const NpyArray& logits, const NpyArray& drawn, const NpyArray& lp, int64_t row,
                             const char* group) {
    const float* z = logits.data.data() + row * vocab;
    const gossamer::testing::PenaltyEntries e = gossamer::testing::tp_penalty_entries(z, vocab);
    std::vector<float> x(z, z + vocab);
    for (size_t k = 0; k < e.tokens.size(); ++k) {
      float& v = x[static_cast<size_t>(e.tokens[k])];
      v = kernels::penalized_logit(v, e.counts[k], gossamer::testing::kTpPresence, gossamer::testing::kTpFrequency,
                                   gossamer::testing::kTpRepetition);
    }
    const auto token = static_cast<int64_t>(drawn.data[static_cast<size_t>(3 * seqs * length + row)]);
    const float best = *std::max_element(x.begin(), x.end());
    EXPECT_TRUE(token >= 0 && token < vocab && x[static_cast<size_t>(token)] >= best - 1e-5f * std::abs(best))
        << group << " penalized greedy, row " << row << ": drew " << token;
    double m = -1e300, sum = 0.0;
    for (int64_t t = 0; t < vocab; ++t) m = std::max(m, double{z[t]});
    for (int64_t t = 0; t < vocab; ++t) sum += std::exp(double{z[t]} - m);
    const double log_total = m + std::log(sum);
    const float* got = lp.data.data() + row * kWidth;
    const auto near = [](double a, double b) { return std::abs(a - b) <= 1e-4 * std::max(1.0, std::abs(b)); };
    EXPECT_TRUE(token < 0 || token >= vocab || near(got[0], z[token] - log_total))
        << group << " logprob, row " << row << ": " << got[0] << " vs " << z[token] - log_total;
    std::vector<int32_t> order(static_cast<size_t>(vocab));
    for (int64_t t = 0; t < vocab; ++t) order[static_cast<size_t>(t)] = static_cast<int32_t>(t);
    std::partial_sort(order.begin(), order.begin() + kTop, order.end(),
                      [&](int32_t a, int32_t b) { return kernels::sampling_top_before(z[a], a, z[b], b); });
    for (int j = 0; j < kTop; ++j) {
      EXPECT_EQ(got[1 + j], static_cast<float>(order[static_cast<size_t>(j)]))
          << group << " top " << j << ", row " << row;
      EXPECT_TRUE(near(got[1 + kTop + j], z[order[static_cast<size_t>(j)]] - log_total))
          << group << " top logprob " << j << ", row " << row;
    }
  };
  int64_t penalized_agree = 0;
  for (int64_t row = 0; row < seqs * length; ++row) {
    check_penalized(tp2_logits, rank0, rank0_lp, row, "TP2");
    check_penalized(tp1_logits, tp1, tp1_lp, row, "TP1");
    const size_t at = static_cast<size_t>(3 * seqs * length + row);
    penalized_agree += rank0.data[at] == tp1.data[at];
  }
  const double penalized_match = static_cast<double>(penalized_agree) / static_cast<double>(seqs * length);
  std::printf("[tp gpu sampling] TP2 penalized greedy on the slices vs TP1: %.4f\n", penalized_match);
  EXPECT_GE(penalized_match, 0.98);
  fs::remove_all(dir);
}

// The command line: `gossamer logits --device cuda -tp N` starts one process per GPU and gives TP1's logits
// within the bf16 bound. On one GPU its TP2 layouts run with the ranks colocated there (the hidden
// --test-colocate-gpus: CUDA IPC sums, no NCCL); TP4 and TP8 need that many GPUs (issue #20's machines).
TEST(TpModelGpuCliTest, LogitsWithTensorAndExpertParallelMatchOneGpu) {
  int gpus = 0;
  if (cudaGetDeviceCount(&gpus) != cudaSuccess || gpus < 1) GTEST_SKIP() << "no CUDA GPU: the TP command line not run";
  const std::string placement = gpus < 2 ? " --test-colocate-gpus" : "";
  const fs::path dir = fs::temp_directory_path() / ("gossamer_tp_cli." + std::to_string(::getpid()));
  fs::create_directories(dir);
  write_dummy_checkpoint(preset_config("tiny"), 0, (dir / "model").string(), DummyInit::kConditioned);
  const std::string base = "logits --device cuda --weights bf16 --model " + (dir / "model").string() + " --input " +
                           testing::golden_dir() + "/tiny_conditioned_tokens.json --output ";
  const auto one = gossamer::testing::run_gossamer(base + (dir / "tp1.npy").string());
  ASSERT_EQ(one.status, 0) << one.output;
  const NpyArray ref = read_npy_f32((dir / "tp1.npy").string());
  std::vector<std::string> layouts = {"-tp 2", "-tp 2 --enable-expert-parallel"};
  if (gpus >= 4) layouts.push_back("-tp 4 --enable-expert-parallel");
  if (gpus >= 8) layouts.push_back("-tp 8 --enable-expert-parallel");
  for (const std::string& layout : layouts) {
    const auto ours = gossamer::testing::run_gossamer(base + (dir / "tpn.npy").string() + " " + layout + placement);
    ASSERT_EQ(ours.status, 0) << layout << ":\n" << ours.output;
    const NpyArray logits = read_npy_f32((dir / "tpn.npy").string());
    ASSERT_EQ(logits.shape, ref.shape);
    const int64_t rows = ref.shape[0] * ref.shape[1], vocab = ref.shape[2];
    const auto agreement = testing::compare_rows(logits.data.data(), ref.data.data(), rows, vocab);
    std::printf("[tp gpu cli] %s%s vs TP1 (bf16): rel L2 %.3e, argmax match %.4f\n", layout.c_str(), placement.c_str(),
                agreement.relative_l2, agreement.argmax_match);
    EXPECT_LE(agreement.relative_l2, 2e-2) << layout;
    EXPECT_GE(agreement.argmax_match, 0.98) << layout;
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gossamer::model
