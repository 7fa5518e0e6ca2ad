// The stream GEMM's reference (gemm_stream_cpu) composed as launch_moe_stream composes the kernels —
// route → plan (gemm_stream_tile_rows) → gate_up over x rows gathered by row_token → down over h in plan
// order → combine through the plan's pair_row — equals moe_decode_cpu bit for bit: every row is the same
// GEMV reference on the same values, only the row order differs. So the GPU test's reference
// (moe_decode_cpu) and the piece reference describe one computation. FP8 (tile-major) and MXFP4 experts,
// token counts across the 8/16/32-row tiles, experts shared by every token (tiles split past 32 rows) and
// an expert subset.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "core/dtype.h"
#include "kernels/fp8_tiled.h"
#include "kernels/gemm_stream.h"
#include "kernels/moe.h"
#include "kernels/mxfp4_tiled.h"

namespace gossamer::kernels {
namespace {

struct Case {
  int tokens, experts, expert_begin, local;
  bool mxfp4;
  int distinct_logit_rows;  // 0: every token its own logits; d > 0: token t uses row t % d
};

std::vector<uint16_t> random_bf16(size_t n, std::mt19937& rng, float stddev) {
  std::normal_distribution<float> d(0.f, stddev);
  std::vector<uint16_t> v(n);
  for (auto& x : v) x = float_to_bf16(d(rng));
  return v;
}

TEST(GemmStreamReference, ComposesToTheDecodeReference) {
  std::mt19937 rng(51);
  const int H = 192, I = 128;  // multiples of 32: both formats; K of 1.5 stages
  const Case cases[] = {{5, 8, 0, 8, false, 0},   {12, 8, 0, 8, true, 0},   {40, 16, 0, 16, false, 1},
                        {40, 16, 0, 16, true, 3}, {20, 16, 4, 8, false, 0}, {20, 16, 4, 8, true, 0}};
  for (const Case& c : cases) {
    const int T = c.tokens, L = c.local, P = T * kMoeTopK;
    const int64_t g1 = c.mxfp4 ? mxfp4_tiled_group_bytes(2 * I, H) : fp8_tiled_group_bytes(2 * I, H);
    const int64_t g2 = c.mxfp4 ? mxfp4_tiled_group_bytes(H, I) : fp8_tiled_group_bytes(H, I);
    std::vector<uint8_t> w1(size_t(L) * g1), w2(size_t(L) * g2);
    for (auto* w : {&w1, &w2}) {
      for (auto& b : *w) b = static_cast<uint8_t>(rng());
      if (!c.mxfp4) {
        for (auto& b : *w) b = (b & 0x7F) == 0x7F ? static_cast<uint8_t>(b ^ 1) : b;  // no NaN codes
      } else {  // E8M0 bytes of every tile in [112, 118]
        for (size_t t = 0; t < w->size(); t += kMxfp4TileBytes)
          for (int i = 4096; i < kMxfp4TileBytes; ++i) (*w)[t + i] = static_cast<uint8_t>(112 + (*w)[t + i] % 7);
      }
    }
    std::uniform_real_distribution<float> u(0.0002f, 0.0006f);
    std::vector<float> s1(size_t(L) * ((2 * I + 127) / 128) * ((H + 127) / 128)),
        s2(size_t(L) * ((H + 127) / 128) * ((I + 127) / 128));
    for (auto& s : s1) s = u(rng);
    for (auto& s : s2) s = u(rng);
    const auto b1 = random_bf16(size_t(L) * 2 * I, rng, 0.5f), b2 = random_bf16(size_t(L) * H, rng, 0.5f);
    const auto x = random_bf16(size_t(T) * H, rng, 1.0f), res = random_bf16(size_t(T) * H, rng, 1.0f);
    const int rows = c.distinct_logit_rows > 0 ? c.distinct_logit_rows : T;
    const auto base = random_bf16(size_t(rows) * c.experts, rng, 2.0f);
    std::vector<uint16_t> logits(size_t(T) * c.experts);
    for (int t = 0; t < T; ++t)
      std::copy_n(base.begin() + size_t(t % rows) * c.experts, c.experts, logits.begin() + size_t(t) * c.experts);

    MoeParams p;
    p.x = x.data(), p.logits = logits.data(), p.residual = res.data();
    p.w1 = w1.data(), p.w2 = w2.data(), p.b1 = b1.data(), p.b2 = b2.data();
    p.w1_scales = c.mxfp4 ? nullptr : s1.data(), p.w2_scales = c.mxfp4 ? nullptr : s2.data();
    p.weights_tiled = !c.mxfp4, p.weights_mxfp4 = c.mxfp4;
    p.num_tokens = T, p.num_experts = c.experts, p.expert_begin = c.expert_begin, p.num_local_experts = L;
    p.hidden = H, p.inter = I;
    std::vector<uint16_t> want(size_t(T) * H), got(size_t(T) * H);
    p.out = want.data();
    moe_decode_cpu(p);

    // The stream composition on the references.
    std::vector<int32_t> ids(P), pair_row(P), row_token(P), offsets(L + 1), num_tiles(1);
    std::vector<float> weights(P);
    moe_route_cpu({logits.data(), ids.data(), weights.data(), T, c.experts});
    const int tile_rows = gemm_stream_tile_rows(T), max_tiles = moe_max_tiles(T, L, tile_rows);
    std::vector<int32_t> tile_group(max_tiles), tile_m0(max_tiles);
    moe_plan_cpu({ids.data(), T, c.expert_begin, L, tile_rows, offsets.data(), row_token.data(), pair_row.data(),
                  tile_group.data(), tile_m0.data(), num_tiles.data()});
    std::vector<uint16_t> h(size_t(P) * I), y(size_t(P) * H);
    GemmStreamParams g;
    g.w_mxfp4 = c.mxfp4;
    g.grouped = {offsets.data(), tile_group.data(), tile_m0.data(), num_tiles.data(), max_tiles, L};
    g.tile_rows = tile_rows;
    GemmStreamParams up = g, down = g;
    up.x = x.data(), up.ldx = H, up.x_row_index = row_token.data(), up.w = w1.data(), up.w_scales = p.w1_scales;
    up.bias = b1.data(), up.out = h.data(), up.ldc = I, up.N = 2 * I, up.K = H, up.epilogue = GemmEpilogue::kSwiGlu;
    down.x = h.data(), down.ldx = I, down.w = w2.data(), down.w_scales = p.w2_scales, down.bias = b2.data();
    down.out = y.data(), down.ldc = H, down.N = H, down.K = I, down.epilogue = GemmEpilogue::kBias;
    gemm_stream_cpu(up);
    gemm_stream_cpu(down);
    moe_combine_cpu({y.data(), pair_row.data(), weights.data(), res.data(), got.data(), T, H});
    EXPECT_EQ(got, want) << T << " tokens, " << L << " local experts, " << (c.mxfp4 ? "mxfp4" : "fp8");
    if (c.distinct_logit_rows == 1) {
      EXPECT_GT(num_tiles[0], 4) << "shared experts must split into tiles";
    }
  }
}

}  // namespace
}  // namespace gossamer::kernels
