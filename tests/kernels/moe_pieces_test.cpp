// The MoE plan and combine kernels (moe.h) against their CPU references (moe_plan_cpu, moe_combine_cpu), and
// the fused decode router (launch_moe_router_decode) against the launches it replaces.
#include <algorithm>
#include <cstring>
#include <numeric>

#include "kernel_test_utils.h"
#include "kernels/gemv_bf16.h"
#include "kernels/moe.h"
#include "kernels/rmsnorm.h"

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
  for (const PlanCase& c : {PlanCase{1, 32, 0, 32, 64}, PlanCase{97, 32, 0, 32, 128}, PlanCase{300, 8, 4, 4, 64},
                            PlanCase{2048, 128, 32, 32, 128}}) {
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
    // Row order inside an expert is unspecified: check the round trip pair → row → token and the group.
    const auto gpu_pair_row = d_pair_row.download(), gpu_row_token = d_row_token.download();
    for (int i = 0; i < pairs; ++i) {
      const int e = ids[i] - c.expert_begin;
      const bool local = e >= 0 && e < c.local;
      ASSERT_EQ(gpu_pair_row[i] >= 0, local) << shape << " pair " << i;
      if (!local) continue;
      EXPECT_GE(gpu_pair_row[i], offsets[e]);
      EXPECT_LT(gpu_pair_row[i], offsets[e + 1]);
      EXPECT_EQ(gpu_row_token[gpu_pair_row[i]], i / kMoeTopK) << shape << " pair " << i;
    }
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

// launch_moe_router_decode gives the bits of RMSNorm (with the residual add) → router GEMV → route on the GPU,
// every output; the logits within the bf16 bound of its CPU reference; the counter left at zero (each case
// launches twice on the same counter).
TEST(MoeRouterDecodeKernel, MatchesTheLaunchesItReplaces) {
  GOSSAMER_REQUIRE_GPU();
  std::mt19937 rng(23);
  struct Case {
    int tokens, experts, expert_begin, local, hidden;
    bool residual, bias;
  };
  for (const Case& c : {Case{1, 32, 0, 32, 2880, true, true}, Case{1, 128, 0, 128, 2880, true, true},
                        Case{8, 32, 0, 32, 2880, true, true}, Case{3, 128, 32, 64, 2880, true, false},
                        Case{5, 32, 8, 8, 576, false, true}, Case{2, 4, 0, 4, 8192, true, true},
                        Case{7, 256, 0, 256, 64, true, true}}) {
    const int T = c.tokens, E = c.experts, H = c.hidden, pairs = T * kMoeTopK;
    const auto x = random_bf16(size_t(T) * H, rng, 1.0f), residual = random_bf16(size_t(T) * H, rng, 4.0f);
    const auto norm_w = random_bf16(H, rng, 0.5f, 1.0f), w = random_bf16(size_t(E) * H, rng, 0.05f),
               bias = random_bf16(E, rng, 0.1f);
    DeviceBuffer<uint16_t> dx(x), dres(residual), dnw(norm_w), dw(w), dbias(bias), dnormed(size_t(T) * H),
        dlogits_chain(size_t(T) * E), dlogits(size_t(T) * E);
    DeviceBuffer<int32_t> dids_chain(pairs), dids(pairs), dpair_row(pairs), darrivals(std::vector<int32_t>{0});
    DeviceBuffer<float> dweights_chain(pairs), dweights(pairs);
    // ---- the launches it replaces (on a copy of the residual: the norm writes it) ----
    DeviceBuffer<uint16_t> dres_chain(residual);
    RmsNormParams norm;
    norm.x = dx.get();
    norm.residual = c.residual ? dres_chain.get() : nullptr;
    norm.weight = dnw.get();
    norm.out = dnormed.get();
    norm.num_tokens = T;
    norm.hidden = H;
    norm.eps = 1e-5f;
    launch_rmsnorm(norm, nullptr);
    GemvBf16Params router;
    router.x = dnormed.get();
    router.ldx = H;
    router.w = dw.get();
    router.bias = c.bias ? dbias.get() : nullptr;
    router.out = dlogits_chain.get();
    router.ldc = E;
    router.M = T;
    router.N = E;
    router.K = H;
    launch_gemv_bf16(router, nullptr);
    launch_moe_route({dlogits_chain.get(), dids_chain.get(), dweights_chain.get(), T, E}, nullptr);
    // ---- fused ----
    MoeRouterDecodeParams p;
    p.x = dx.get();
    p.residual = c.residual ? dres.get() : nullptr;
    p.norm_weight = dnw.get();
    p.eps = 1e-5f;
    p.w = dw.get();
    p.bias = c.bias ? dbias.get() : nullptr;
    p.logits = dlogits.get();
    p.routing = {dids.get(), dweights.get(), dpair_row.get()};
    p.arrivals = darrivals.get();
    p.num_tokens = T;
    p.num_experts = E;
    p.expert_begin = c.expert_begin;
    p.num_local_experts = c.local;
    p.hidden = H;
    const std::string shape = std::to_string(T) + " tokens, E=" + std::to_string(E) + " local [" +
                              std::to_string(c.expert_begin) + "+" + std::to_string(c.local) + "), hidden " +
                              std::to_string(H) + (c.residual ? " +res" : "") + (c.bias ? " +bias" : "");
    for (int launch = 0; launch < 2; ++launch) {
      for (auto* b : {&dids, &dpair_row}) b->poison();
      dlogits.poison();
      dweights.poison();
      launch_moe_router_decode(p, nullptr);
      ASSERT_EQ(dlogits.download(), dlogits_chain.download()) << shape << " launch " << launch;
      ASSERT_EQ(dids.download(), dids_chain.download()) << shape << " launch " << launch;
      const auto weights = dweights.download(), weights_chain = dweights_chain.download();
      ASSERT_EQ(0, std::memcmp(weights.data(), weights_chain.data(), weights.size() * sizeof(float)))
          << shape << " launch " << launch;
      EXPECT_EQ(darrivals.download()[0], 0) << shape << ": the counter is left at zero";
      const auto ids = dids.download(), pair_row = dpair_row.download();
      for (int q = 0; q < pairs; ++q) {
        const int e = ids[q] - c.expert_begin;
        EXPECT_EQ(pair_row[q], e >= 0 && e < c.local ? q : -1) << shape << " pair " << q;
      }
    }
    EXPECT_EQ(dres.download(), residual) << shape << ": the residual is read only";
    // ---- the CPU reference (its own summation order: logits within the bf16 bound) ----
    std::vector<uint16_t> logits(size_t(T) * E);
    std::vector<int32_t> ids(pairs), pair_row(pairs);
    std::vector<float> weights(pairs);
    MoeRouterDecodeParams r = p;
    r.x = x.data();
    r.residual = c.residual ? residual.data() : nullptr;
    r.norm_weight = norm_w.data();
    r.w = w.data();
    r.bias = c.bias ? bias.data() : nullptr;
    r.logits = logits.data();
    r.routing = {ids.data(), weights.data(), pair_row.data()};
    moe_router_decode_cpu(r);
    const double err = rel_error_bf16(dlogits.download(), logits);
    report("moe_router_decode", shape, err, kTolBf16);
    EXPECT_LT(err, kTolBf16) << shape;
  }
}

}  // namespace
}  // namespace gossamer::kernels
