// The kernels' CPU references (library gossamer_kernels_ref) on hand-computed cases: they build and run
// without CUDA, so these run everywhere; tests/kernels compares the CUDA kernels against the same functions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <tuple>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "kernels/attention.h"
#include "kernels/embedding.h"
#include "kernels/fp8_tiled.h"
#include "kernels/moe.h"
#include "kernels/quantize_fp8.h"
#include "kernels/rmsnorm.h"
#include "kernels/rope.h"
#include "kernels/swiglu.h"

namespace gossamer::kernels {
namespace {

// The prefill launch's query tiles: every tile of every sequence, each sequence's last tile first; with
// decode_rows_apart the ≤ kDecodeMaxQ-query sequences (and empty ones) get none.
TEST(AttentionPrefillTiles, ListsEverySequencesTilesLastFirst) {
  const std::vector<int32_t> cu = {0, 1, 131, 133, 133, 389};  // lengths 1, 130, 2, 0, 256
  std::vector<int32_t> out(cu.back() / 64 + 5, -7);
  const auto entry = [](int seq, int tile) { return (seq << 16) | tile; };
  ASSERT_EQ(attention_prefill_tiles(cu.data(), 5, 64, false, out.data()), 1 + 3 + 1 + 4);
  EXPECT_EQ(std::vector<int32_t>(out.begin(), out.begin() + 9),
            (std::vector<int32_t>{entry(0, 0), entry(1, 2), entry(1, 1), entry(1, 0), entry(2, 0), entry(4, 3),
                                  entry(4, 2), entry(4, 1), entry(4, 0)}));
  EXPECT_EQ(out[9], -7);  // nothing written past the count
  ASSERT_EQ(attention_prefill_tiles(cu.data(), 5, 128, true, out.data()), 2 + 2);
  EXPECT_EQ(std::vector<int32_t>(out.begin(), out.begin() + 4),
            (std::vector<int32_t>{entry(1, 1), entry(1, 0), entry(4, 1), entry(4, 0)}));
  EXPECT_THROW(attention_prefill_tiles(cu.data(), 5, 32, false, out.data()), Error);
}

TEST(RopeTables, MatchesGptOssOmegas) {
  const std::vector<float> w = rope_inv_freq(RopeScaling{}, kHeadDim);
  ASSERT_EQ(w.size(), 32u);
  EXPECT_FLOAT_EQ(w[0], 1.0f);
  EXPECT_NEAR(w[8], 0.05081327482f, 1e-8);
  EXPECT_NEAR(w[9], 3.170569618e-02f, 3e-8);
  EXPECT_NEAR(w[13], 3.860359317e-03f, 3e-9);
  EXPECT_NEAR(w[17], 1.293187012e-04f, 3e-10);
  EXPECT_NEAR(w[18], 3.830881237e-05f, 1e-11);
  EXPECT_NEAR(w[31], 3.023511428e-07f, 1e-13);
  EXPECT_FLOAT_EQ(rope_concentration(RopeScaling{}), 1.3465735912322998f);
}

TEST(RopeTables, PlainRopeWithoutScaling) {
  RopeScaling plain;
  plain.factor = 1.0;
  const std::vector<float> w = rope_inv_freq(plain, 8);
  ASSERT_EQ(w.size(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(w[i], 1.0f / std::pow(150000.0f, 2.0f * i / 8.0f));
  EXPECT_EQ(rope_concentration(plain), 1.0f);
}

TEST(Swiglu, HonoursLimitAndAlpha) {
  // Below the limit: gate · σ(α · gate) · (up + 1).
  EXPECT_FLOAT_EQ(swiglu_clamped_cpu(1.0f, 0.5f), 1.0f / (1.0f + std::exp(-1.702f)) * 1.5f);
  // Clamped at the default limit 7, and at another limit and alpha when the config says so.
  EXPECT_FLOAT_EQ(swiglu_clamped_cpu(9.0f, 9.0f), swiglu_clamped_cpu(7.0f, 7.0f));
  EXPECT_FLOAT_EQ(swiglu_clamped_cpu(9.0f, -9.0f, 3.0f, 1.0f), 3.0f / (1.0f + std::exp(-3.0f)) * (-2.0f));
  EXPECT_NE(swiglu_clamped_cpu(6.0f, 0.0f, 7.0f, 1.0f), swiglu_clamped_cpu(6.0f, 0.0f));
}

TEST(MoeTopkSoftmax, DescendingWithTiesToLowerIndex) {
  const std::vector<float> logits = {0.5f, 2.0f, 2.0f, -1.0f, 3.0f, 2.0f};
  int32_t ids[4];
  float weights[4];
  moe_topk_softmax_cpu(logits.data(), 6, 4, ids, weights);
  EXPECT_EQ((std::vector<int32_t>(ids, ids + 4)), (std::vector<int32_t>{4, 1, 2, 5}));
  const float z = 1.0f + 3.0f * std::exp(-1.0f);
  EXPECT_FLOAT_EQ(weights[0], 1.0f / z);
  for (int k = 1; k < 4; ++k) EXPECT_FLOAT_EQ(weights[k], std::exp(-1.0f) / z);
}

TEST(MoeRoute, Bf16RowsAgreeWithFloatRule) {
  const std::vector<float> row = {0.25f, -2.0f, 1.5f, 1.5f, 4.0f, 0.0f, -0.5f, 3.0f};
  std::vector<uint16_t> logits;
  for (int t = 0; t < 2; ++t)
    for (float v : row) logits.push_back(float_to_bf16(v * (t + 1)));
  std::vector<int32_t> ids(8);
  std::vector<float> weights(8);
  moe_route_cpu({logits.data(), ids.data(), weights.data(), 2, 8});
  EXPECT_EQ((std::vector<int32_t>(ids.begin(), ids.begin() + 4)), (std::vector<int32_t>{4, 7, 2, 3}));
  EXPECT_EQ((std::vector<int32_t>(ids.begin() + 4, ids.end())), (std::vector<int32_t>{4, 7, 2, 3}));
  EXPECT_NEAR(weights[0] + weights[1] + weights[2] + weights[3], 1.0f, 1e-6);
}

TEST(MoePlan, GroupsPairsByLocalExpertWithTiles) {
  // 3 tokens × 4 pairs over experts 0..5; this rank owns experts [2, 5), tiles of 2 rows.
  const std::vector<int32_t> ids = {2, 0, 3, 4,  //
                                    3, 2, 5, 1,  //
                                    4, 2, 3, 0};
  std::vector<int32_t> offsets(4), row_token(12, -7), pair_row(12), tile_group(moe_max_tiles(3, 3, 2)),
      tile_m0(tile_group.size()), num_tiles(1);
  moe_plan_cpu({ids.data(), 3, 2, 3, 2, offsets.data(), row_token.data(), pair_row.data(), tile_group.data(),
                tile_m0.data(), num_tiles.data()});
  EXPECT_EQ(offsets, (std::vector<int32_t>{0, 3, 6, 8}));  // expert 2: 3 pairs, 3: 3 pairs, 4: 2 pairs
  ASSERT_EQ(num_tiles[0], 5);                              // 2 + 2 + 1 tiles of 2 rows
  EXPECT_EQ((std::vector<int32_t>(tile_group.begin(), tile_group.begin() + 5)), (std::vector<int32_t>{0, 0, 1, 1, 2}));
  EXPECT_EQ((std::vector<int32_t>(tile_m0.begin(), tile_m0.begin() + 5)), (std::vector<int32_t>{0, 2, 3, 5, 6}));
  EXPECT_EQ(pair_row, (std::vector<int32_t>{0, -1, 3, 6, 4, 1, -1, -1, 7, 2, 5, -1}));
  EXPECT_EQ((std::vector<int32_t>(row_token.begin(), row_token.begin() + 8)),
            (std::vector<int32_t>{0, 1, 2, 0, 1, 2, 0, 2}));
  EXPECT_EQ(row_token[8], -7);  // rows past the local pairs are not written
}

TEST(MoeCombine, WeightedSumOfRoutedRowsPlusResidual) {
  const int hidden = 2;
  // y rows (bf16-exact values); token 0 uses rows 1, 0, −1 (other rank), 2; token 1 uses row 3 only.
  const std::vector<float> y_values = {1.0f, 2.0f, 0.5f, -1.0f, 4.0f, 8.0f, -2.0f, 0.25f};
  std::vector<uint16_t> y;
  for (float v : y_values) y.push_back(float_to_bf16(v));
  const std::vector<int32_t> pair_row = {1, 0, -1, 2, 3, -1, -1, -1};
  const std::vector<float> weights = {0.5f, 0.25f, 0.125f, 0.125f, 1.0f, 0.0f, 0.0f, 0.0f};
  const std::vector<uint16_t> residual = {float_to_bf16(1.0f), float_to_bf16(-1.0f), float_to_bf16(0.0f),
                                          float_to_bf16(2.0f)};
  std::vector<uint16_t> out(4);
  moe_combine_cpu({y.data(), pair_row.data(), weights.data(), residual.data(), out.data(), 2, hidden});
  EXPECT_FLOAT_EQ(bf16_to_float(out[0]), 1.0f + 0.5f * 0.5f + 0.25f * 1.0f + 0.125f * 4.0f);
  EXPECT_FLOAT_EQ(bf16_to_float(out[1]), -1.0f + 0.5f * -1.0f + 0.25f * 2.0f + 0.125f * 8.0f);
  EXPECT_FLOAT_EQ(bf16_to_float(out[2]), -2.0f);
  EXPECT_FLOAT_EQ(bf16_to_float(out[3]), 2.25f);
  moe_combine_cpu({y.data(), pair_row.data(), weights.data(), nullptr, out.data(), 2, hidden});
  EXPECT_FLOAT_EQ(bf16_to_float(out[3]), 0.25f);
}

// The norm summing the MoE pieces itself (RmsNormParams::moe_y) is moe_combine_cpu (no residual) then the
// norm, bit for bit, residual included; rows −1 are skipped (a NaN row behind one is never read).
TEST(RmsNorm, MoePiecesEqualCombineThenNorm) {
  const int tokens = 3, hidden = 16, pairs = tokens * kMoeTopK;
  std::vector<uint16_t> y(size_t(pairs + 1) * hidden), residual(size_t(tokens) * hidden), w(hidden);
  for (size_t i = 0; i < y.size(); ++i) y[i] = float_to_bf16(std::sin(0.37f * static_cast<float>(i)) * 3.0f);
  for (size_t i = 0; i < residual.size(); ++i) residual[i] = float_to_bf16(std::cos(0.11f * static_cast<float>(i)));
  for (int i = 0; i < hidden; ++i) w[i] = float_to_bf16(0.5f + 0.03f * static_cast<float>(i));
  std::vector<int32_t> pair_row(pairs);
  std::iota(pair_row.begin(), pair_row.end(), 1);
  pair_row[5] = -1;
  std::fill_n(y.begin() + 6 * hidden, hidden, uint16_t{0x7FC0});  // row 6: pair 5's, now unused
  std::vector<float> weights(pairs);
  for (int i = 0; i < pairs; ++i) weights[i] = 0.1f + 0.07f * static_cast<float>(i % kMoeTopK);
  std::vector<uint16_t> delta(residual.size()), res_split = residual, out_split(residual.size());
  moe_combine_cpu({y.data(), pair_row.data(), weights.data(), nullptr, delta.data(), tokens, hidden});
  rmsnorm_cpu({delta.data(), res_split.data(), w.data(), out_split.data(), tokens, hidden, 1e-5f});
  std::vector<uint16_t> res_fused = residual, out_fused(residual.size());
  RmsNormParams fused{nullptr, res_fused.data(), w.data(), out_fused.data(), tokens, hidden, 1e-5f};
  fused.moe_y = y.data();
  fused.moe_pair_row = pair_row.data();
  fused.moe_topk_weights = weights.data();
  rmsnorm_cpu(fused);
  EXPECT_EQ(res_fused, res_split);
  EXPECT_EQ(out_fused, out_split);
  for (uint16_t v : out_fused) EXPECT_FALSE(std::isnan(bf16_to_float(v)));
}

TEST(QuantizeFp8, GroupScaleAndActivationRule) {
  std::vector<float> x = {448.0f, -224.0f, 1.0f, 0.0f};
  uint8_t q[4];
  EXPECT_FLOAT_EQ(quantize_fp8_group_cpu(x.data(), 4, q), 1.0f);
  EXPECT_FLOAT_EQ(fp8e4m3_to_float(q[0]), 448.0f);
  EXPECT_FLOAT_EQ(fp8e4m3_to_float(q[1]), -224.0f);
  std::vector<float> tiny(3, 0.0f);
  EXPECT_FLOAT_EQ(quantize_fp8_group_cpu(tiny.data(), 3, q), 1e-4f / 448.0f);  // amax floored at 1e-4
  const std::vector<float> block = {2.0f, -8.0f, 0.0f, 4.0f};
  std::vector<float> seen(4);
  const float scale = quantize_fp8_weight_block_cpu(
      block.data(), 2, 2, 2, [&](int64_t r, int64_t c, uint8_t v) { seen[r * 2 + c] = fp8e4m3_to_float(v); });
  EXPECT_FLOAT_EQ(scale, 8.0f / 448.0f);
  EXPECT_FLOAT_EQ(seen[1], -448.0f);
  EXPECT_FLOAT_EQ(quantize_fp8_weight_block_cpu(tiny.data(), 1, 1, 3, [](int64_t, int64_t, uint8_t) {}), 1.0f);
}

TEST(Fp8Tiled, FromTiledInvertsToTiled) {
  for (const auto& [groups, n, k] : {std::tuple{1, 64, 64}, std::tuple{2, 136, 272}, std::tuple{3, 5, 80}}) {
    std::vector<uint8_t> w(static_cast<size_t>(groups) * n * k),
        tiled(static_cast<size_t>(groups) * fp8_tiled_group_bytes(n, k)), back(w.size());
    for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<uint8_t>(i * 131 + 7);
    fp8_to_tiled_cpu(w.data(), tiled.data(), groups, n, k);
    fp8_from_tiled_cpu(tiled.data(), back.data(), groups, n, k);
    EXPECT_EQ(back, w) << groups << "x" << n << "x" << k;
  }
}

// The embedding over a vocab-parallel slice: rows [vocab_begin, vocab_begin + vocab) of a 7-row vocabulary
// split as ⌈7/3⌉ = 3, 3, 1 rows (the last slice short). Row v of the whole table is v+1 in every column;
// every output row is written (poisoned before), other slices' ids, −1, 7 and the int32 extremes give zeros,
// and the three slices' outputs summed are the whole table's lookup.
TEST(EmbeddingSlice, OwnRowsAndZerosElsewhere) {
  const int vocab = 7, hidden = 8, world = 3, shard = 3;
  std::vector<uint16_t> table(vocab * hidden);
  for (int v = 0; v < vocab; ++v) std::fill_n(table.begin() + v * hidden, hidden, float_to_bf16(float(v + 1)));
  const std::vector<int32_t> ids = {
      0, 2, 3, 5, 6, -1, 7, std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max(), 4};
  const int tokens = static_cast<int>(ids.size());
  std::vector<float> sum(ids.size(), 0.0f);
  for (int rank = 0; rank < world; ++rank) {
    const int begin = rank * shard, rows = std::min(vocab, begin + shard) - begin;
    ASSERT_EQ(rows, rank < 2 ? 3 : 1);
    std::vector<uint16_t> out(ids.size() * hidden, 0x7FC1);  // NaN: must be overwritten
    EmbeddingParams p{table.data() + begin * hidden, ids.data(), out.data(), tokens, hidden, rows, begin};
    embedding_cpu(p);
    for (int t = 0; t < tokens; ++t) {
      const bool mine = ids[t] >= begin && ids[t] < begin + rows;
      const float want = mine ? float(ids[t] + 1) : 0.0f;
      for (int h = 0; h < hidden; ++h) {
        ASSERT_EQ(bf16_to_float(out[t * hidden + h]), want) << "rank " << rank << " id " << ids[t];
      }
      sum[t] += bf16_to_float(out[t * hidden]);
    }
  }
  EXPECT_EQ(sum, (std::vector<float>{1, 3, 4, 6, 7, 0, 0, 0, 0, 5}));
  // The unsliced table (vocab_begin 0) is the plain lookup, as the final-rows gather uses it.
  std::vector<uint16_t> whole(ids.size() * hidden, 0x7FC1);
  embedding_cpu(EmbeddingParams{table.data(), ids.data(), whole.data(), tokens, hidden, vocab});
  for (int t = 0; t < tokens; ++t) {
    EXPECT_EQ(bf16_to_float(whole[t * hidden + 3]), ids[t] >= 0 && ids[t] < vocab ? float(ids[t] + 1) : 0.0f);
  }
}

TEST(RmsNormF32, NormalisesEachRow) {
  const std::vector<float> x = {3.0f, 4.0f, 1.0f, 1.0f}, w = {1.0f, 2.0f};
  std::vector<float> y(4);
  rmsnorm_f32_cpu(x.data(), 2, 2, w.data(), 0.0f, y.data());
  const float inv = 1.0f / std::sqrt(12.5f);
  EXPECT_FLOAT_EQ(y[0], 3.0f * inv);
  EXPECT_FLOAT_EQ(y[1], 8.0f * inv);
  EXPECT_FLOAT_EQ(y[2], 1.0f);
  EXPECT_FLOAT_EQ(y[3], 2.0f);
}

}  // namespace
}  // namespace gossamer::kernels
