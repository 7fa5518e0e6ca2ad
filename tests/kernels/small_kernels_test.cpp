// Tests for RMSNorm, YaRN RoPE (+ paged cache write; the tables are tested in tests/kernels_ref), embedding gather,
// activation quantization and MXFP4 → FP8 conversion against their CPU references; RMSNorm and RoPE at the
// bench's gpt-oss cases (gpt_oss_cases.h) and at edge shapes.
#include <algorithm>
#include <cstring>
#include <limits>
#include <numeric>

#include "gpt_oss_cases.h"
#include "kernel_test_utils.h"
#include "kernels/embedding.h"
#include "kernels/feed_tokens.h"
#include "kernels/kv_cache_fp8.h"
#include "kernels/moe.h"
#include "kernels/mxfp4_convert.h"
#include "kernels/quantize_fp8.h"
#include "kernels/rmsnorm.h"
#include "kernels/rope.h"
#include "kernels/vocab_shards.h"

namespace gossamer::kernels {
namespace {

using namespace test;

TEST(RmsNormKernel, MatchesReference) {
  GOSSAMER_REQUIRE_GPU();
  std::mt19937 rng(1);
  struct Case {
    int tokens, hidden;
    bool fused;
  };
  std::vector<Case> cases;
  for (const int tokens : gpt_oss::kRmsNormTokens) cases.push_back({tokens, gpt_oss::kHidden, true});
  for (const auto& [tokens, hidden] : {std::pair{7, 2880}, {33, 512}, {5, 8}, {300, 2880}}) {
    for (const bool fused : {false, true}) cases.push_back({tokens, hidden, fused});
  }
  for (const auto& [tokens, hidden, fused] : cases) {
    auto x = random_bf16(size_t(tokens) * hidden, rng, 2.0f);
    auto res = random_bf16(size_t(tokens) * hidden, rng, 1.0f);
    auto w = random_bf16(hidden, rng, 0.3f, 1.0f);
    DeviceBuffer<uint16_t> dx(x), dres(res), dw(w), dout(x.size());
    dout.poison();
    RmsNormParams p{dx.get(), fused ? dres.get() : nullptr, dw.get(), dout.get(), tokens, hidden, 1e-5f};
    launch_rmsnorm(p, nullptr);
    std::vector<uint16_t> ref(x.size()), ref_res = res;
    RmsNormParams c{x.data(), fused ? ref_res.data() : nullptr, w.data(), ref.data(), tokens, hidden, 1e-5f};
    rmsnorm_cpu(c);
    const double err = rel_error_bf16(dout.download(), ref);
    report("rmsnorm", std::to_string(tokens) + "x" + std::to_string(hidden) + (fused ? "+res" : ""), err, kTolBf16);
    EXPECT_LT(err, kTolBf16);
    if (fused) {
      EXPECT_EQ(dres.download(), ref_res) << "residual sum must be exact";
    }
  }
}

// The normalised rows quantized for the FP8 GEMM (RmsNormParams::out_q): the bytes and scales launch_quantize_fp8
// writes from the same norm's bf16 output, bit for bit, with out written beside or not at all; partial last groups
// (2,880 = 22.5 groups of 128, 1,000, 8), the MoE pieces' form, a row stride past the row.
TEST(RmsNormKernel, Fp8OutputIsNormThenQuantize) {
  GOSSAMER_REQUIRE_GPU();
  std::mt19937 rng(12);
  for (const auto& [tokens, hidden, with_out] : {std::tuple{7, 2880, true},
                                                 {300, 2880, false},
                                                 {33, 1000, true},
                                                 {5, 8, false},
                                                 {1, 2880, false},
                                                 {4096, 2880, false}}) {
    const int groups = (hidden + 127) / 128;
    const int64_t ldq = (hidden + 15) / 16 * 16 + 16;
    auto x = random_bf16(size_t(tokens) * hidden, rng, 2.0f);
    auto res = random_bf16(size_t(tokens) * hidden, rng, 1.0f);
    auto w = random_bf16(hidden, rng, 0.3f, 1.0f);
    DeviceBuffer<uint16_t> dx(x), dres(res), dres_split(res), dw(w), dout(x.size()), dnormed(x.size());
    DeviceBuffer<uint8_t> dq(size_t(tokens) * ldq), dq_split(size_t(tokens) * ldq);
    DeviceBuffer<float> dscales(size_t(tokens) * groups), dscales_split(size_t(tokens) * groups);
    for (auto* b : {&dq, &dq_split}) b->poison();  // the padding past each row stays as it was
    dout.poison();
    RmsNormParams p{dx.get(), dres.get(), dw.get(), with_out ? dout.get() : nullptr, tokens, hidden, 1e-5f};
    p.out_q = dq.get();
    p.ldq = ldq;
    p.out_scales = dscales.get();
    launch_rmsnorm(p, nullptr);
    launch_rmsnorm({dx.get(), dres_split.get(), dw.get(), dnormed.get(), tokens, hidden, 1e-5f}, nullptr);
    launch_quantize_fp8({dnormed.get(), hidden, dq_split.get(), ldq, dscales_split.get(), tokens, hidden}, nullptr);
    const std::string shape = std::to_string(tokens) + "x" + std::to_string(hidden);
    EXPECT_EQ(dq.download(), dq_split.download()) << shape << ": e4m3 bytes vs norm then quantize";
    EXPECT_EQ(dscales.download(), dscales_split.download()) << shape << ": scales vs norm then quantize";
    EXPECT_EQ(dres.download(), dres_split.download()) << shape << ": residual";
    if (with_out) {
      EXPECT_EQ(dout.download(), dnormed.download()) << shape << ": bf16 out beside";
    }
    // The reference's quantized rows (rmsnorm_cpu with out_q).
    std::vector<uint8_t> ref_q(size_t(tokens) * ldq, 0xFF);
    std::vector<float> ref_scales(size_t(tokens) * groups);
    std::vector<uint16_t> ref_res = res;
    RmsNormParams c{x.data(), ref_res.data(), w.data(), nullptr, tokens, hidden, 1e-5f};
    c.out_q = ref_q.data();
    c.ldq = ldq;
    c.out_scales = ref_scales.data();
    rmsnorm_cpu(c);
    const auto gpu_scales = dscales.download();
    double worst = 0;
    for (size_t i = 0; i < ref_scales.size(); ++i) {
      worst = std::max(worst, std::abs(double(gpu_scales[i]) - ref_scales[i]) / ref_scales[i]);
    }
    EXPECT_LT(worst, 2e-2) << shape << ": scales against the reference";
  }
  // The MoE pieces' form with an FP8 output: the same bytes as its bf16 output quantized.
  const int tokens = 3, hidden = 2880, pairs = tokens * kMoeTopK, groups = 23;
  auto y = random_bf16(size_t(pairs) * hidden, rng, 1.0f);
  std::vector<int32_t> pair_row(pairs);
  std::iota(pair_row.begin(), pair_row.end(), 0);
  std::vector<float> weights(pairs, 0.25f);
  auto res = random_bf16(size_t(tokens) * hidden, rng, 1.0f);
  auto w = random_bf16(hidden, rng, 0.3f, 1.0f);
  DeviceBuffer<uint16_t> dy(y), dw(w), dres(res), dres_split(res), dnormed(res.size());
  DeviceBuffer<int32_t> dpair_row(pair_row);
  DeviceBuffer<float> dweights(weights), dscales(tokens * groups), dscales_split(tokens * groups);
  DeviceBuffer<uint8_t> dq(size_t(tokens) * hidden), dq_split(size_t(tokens) * hidden);
  RmsNormParams fused{nullptr, dres.get(), dw.get(), nullptr, tokens, hidden, 1e-5f};
  fused.moe_y = dy.get();
  fused.moe_pair_row = dpair_row.get();
  fused.moe_topk_weights = dweights.get();
  fused.out_q = dq.get();
  fused.ldq = hidden;
  fused.out_scales = dscales.get();
  launch_rmsnorm(fused, nullptr);
  RmsNormParams split = fused;
  split.residual = dres_split.get();
  split.out = dnormed.get();
  split.out_q = nullptr;
  split.out_scales = nullptr;
  launch_rmsnorm(split, nullptr);
  launch_quantize_fp8({dnormed.get(), hidden, dq_split.get(), hidden, dscales_split.get(), tokens, hidden}, nullptr);
  EXPECT_EQ(dq.download(), dq_split.download()) << "MoE pieces: e4m3 bytes";
  EXPECT_EQ(dscales.download(), dscales_split.download()) << "MoE pieces: scales";
}

// The norm after a decode MoE summing the experts' rows itself (moe_y, moe_pair_row, moe_topk_weights in
// place of x): residual and out equal launch_moe_combine (no residual) followed by launch_rmsnorm bit for
// bit, and the CPU reference of the fused op within tolerance (residual too: the host may not fuse the
// multiply-adds of the sum).
// Pair rows shuffled, some −1 (other ranks' pairs), spare rows of y poisoned.
TEST(RmsNormKernel, SumsMoePieces) {
  GOSSAMER_REQUIRE_GPU();
  std::mt19937 rng(11);
  for (const auto& [tokens, hidden] : {std::pair{1, 2880}, {2, 2880}, {5, 512}, {8, 2880}, {3, 8}, {7, 1000}}) {
    const int pairs = tokens * kMoeTopK, y_rows = pairs + 3;
    auto y = random_bf16(size_t(y_rows) * hidden, rng, 1.0f);
    std::vector<int32_t> pair_row(y_rows);
    std::iota(pair_row.begin(), pair_row.end(), 0);
    std::shuffle(pair_row.begin(), pair_row.end(), rng);
    for (int r = pairs; r < y_rows; ++r) std::fill_n(y.begin() + size_t(pair_row[r]) * hidden, hidden, 0x7FC0);
    pair_row.resize(pairs);
    for (int i = 1; i < pairs; i += 5) {
      std::fill_n(y.begin() + size_t(pair_row[i]) * hidden, hidden, 0x7FC0);  // never read
      pair_row[i] = -1;
    }
    std::vector<float> weights(pairs);
    std::uniform_real_distribution<float> u(0.0f, 1.0f);
    for (float& w : weights) w = u(rng);
    auto res = random_bf16(size_t(tokens) * hidden, rng, 1.0f);
    auto w = random_bf16(hidden, rng, 0.3f, 1.0f);
    DeviceBuffer<uint16_t> dy(y), dw(w), dres_fused(res), dres_split(res), dout_fused(res.size()),
        dout_split(res.size()), ddelta(res.size());
    DeviceBuffer<int32_t> dpair_row(pair_row);
    DeviceBuffer<float> dweights(weights);
    dout_fused.poison();
    dout_split.poison();
    ddelta.poison();
    RmsNormParams fused{nullptr, dres_fused.get(), dw.get(), dout_fused.get(), tokens, hidden, 1e-5f};
    fused.moe_y = dy.get();
    fused.moe_pair_row = dpair_row.get();
    fused.moe_topk_weights = dweights.get();
    launch_rmsnorm(fused, nullptr);
    launch_moe_combine({dy.get(), dpair_row.get(), dweights.get(), nullptr, ddelta.get(), tokens, hidden}, nullptr);
    launch_rmsnorm({ddelta.get(), dres_split.get(), dw.get(), dout_split.get(), tokens, hidden, 1e-5f}, nullptr);
    const std::string shape = std::to_string(tokens) + "x" + std::to_string(hidden);
    EXPECT_EQ(dres_fused.download(), dres_split.download()) << shape << ": residual vs combine + norm";
    EXPECT_EQ(dout_fused.download(), dout_split.download()) << shape << ": out vs combine + norm";
    std::vector<uint16_t> ref(res.size()), ref_res = res;
    RmsNormParams c{nullptr, ref_res.data(), w.data(), ref.data(), tokens, hidden, 1e-5f};
    c.moe_y = y.data();
    c.moe_pair_row = pair_row.data();
    c.moe_topk_weights = weights.data();
    rmsnorm_cpu(c);
    const double err = rel_error_bf16(dout_fused.download(), ref);
    report("rmsnorm", shape + "+moe pieces", err, kTolBf16);
    EXPECT_LT(err, kTolBf16) << shape;
    EXPECT_LT(rel_error_bf16(dres_fused.download(), ref_res), kTolBf16) << shape << ": residual";
  }
}

TEST(RopeKernel, MatchesReferenceAndWritesCache) {
  GOSSAMER_REQUIRE_GPU();
  std::mt19937 rng(2);
  std::vector<int> token_counts(std::begin(gpt_oss::kRopeTokens), std::end(gpt_oss::kRopeTokens));
  token_counts.insert(token_counts.end(), {5, 257});
  for (const int tokens : token_counts) {
    const int qh = 64, kvh = 8, stride = (qh + 2 * kvh) * 64;
    auto qkv = random_bf16(size_t(tokens) * stride, rng, 1.0f);
    std::vector<int32_t> pos(tokens);
    std::uniform_int_distribution<int> pd(0, 131071);
    for (auto& x : pos) x = pd(rng);
    pos[0] = 0;
    const int cache_rows = tokens * 2 + 3;
    std::vector<int64_t> slots(tokens);
    std::iota(slots.begin(), slots.end(), 0);
    std::shuffle(slots.begin(), slots.end(), rng);
    for (auto& s : slots) s = s * 2 + 1;
    if (tokens > 1) slots[1] = -1;
    DeviceBuffer<uint16_t> dqkv(qkv), dq(size_t(tokens) * qh * 64), dk(size_t(tokens) * kvh * 64),
        dv(size_t(tokens) * kvh * 64), dkc(size_t(cache_rows) * kvh * 64), dvc(size_t(cache_rows) * kvh * 64);
    DeviceBuffer<int32_t> dpos(pos);
    DeviceBuffer<int64_t> dslots(slots);
    for (auto* b : {&dq, &dk, &dv, &dkc, &dvc}) b->poison();
    RopeParams p;
    p.qkv = dqkv.get();
    p.positions = dpos.get();
    p.q_out = dq.get();
    p.k_out = dk.get();
    p.v_out = dv.get();
    p.k_cache = dkc.get();
    p.v_cache = dvc.get();
    p.slots = dslots.get();
    p.num_tokens = tokens;
    const std::vector<float> inv_freq = rope_inv_freq(RopeScaling{}, kHeadDim);
    std::copy(inv_freq.begin(), inv_freq.end(), p.inv_freq.begin());
    p.concentration = rope_concentration(RopeScaling{});
    launch_rope(p, nullptr);
    std::vector<uint16_t> q(dq.size()), k(dk.size()), v(dv.size()), kc(dkc.size(), 0xFFFF), vc(dvc.size(), 0xFFFF);
    RopeParams c = p;
    c.qkv = qkv.data();
    c.positions = pos.data();
    c.q_out = q.data();
    c.k_out = k.data();
    c.v_out = v.data();
    c.k_cache = kc.data();
    c.v_cache = vc.data();
    c.slots = slots.data();
    rope_cpu(c);
    const double eq = rel_error_bf16(dq.download(), q), ek = rel_error_bf16(dk.download(), k);
    report("rope", "q " + std::to_string(tokens) + " tokens", eq, kTolBf16);
    report("rope", "k " + std::to_string(tokens) + " tokens", ek, kTolBf16);
    EXPECT_LT(eq, kTolBf16);
    EXPECT_LT(ek, kTolBf16);
    EXPECT_EQ(dv.download(), v);
    // Cache rows: compare written rows; unwritten rows stay poisoned on both sides.
    const auto gkc = dkc.download(), gvc = dvc.download();
    std::vector<float> a, b;
    for (size_t i = 0; i < kc.size(); ++i) {
      if (kc[i] == 0xFFFF) {
        EXPECT_EQ(gkc[i], 0xFFFF) << "cache row written that should not be, element " << i;
        continue;
      }
      a.push_back(bf16_to_float(gkc[i]));
      b.push_back(bf16_to_float(kc[i]));
    }
    EXPECT_LT(rel_error(a, b), kTolBf16);
    EXPECT_EQ(gvc, vc);
  }
}

// --kv-cache-dtype fp8: the fused KV write stores e4m3 codes under per-KV-head scales. K codes must be
// kv_fp8_quantize of the kernel's own rotated bf16 k_out (bit-exact), V codes those of the CPU reference
// (v is not rotated: bit-exact), including values that saturate (±1000, ±inf → ±448, never NaN).
TEST(RopeKernel, Fp8CacheWriteQuantizesExactly) {
  GOSSAMER_REQUIRE_GPU();
  std::mt19937 rng(5);
  const int tokens = 37, qh = 64, kvh = 8, stride = (qh + 2 * kvh) * 64;
  auto qkv = random_bf16(size_t(tokens) * stride, rng, 3.0f);
  const uint16_t specials[] = {float_to_bf16(1000.f), float_to_bf16(-1000.f), 0x7F80 /* +inf */,     0xFF80 /* -inf */,
                               float_to_bf16(449.f),  float_to_bf16(464.f),   float_to_bf16(0.001f), 0x0001};
  for (int t = 0; t < tokens; ++t) {  // into v (and k, before RoPE) of every token
    for (int i = 0; i < 8; ++i) {
      qkv[size_t(t) * stride + (qh + kvh) * 64 + 64 * (i % kvh) + 5 * i] = specials[(i + t) % 8];
      const int k_special = (i + 3 * t) % 8;  // finite ones only: RoPE mixes a pair, ±inf could make NaN
      qkv[size_t(t) * stride + qh * 64 + 64 * (i % kvh) + 7 * i] =
          specials[k_special == 2 || k_special == 3 ? 0 : k_special];
    }
  }
  std::vector<int32_t> pos(tokens);
  std::iota(pos.begin(), pos.end(), 1000);
  std::vector<int64_t> slots(tokens);
  std::iota(slots.begin(), slots.end(), 0);
  std::shuffle(slots.begin(), slots.end(), rng);
  slots[3] = -1;
  std::vector<float> k_scale(kvh), v_scale(kvh);
  std::uniform_real_distribution<float> sd(0.25f, 2.f);
  for (int h = 0; h < kvh; ++h) k_scale[h] = sd(rng), v_scale[h] = h == 0 ? 1.f : sd(rng);
  DeviceBuffer<uint16_t> dqkv(qkv), dq(size_t(tokens) * qh * 64), dk(size_t(tokens) * kvh * 64),
      dv(size_t(tokens) * kvh * 64);
  DeviceBuffer<uint8_t> dkc(size_t(tokens) * kvh * 64), dvc(size_t(tokens) * kvh * 64);
  DeviceBuffer<int32_t> dpos(pos);
  DeviceBuffer<int64_t> dslots(slots);
  DeviceBuffer<float> dks(k_scale), dvs(v_scale);
  dkc.poison();
  dvc.poison();
  RopeParams p;
  p.qkv = dqkv.get();
  p.positions = dpos.get();
  p.q_out = dq.get();
  p.k_out = dk.get();
  p.v_out = dv.get();
  p.k_cache = dkc.get();
  p.v_cache = dvc.get();
  p.kv_fp8 = true;
  p.k_scale = dks.get();
  p.v_scale = dvs.get();
  p.slots = dslots.get();
  p.num_tokens = tokens;
  const std::vector<float> inv_freq = rope_inv_freq(RopeScaling{}, kHeadDim);
  std::copy(inv_freq.begin(), inv_freq.end(), p.inv_freq.begin());
  p.concentration = rope_concentration(RopeScaling{});
  launch_rope(p, nullptr);
  const auto k_out = dk.download(), v_out = dv.download();
  const auto kc = dkc.download(), vc = dvc.download();
  int saturated = 0;
  for (int t = 0; t < tokens; ++t) {
    if (slots[t] < 0) continue;
    for (int h = 0; h < kvh; ++h) {
      const size_t src = (size_t(t) * kvh + h) * 64, dst = (size_t(slots[t]) * kvh + h) * 64;
      for (int d = 0; d < 64; ++d) {
        const uint8_t k_code = kc[dst + d], v_code = vc[dst + d];
        ASSERT_EQ(k_code, kv_fp8_quantize(bf16_to_float(k_out[src + d]), k_scale[h]))
            << "k token " << t << " head " << h;
        ASSERT_EQ(v_code, kv_fp8_quantize(bf16_to_float(v_out[src + d]), v_scale[h]))
            << "v token " << t << " head " << h;
        ASSERT_NE(k_code & 0x7F, 0x7F) << "NaN code in k";
        ASSERT_NE(v_code & 0x7F, 0x7F) << "NaN code in v";
        saturated += (v_code & 0x7F) == 0x7E;
      }
    }
  }
  EXPECT_GT(saturated, 0);
  // The CPU reference writes the same V codes.
  std::vector<uint16_t> q(dq.size()), k(dk.size()), v(dv.size());
  std::vector<uint8_t> kc_ref(kc.size(), 0), vc_ref(vc.size(), 0);
  RopeParams c = p;
  c.qkv = qkv.data();
  c.positions = pos.data();
  c.q_out = q.data();
  c.k_out = k.data();
  c.v_out = v.data();
  c.k_cache = kc_ref.data();
  c.v_cache = vc_ref.data();
  c.k_scale = k_scale.data();
  c.v_scale = v_scale.data();
  c.slots = slots.data();
  rope_cpu(c);
  for (int t = 0; t < tokens; ++t) {
    if (slots[t] < 0) continue;
    const size_t at = size_t(slots[t]) * kvh * 64;
    EXPECT_TRUE(std::equal(vc.begin() + at, vc.begin() + at + kvh * 64, vc_ref.begin() + at)) << "token " << t;
  }
}

TEST(EmbeddingKernel, GathersRows) {
  GOSSAMER_REQUIRE_GPU();
  std::mt19937 rng(3);
  const int vocab = 1000, hidden = 2880, tokens = 37;
  auto table = random_bf16(size_t(vocab) * hidden, rng);
  std::vector<int32_t> ids(tokens);
  std::uniform_int_distribution<int> d(0, vocab - 1);
  for (auto& x : ids) x = d(rng);
  ids[3] = vocab + 5;  // out of range → zero row
  DeviceBuffer<uint16_t> dt(table), dout(size_t(tokens) * hidden);
  DeviceBuffer<int32_t> dids(ids);
  dout.poison();
  EmbeddingParams p{dt.get(), dids.get(), dout.get(), tokens, hidden, vocab};
  launch_embedding(p, nullptr);
  std::vector<uint16_t> ref(dout.size());
  EmbeddingParams c{table.data(), ids.data(), ref.data(), tokens, hidden, vocab};
  embedding_cpu(c);
  EXPECT_EQ(dout.download(), ref);
  report("embedding", "37x2880", 0.0, 0.0);
}

// Vocab-parallel slices (model/sharding.h: rank r holds rows [r·⌈V/world⌉, min(V, (r+1)·⌈V/world⌉))): each
// rank's table is its slice, every output row is written (poisoned before), tokens of the slice get their
// row of the whole table and every other id (other ranks', negative, past V, the int32 extremes) zeros;
// the ranks' outputs summed are the whole lookup, exactly. Vocabularies not a multiple of the world size
// give a shorter last slice; 201,088 rows at TP8 are gpt-oss's slices (25,136 rows each; hidden 64 here).
TEST(EmbeddingKernel, VocabSliceZerosOtherRanksTokens) {
  GOSSAMER_REQUIRE_GPU();
  std::mt19937 rng(4);
  struct Case {
    int vocab, hidden, world, tokens;
  };
  for (const auto& [vocab, hidden, world, tokens] :
       {Case{1000, 2880, 3, 61}, Case{1001, 256, 2, 40}, Case{1000, 64, 4, 300}, Case{201088, 64, 8, 24}}) {
    const std::string name = std::to_string(vocab) + "x" + std::to_string(hidden) + " TP" + std::to_string(world) +
                             " " + std::to_string(tokens);
    const auto table = random_bf16(size_t(vocab) * hidden, rng);
    const int shard = (vocab + world - 1) / world;
    std::vector<int32_t> ids(tokens);
    std::uniform_int_distribution<int> d(0, vocab - 1);
    for (auto& x : ids) x = d(rng);
    ids[0] = 0;
    ids[1] = vocab - 1;  // the last slice's last row
    ids[2] = shard;      // rank 1's first row
    ids[3] = shard - 1;  // rank 0's last row
    ids[4] = -1;         // never anyone's
    ids[5] = vocab;      // past the last slice
    ids[6] = std::numeric_limits<int32_t>::min();
    ids[7] = std::numeric_limits<int32_t>::max();
    DeviceBuffer<int32_t> dids(ids);
    std::vector<float> sum(size_t(tokens) * hidden, 0.0f);
    for (int rank = 0; rank < world; ++rank) {
      const int begin = std::min(vocab, rank * shard), rows = std::min(vocab, begin + shard) - begin;
      const std::vector<uint16_t> slice(table.begin() + int64_t{begin} * hidden,
                                        table.begin() + int64_t{begin + rows} * hidden);
      DeviceBuffer<uint16_t> dt(slice), dout(size_t(tokens) * hidden);
      dout.poison();
      EmbeddingParams p{dt.get(), dids.get(), dout.get(), tokens, hidden, rows, begin};
      launch_embedding(p, nullptr);
      std::vector<uint16_t> ref(dout.size());
      EmbeddingParams c{slice.data(), ids.data(), ref.data(), tokens, hidden, rows, begin};
      embedding_cpu(c);
      const std::vector<uint16_t> got = dout.download();
      EXPECT_EQ(got, ref) << name << " rank " << rank;
      for (int t = 0; t < tokens; ++t) {
        const bool mine = ids[t] >= begin && ids[t] < begin + rows;
        const uint16_t* row = got.data() + size_t(t) * hidden;
        const uint16_t* want = table.data() + (mine ? size_t(ids[t]) * hidden : 0);
        for (int h = 0; h < hidden; ++h) {
          if (mine ? row[h] != want[h] : row[h] != 0) {
            ADD_FAILURE() << name << " rank " << rank << " token " << t << " (id " << ids[t] << ") column " << h;
            break;
          }
          sum[size_t(t) * hidden + h] += bf16_to_float(row[h]);
        }
      }
    }
    for (int t = 0; t < tokens; ++t) {  // the group's sum: the whole table's row, or zeros for no one's id
      const bool anyone = ids[t] >= 0 && ids[t] < vocab;
      for (int h = 0; h < hidden; h += 7) {
        ASSERT_EQ(sum[size_t(t) * hidden + h], anyone ? bf16_to_float(table[size_t(ids[t]) * hidden + h]) : 0.0f)
            << name << " token " << t;
      }
    }
    report("embedding slices", name, 0.0, 0.0);
  }
}

// Async scheduling's pending-token feed: the listed ids take the previous step's drawn tokens, the rest stay.
TEST(FeedTokensKernel, WritesTheDrawnTokensIntoTheListedIds) {
  GOSSAMER_REQUIRE_GPU();
  std::mt19937 rng(5);
  const int tokens = 1100, rows = 1024;
  std::vector<int32_t> ids(tokens), drawn(rows), feeds;
  for (auto& x : ids) x = static_cast<int32_t>(rng() % 201088);
  for (auto& x : drawn) x = static_cast<int32_t>(rng() % 201088);
  for (int t = 0; t < tokens; t += 1 + static_cast<int>(rng() % 3)) {  // each id at most once
    feeds.push_back(t);
    feeds.push_back(static_cast<int32_t>(rng() % rows));
  }
  const int num_feeds = static_cast<int>(feeds.size() / 2);
  DeviceBuffer<int32_t> dids(ids), ddrawn(drawn), dfeeds(feeds);
  FeedTokensParams p{dids.get(), ddrawn.get(), dfeeds.get(), num_feeds};
  launch_feed_tokens(p, nullptr);
  std::vector<int32_t> ref = ids;
  FeedTokensParams c{ref.data(), drawn.data(), feeds.data(), num_feeds};
  feed_tokens_cpu(c);
  EXPECT_EQ(dids.download(), ref);
  report("feed_tokens", "1100 ids", 0.0, 0.0);
}

// Vocab-parallel logits at the real vocabulary (2 and 8 ranks) and at small ones whose last shard is short:
// rank q's slot holds, for (row r, id v), the value (r · vocab + v) mod 2^15 as bf16 bits, so the reassembled
// logits must read 0, 1, 2, … in order.
struct VocabShardsCase {
  int64_t vocab;
  int world, rows;
};
constexpr VocabShardsCase kVocabShardsCases[] = {{201088, 2, 3}, {201088, 8, 1}, {1001, 4, 5}, {7, 3, 2}};

std::vector<uint16_t> numbered_shards(const VocabShardsCase& c, int64_t shard_rows) {
  std::vector<uint16_t> shards(size_t(c.world) * c.rows * shard_rows, 0xFFFF);
  for (int q = 0; q < c.world; ++q) {
    const int64_t begin = q * shard_rows, n = std::min<int64_t>(c.vocab, begin + shard_rows) - begin;
    for (int64_t r = 0; r < c.rows; ++r) {
      for (int64_t i = 0; i < n; ++i) {
        shards[size_t(q * c.rows * shard_rows + r * n + i)] = static_cast<uint16_t>((r * c.vocab + begin + i) & 0x7FFF);
      }
    }
  }
  return shards;
}

TEST(VocabShardsCpu, ReassemblesTheFullLogitsInOrder) {
  for (const VocabShardsCase& c : kVocabShardsCases) {
    const int64_t shard_rows = (c.vocab + c.world - 1) / c.world;
    const std::vector<uint16_t> shards = numbered_shards(c, shard_rows);
    std::vector<uint16_t> out(size_t(c.rows) * c.vocab);
    vocab_shards_cpu(VocabShardsParams{shards.data(), out.data(), c.rows, shard_rows, c.vocab});
    for (int64_t i = 0; i < int64_t(out.size()); ++i) ASSERT_EQ(out[size_t(i)], i & 0x7FFF) << c.vocab << " " << i;
  }
}

TEST(VocabShardsKernel, MatchesReference) {
  GOSSAMER_REQUIRE_GPU();
  for (const VocabShardsCase& c : kVocabShardsCases) {
    const int64_t shard_rows = (c.vocab + c.world - 1) / c.world;
    const std::vector<uint16_t> shards = numbered_shards(c, shard_rows);
    DeviceBuffer<uint16_t> dshards(shards), dout(size_t(c.rows) * c.vocab);
    dout.poison();
    launch_vocab_shards(VocabShardsParams{dshards.get(), dout.get(), c.rows, shard_rows, c.vocab}, nullptr);
    std::vector<uint16_t> ref(size_t(c.rows) * c.vocab);
    vocab_shards_cpu(VocabShardsParams{shards.data(), ref.data(), c.rows, shard_rows, c.vocab});
    EXPECT_EQ(dout.download(), ref) << c.vocab << " over " << c.world;
  }
}

TEST(QuantizeFp8Kernel, MatchesReferenceExactly) {
  GOSSAMER_REQUIRE_GPU();
  std::mt19937 rng(4);
  for (const auto& [m, k] : {std::pair{1, 2880}, {37, 576}, {5, 64}, {130, 4096}}) {
    auto x = random_bf16(size_t(m) * k, rng, 3.0f);
    x[0] = 0;  // an all-small group still gets a positive scale
    const int groups = (k + 127) / 128;
    const int64_t ldq = (k + 15) / 16 * 16;
    DeviceBuffer<uint16_t> dx(x);
    DeviceBuffer<uint8_t> dq(size_t(m) * ldq);
    DeviceBuffer<float> ds(size_t(m) * groups);
    dq.poison();
    ds.poison();
    launch_quantize_fp8({dx.get(), k, dq.get(), ldq, ds.get(), m, k}, nullptr);
    std::vector<uint8_t> q(dq.size(), 0xFF);
    std::vector<float> s(ds.size());
    quantize_fp8_cpu({x.data(), k, q.data(), ldq, s.data(), m, k});
    EXPECT_EQ(dq.download(), q);
    EXPECT_EQ(ds.download(), s);
    std::vector<float> deq(size_t(m) * k), orig(size_t(m) * k);
    for (int r = 0; r < m; ++r)
      for (int c = 0; c < k; ++c) {
        deq[size_t(r) * k + c] = fp8e4m3_to_float(q[r * ldq + c]) * s[r * groups + c / 128];
        orig[size_t(r) * k + c] = bf16_to_float(x[size_t(r) * k + c]);
      }
    const double err = rel_error(deq, orig);
    report("quantize_fp8", std::to_string(m) + "x" + std::to_string(k) + " (vs bf16 input)", err, 0.05);
    EXPECT_LT(err, 0.05);  // e4m3 has 3 mantissa bits: ~2-3% rms relative
  }
}

// The MoE's form: rows gathered through row_index in expert order, rows past *num_valid_rows untouched;
// and x not 16-byte aligned (the kernel's 4-byte load path), several 2,048-column passes.
TEST(QuantizeFp8Kernel, GatheredAndUnalignedRowsMatchReference) {
  GOSSAMER_REQUIRE_GPU();
  std::mt19937 rng(6);
  for (const auto& [m, k, offset] : {std::tuple{64, 2880, 0}, {48, 5000, 2}, {9, 136, 2}}) {
    const int sources = m / 4 + 1, valid = m - 5;
    auto x = random_bf16(size_t(sources) * k + offset, rng, 2.0f);
    std::vector<int32_t> row_index(m);
    for (auto& r : row_index) r = static_cast<int32_t>(rng() % sources);
    const int groups = (k + 127) / 128;
    const int64_t ldq = (k + 15) / 16 * 16;
    DeviceBuffer<uint16_t> dx(x);
    DeviceBuffer<int32_t> drows(row_index), dvalid(std::vector<int32_t>{valid});
    DeviceBuffer<uint8_t> dq(size_t(m) * ldq);
    DeviceBuffer<float> ds(size_t(m) * groups);
    dq.poison();
    ds.poison();
    QuantizeFp8Params p{dx.get() + offset, k, dq.get(), ldq, ds.get(), m, k};
    p.row_index = drows.get();
    p.num_valid_rows = dvalid.get();
    launch_quantize_fp8(p, nullptr);
    // The reference over the valid rows; the rest must keep the poison.
    std::vector<uint8_t> q = dq.download();
    std::vector<float> s = ds.download();
    std::vector<uint8_t> want_q(q);
    std::vector<float> want_s(s);
    QuantizeFp8Params r{x.data() + offset, k, want_q.data(), ldq, want_s.data(), valid, k};
    r.row_index = row_index.data();
    quantize_fp8_cpu(r);
    EXPECT_EQ(q, want_q) << m << "x" << k << " offset " << offset;
    // Bit patterns: the untouched rows hold the NaN poison, which compares unequal as a float.
    std::vector<uint32_t> s_bits(s.size()), want_bits(s.size());
    std::memcpy(s_bits.data(), s.data(), s.size() * 4);
    std::memcpy(want_bits.data(), want_s.data(), s.size() * 4);
    EXPECT_EQ(s_bits, want_bits) << m << "x" << k << " offset " << offset;
    for (size_t i = size_t(valid) * ldq; i < q.size(); ++i) ASSERT_EQ(q[i], 0xFF) << "row past num_valid_rows";
    for (size_t i = size_t(valid) * groups; i < s.size(); ++i) ASSERT_EQ(s_bits[i], 0xFFFFFFFFu) << "scale past rows";
  }
}

// The MoE's other form (MoeParams::quantize_tokens_once): each input row quantized once and written to up
// to four output rows through scatter_rows (−1 skips); rows no input names keep the poison.
TEST(QuantizeFp8Kernel, ScatteredRowsMatchReference) {
  GOSSAMER_REQUIRE_GPU();
  std::mt19937 rng(7);
  for (const auto& [m, k, width] : {std::tuple{16, 2880, 4}, {9, 5000, 4}, {5, 136, 2}}) {
    const int out_rows = m * width + 3;
    auto x = random_bf16(size_t(m) * k, rng, 2.0f);
    std::vector<int32_t> perm(out_rows);
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    std::vector<int32_t> scatter(size_t(m) * width);
    for (size_t i = 0; i < scatter.size(); ++i) scatter[i] = i % 5 == 3 ? -1 : perm[i];  // other ranks' pairs
    const int groups = (k + 127) / 128;
    const int64_t ldq = (k + 15) / 16 * 16;
    DeviceBuffer<uint16_t> dx(x);
    DeviceBuffer<int32_t> dscatter(scatter);
    DeviceBuffer<uint8_t> dq(size_t(out_rows) * ldq);
    DeviceBuffer<float> ds(size_t(out_rows) * groups);
    dq.poison();
    ds.poison();
    QuantizeFp8Params p{dx.get(), k, dq.get(), ldq, ds.get(), m, k};
    p.scatter_rows = dscatter.get();
    p.scatter_width = width;
    launch_quantize_fp8(p, nullptr);
    std::vector<uint8_t> q = dq.download();
    std::vector<float> s = ds.download();
    std::vector<uint8_t> want_q(q.size(), 0xFF);
    std::vector<float> want_s(s.size());
    std::vector<uint32_t> s_bits(s.size()), want_bits(s.size(), 0xFFFFFFFFu);
    std::memcpy(want_s.data(), want_bits.data(), s.size() * 4);
    QuantizeFp8Params r{x.data(), k, want_q.data(), ldq, want_s.data(), m, k};
    r.scatter_rows = scatter.data();
    r.scatter_width = width;
    quantize_fp8_cpu(r);
    EXPECT_EQ(q, want_q) << m << "x" << k << " width " << width;
    std::memcpy(s_bits.data(), s.data(), s.size() * 4);
    std::memcpy(want_bits.data(), want_s.data(), s.size() * 4);
    EXPECT_EQ(s_bits, want_bits) << m << "x" << k << " width " << width;
  }
}

TEST(Mxfp4ToFp8Kernel, MatchesReferenceAndIsLossless) {
  GOSSAMER_REQUIRE_GPU();
  std::mt19937 rng(5);
  for (const auto& [experts, rows, cols] : {std::tuple{2, 200, 2880}, {1, 128, 256}, {3, 64, 96}}) {
    const int mx = cols / 32;
    std::vector<uint8_t> blocks(size_t(experts) * rows * mx * 16), scales(size_t(experts) * rows * mx);
    std::uniform_int_distribution<int> byte(0, 255), sc(118, 128);
    for (auto& b : blocks) b = static_cast<uint8_t>(byte(rng));
    for (auto& s : scales) s = static_cast<uint8_t>(sc(rng));
    const int rbs = (rows + 127) / 128, kbs = (cols + 127) / 128;
    DeviceBuffer<uint8_t> db(blocks), ds(scales), dout(size_t(experts) * rows * cols);
    DeviceBuffer<float> dsc(size_t(experts) * rbs * kbs);
    dout.poison();
    dsc.poison();
    launch_mxfp4_to_fp8({db.get(), ds.get(), dout.get(), dsc.get(), experts, rows, cols}, nullptr);
    std::vector<uint8_t> out(dout.size());
    std::vector<float> osc(dsc.size());
    mxfp4_to_fp8_cpu({blocks.data(), scales.data(), out.data(), osc.data(), experts, rows, cols});
    EXPECT_EQ(dout.download(), out);
    EXPECT_EQ(dsc.download(), osc);
    // Dequantized FP8 must equal the MXFP4 values (exponent spread ≤ 10 here: exact).
    double max_diff = 0;
    for (int e = 0; e < experts; ++e)
      for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c) {
          const size_t mb = (size_t(e) * rows + r) * mx + c / 32;
          const uint8_t byte = blocks[mb * 16 + (c % 32) / 2];
          const float want = fp4e2m1_to_float(c % 2 ? byte >> 4 : byte & 0xF) * e8m0_to_float(scales[mb]);
          const float got = fp8e4m3_to_float(out[(size_t(e) * rows + r) * cols + c]) *
                            osc[(size_t(e) * rbs + r / 128) * kbs + c / 128];
          max_diff = std::max(max_diff, static_cast<double>(std::fabs(got - want)));
        }
    report("mxfp4_to_fp8", std::to_string(experts) + "x" + std::to_string(rows) + "x" + std::to_string(cols), max_diff,
           0.0);
    EXPECT_EQ(max_diff, 0.0);
  }
}

}  // namespace
}  // namespace gossamer::kernels
