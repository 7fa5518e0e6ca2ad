// The MoE plan and combine kernels (moe.h) against their CPU references (moe_plan_cpu, moe_combine_cpu).
#include <algorithm>
#include <numeric>

#include "kernel_test_utils.h"
#include "kernels/moe.h"

namespace gossamer::kernels {
namespace {

using namespace test;

struct PlanCase {
  int tokens, experts, expert_begin, local, tile_rows;
};

// Random routing with distinct experts per token (as moe_route produces).
std::vector<int32_t> random_topk(int tokens, int experts, std::mt19937& rng) {
  std::vector<int32_t> ids(size_t(tokens) * kMoeTopK), order(experts);
  for (int t = 0; t < tokens; ++t) {
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    std::copy_n(order.begin(), kMoeTopK, ids.begin() + size_t(t) * kMoeTopK);
  }
  return ids;
}

TEST(MoePlanKernel, MatchesReference) {
  GOSSAMER_REQUIRE_GPU();
  std::mt19937 rng(21);
  // One token; chunks of one walk per warp and ragged ones; another rank's experts; 128 and 256 experts (warp 0's scan
  // over several groups of 32); 32,768 tokens (a warp walks 128 times).
  for (const PlanCase& c : {PlanCase{1, 32, 0, 32, 64}, PlanCase{97, 32, 0, 32, 128}, PlanCase{300, 8, 4, 4, 64},
                            PlanCase{2048, 128, 32, 32, 128}, PlanCase{8192, 32, 0, 32, 128},
                            PlanCase{5000, 256, 0, 256, 16}, PlanCase{32768, 128, 0, 128, 128}}) {
    const int pairs = c.tokens * kMoeTopK, max_tiles = moe_max_tiles(c.tokens, c.local, c.tile_rows);
    const auto ids = random_topk(c.tokens, c.experts, rng);
    DeviceBuffer<int32_t> d_ids(ids), d_offsets(c.local + 1), d_row_token(pairs), d_pair_row(pairs),
        d_tile_group(max_tiles), d_tile_m0(max_tiles), d_num_tiles(1);
    for (auto* b : {&d_offsets, &d_row_token, &d_pair_row, &d_tile_group, &d_tile_m0, &d_num_tiles}) b->poison();
    launch_moe_plan({d_ids.get(), c.tokens, c.expert_begin, c.local, c.tile_rows, d_offsets.get(), d_row_token.get(),
                     d_pair_row.get(), d_tile_group.get(), d_tile_m0.get(), d_num_tiles.get()},
                    nullptr);
    std::vector<int32_t> offsets(c.local + 1), row_token(pairs, -1), pair_row(pairs), tile_group(max_tiles, -1),
        tile_m0(max_tiles, -1), num_tiles(1);
    moe_plan_cpu({ids.data(), c.tokens, c.expert_begin, c.local, c.tile_rows, offsets.data(), row_token.data(),
                  pair_row.data(), tile_group.data(), tile_m0.data(), num_tiles.data()});
    const std::string shape = std::to_string(c.tokens) + " tokens, " + std::to_string(c.local) + " local experts";
    ASSERT_EQ(d_offsets.download(), offsets) << shape;
    ASSERT_EQ(d_num_tiles.download(), num_tiles) << shape;
    const auto gpu_group = d_tile_group.download(), gpu_m0 = d_tile_m0.download();
    for (int t = 0; t < num_tiles[0]; ++t) {
      EXPECT_EQ(gpu_group[t], tile_group[t]) << shape << " tile " << t;
      EXPECT_EQ(gpu_m0[t], tile_m0[t]) << shape << " tile " << t;
    }
    // Rows in pair order inside each expert, as the reference's.
    EXPECT_EQ(d_pair_row.download(), pair_row) << shape;
    auto gpu_row_token = d_row_token.download();
    gpu_row_token.resize(offsets[c.local]);  // the rows of the local pairs (the rest are not written)
    row_token.resize(offsets[c.local]);
    EXPECT_EQ(gpu_row_token, row_token) << shape;
  }
}

TEST(MoeCombineKernel, MatchesReference) {
  GOSSAMER_REQUIRE_GPU();
  std::mt19937 rng(22);
  for (const auto& [tokens, hidden, residual] : {std::tuple{1, 2880, true}, {37, 512, false}, {300, 2880, true}}) {
    const int pairs = tokens * kMoeTopK;
    auto y = random_bf16(size_t(pairs) * hidden, rng, 1.0f);
    auto res = random_bf16(size_t(tokens) * hidden, rng, 1.0f);
    std::vector<int32_t> pair_row(pairs);
    std::iota(pair_row.begin(), pair_row.end(), 0);
    std::shuffle(pair_row.begin(), pair_row.end(), rng);
    for (int i = 0; i < pairs; i += 3) pair_row[i] = -1;  // pairs of other ranks
    std::vector<float> weights(pairs);
    std::uniform_real_distribution<float> u(0.0f, 1.0f);
    for (float& w : weights) w = u(rng);
    DeviceBuffer<uint16_t> d_y(y), d_res(res), d_out(size_t(tokens) * hidden);
    DeviceBuffer<int32_t> d_pair_row(pair_row);
    DeviceBuffer<float> d_weights(weights);
    d_out.poison();
    launch_moe_combine(
        {d_y.get(), d_pair_row.get(), d_weights.get(), residual ? d_res.get() : nullptr, d_out.get(), tokens, hidden},
        nullptr);
    std::vector<uint16_t> ref(d_out.size());
    moe_combine_cpu(
        {y.data(), pair_row.data(), weights.data(), residual ? res.data() : nullptr, ref.data(), tokens, hidden});
    const double err = rel_error_bf16(d_out.download(), ref);
    report("moe_combine", std::to_string(tokens) + "x" + std::to_string(hidden), err, kTolBf16);
    EXPECT_LT(err, kTolBf16);
  }
}

}  // namespace
}  // namespace gossamer::kernels
