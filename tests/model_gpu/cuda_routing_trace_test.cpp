// The cuda backend's routing trace (model/routing_trace.h; `bench decode --routing-stats`) on the trained embedded
// model (label `gpu`, skipped visibly without a GPU): every layer counts T · k pairs, and the experts it counts are
// the cpu backend's for the same prompt (the router reads bf16 activations on the GPU, so a near tie may flip: a few
// pairs of the whole trace may move, no more).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "../model/golden_test.h"
#include "core/mapped_file.h"
#include "model/embedded_default.h"
#include "model/loader.h"
#include "model/sequence_runner.h"

namespace gossamer::model {
namespace {

RoutingCounts traced_prefill(const std::string& device, const std::vector<int32_t>& sequence) {
  ModelOptions options;
  options.weights = "bf16";
  auto model = load_model(embedded_model_dir(), device, options);
  EXPECT_TRUE(model->set_routing_trace(true)) << device;
  prefill_logits(*model, {sequence});
  return model->last_routing();
}

TEST(CudaRoutingTraceTest, CountsTheCpuBackendsExperts) {
  if (resolve_device("auto") != "cuda") GTEST_SKIP() << "no CUDA GPU: the cuda backend's routing trace not tested";
  const auto golden = nlohmann::json::parse(read_text_file(testing::golden_dir() + "/tiny_trained.json"));
  const auto sequence = golden.at("sequences").get<std::vector<std::vector<int32_t>>>().at(0);
  const RoutingCounts cuda = traced_prefill("cuda", sequence), cpu = traced_prefill("cpu", sequence);
  ASSERT_TRUE(cuda.valid());
  ASSERT_TRUE(cpu.valid());
  const auto tokens = static_cast<int32_t>(sequence.size());
  EXPECT_EQ(cuda.tokens, tokens);
  ASSERT_EQ(cuda.experts, cpu.experts);  // (the loop below indexes both with the same expert)
  EXPECT_EQ(cuda.top_k, cpu.top_k);
  ASSERT_EQ(cuda.rows.size(), cpu.rows.size());
  int64_t pairs = 0, moved = 0;
  for (size_t layer = 0; layer < cuda.rows.size(); ++layer) {
    ASSERT_EQ(cuda.rows[layer].size(), static_cast<size_t>(cuda.experts)) << "layer " << layer;
    ASSERT_EQ(cpu.rows[layer].size(), cuda.rows[layer].size()) << "layer " << layer;
    int64_t sum = 0;
    for (int32_t e = 0; e < cuda.experts; ++e) {
      sum += cuda.rows[layer][static_cast<size_t>(e)];
      moved += std::abs(cuda.rows[layer][static_cast<size_t>(e)] - cpu.rows[layer][static_cast<size_t>(e)]);
    }
    EXPECT_EQ(sum, int64_t{tokens} * cuda.top_k) << "layer " << layer;
    pairs += sum;
  }
  moved /= 2;  // a pair that moved leaves one expert and joins another
  std::printf("[cuda routing trace] %lld of %lld (token, expert) pairs counted elsewhere than the cpu backend's\n",
              static_cast<long long>(moved), static_cast<long long>(pairs));
  EXPECT_LE(moved * 50, pairs) << "more than 2% of the pairs routed differently from the cpu backend";
}

}  // namespace
}  // namespace gossamer::model
