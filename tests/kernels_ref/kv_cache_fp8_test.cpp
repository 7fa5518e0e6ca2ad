// The FP8 KV cache's number format (kernels/kv_cache_fp8.h) against an independent oracle (the nearest of
// the 254 finite e4m3 values by brute force, ties to the even code), its saturation, and the references
// that use it: rope_cpu's quantizing cache write and attention_cpu on an e4m3 cache. CPU only.
#include "kernels/kv_cache_fp8.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "core/dtype.h"
#include "kernels/attention.h"
#include "kernels/rope.h"

namespace gossamer::kernels {
namespace {

// The e4m3 code nearest to x (|x| ≥ 464 and ±inf saturate to ±448), ties to the even code, by search.
uint8_t oracle_e4m3(float x) {
  const uint8_t sign = std::signbit(x) ? 0x80 : 0x00;
  const double a = std::fabs(static_cast<double>(x));
  uint8_t best = 0;
  double best_err = std::numeric_limits<double>::infinity();
  for (int code = 0; code < 0x7F; ++code) {  // 0x7F is NaN
    const double err = std::fabs(static_cast<double>(fp8e4m3_to_float(static_cast<uint8_t>(code))) - a);
    if (err < best_err || (err == best_err && (code & 1) == 0)) {
      best = static_cast<uint8_t>(code);
      best_err = err;
    }
  }
  return sign | best;
}

TEST(KvCacheFp8, QuantizesEveryBf16ValueLikeTheOracle) {
  int checked = 0;
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    const float x = bf16_to_float(static_cast<uint16_t>(bits));
    if (std::isnan(x)) continue;
    const uint8_t code = kv_fp8_quantize(x, 1.0f);
    ASSERT_EQ(code, oracle_e4m3(x)) << "bf16 bits 0x" << std::hex << bits << " = " << x;
    ASSERT_NE(code & 0x7F, 0x7F) << "NaN code for finite/inf input " << x;
    ++checked;
  }
  EXPECT_EQ(checked, 65536 - 2 * 127);  // every non-NaN bf16 (±0, subnormals, ±inf included)
}

TEST(KvCacheFp8, SaturatesNeverNaN) {
  for (const float x : {448.f, 449.f, 463.f, 464.f, 465.f, 1000.f, 3.0e38f, std::numeric_limits<float>::infinity()}) {
    EXPECT_EQ(kv_fp8_quantize(x, 1.f), 0x7E) << x;
    EXPECT_EQ(kv_fp8_quantize(-x, 1.f), 0xFE) << -x;
    EXPECT_EQ(kv_fp8_round_trip(x, 1.f), 448.f);
  }
  EXPECT_EQ(kv_fp8_quantize(std::numeric_limits<float>::quiet_NaN(), 1.f) & 0x7F, 0x7F);  // NaN stays NaN
  EXPECT_EQ(kv_fp8_round_trip(447.f, 1.f), 448.f);                                        // RNE in the top binade
  EXPECT_EQ(kv_fp8_round_trip(1.0625f, 1.f), 1.f);                                        // tie → even
  EXPECT_EQ(kv_fp8_round_trip(1.1875f, 1.f), 1.25f);                                      // tie → even
  EXPECT_EQ(kv_fp8_round_trip(std::ldexp(1.f, -9), 1.f), std::ldexp(1.f, -9));            // smallest subnormal
  EXPECT_EQ(kv_fp8_round_trip(std::ldexp(1.f, -11), 1.f), 0.f);                           // below half of it
}

TEST(KvCacheFp8, ScaleDividesThenMultiplies) {
  EXPECT_EQ(kv_fp8_quantize(896.f, 2.f), 0x7E);
  EXPECT_EQ(kv_fp8_dequantize(0x7E, 2.f), 896.f);
  EXPECT_EQ(kv_fp8_round_trip(0.3f, 0.25f), 0.3125f);  // 1.2 → 1.25 in the code domain
  // Rows: one scale per KV head.
  const std::vector<uint16_t> rows = {float_to_bf16(3.f), float_to_bf16(-3.f), float_to_bf16(3.f), float_to_bf16(-3.f)};
  const std::vector<float> scales = {1.f, 2.f};
  std::vector<uint8_t> codes(4);
  kv_fp8_quantize_rows_cpu(rows.data(), 1, 2, 2, scales.data(), codes.data());
  EXPECT_EQ(kv_fp8_dequantize(codes[0], 1.f), 3.f);
  EXPECT_EQ(kv_fp8_dequantize(codes[1], 1.f), -3.f);
  EXPECT_EQ(kv_fp8_dequantize(codes[2], 1.f), 1.5f);
  EXPECT_EQ(kv_fp8_dequantize(codes[3], 1.f), -1.5f);
}

// rope_cpu with kv_fp8 writes kv_fp8_quantize of exactly the bf16 rows it writes without it.
TEST(KvCacheFp8, RopeCpuWritesQuantizedRows) {
  std::mt19937 rng(7);
  std::normal_distribution<float> dist(0.f, 30.f);
  const int tokens = 5, qh = 8, kvh = 2, stride = (qh + 2 * kvh) * kHeadDim;
  std::vector<uint16_t> qkv(size_t(tokens) * stride);
  for (auto& x : qkv) x = float_to_bf16(dist(rng));
  qkv[qh * kHeadDim + 3] = float_to_bf16(5000.f);  // k of token 0: saturates
  std::vector<int32_t> pos = {0, 7, 100, 4000, 9};
  std::vector<int64_t> slots = {4, 0, -1, 2, 1};
  const std::vector<float> k_scale = {0.5f, 1.f}, v_scale = {1.f, 4.f};
  RopeParams p;
  p.qkv = qkv.data();
  p.qkv_stride = stride;
  p.positions = pos.data();
  p.num_tokens = tokens;
  p.num_q_heads = qh;
  p.num_kv_heads = kvh;
  p.slots = slots.data();
  const std::vector<float> inv_freq = rope_inv_freq(RopeScaling{}, kHeadDim);
  std::copy(inv_freq.begin(), inv_freq.end(), p.inv_freq.begin());
  p.concentration = rope_concentration(RopeScaling{});
  std::vector<uint16_t> q(size_t(tokens) * qh * kHeadDim), kc(size_t(tokens) * kvh * kHeadDim), vc(kc.size());
  p.q_out = q.data();
  p.k_cache = kc.data();
  p.v_cache = vc.data();
  rope_cpu(p);
  std::vector<uint8_t> kc8(kc.size(), 0xAA), vc8(kc.size(), 0xAA);
  RopeParams f = p;
  f.k_cache = kc8.data();
  f.v_cache = vc8.data();
  f.kv_fp8 = true;
  f.k_scale = k_scale.data();
  f.v_scale = v_scale.data();
  rope_cpu(f);
  for (int slot = 0; slot < tokens; ++slot) {
    const bool written = slot != 3;  // no token has slot 3 (token 2's slot is −1)
    for (int h = 0; h < kvh; ++h) {
      for (int d = 0; d < kHeadDim; ++d) {
        const size_t i = (size_t(slot) * kvh + h) * kHeadDim + d;
        if (!written) {
          EXPECT_EQ(kc8[i], 0xAA);
          continue;
        }
        EXPECT_EQ(kc8[i], kv_fp8_quantize(bf16_to_float(kc[i]), k_scale[h])) << i;
        EXPECT_EQ(vc8[i], kv_fp8_quantize(bf16_to_float(vc[i]), v_scale[h])) << i;
      }
    }
  }
  EXPECT_EQ(kc8[(4 * kvh + 0) * kHeadDim + 3] & 0x7F,
            0x7E);  // the 5000 (position 0: only scaled by the YaRN concentration)
}

// attention_cpu on an e4m3 cache equals attention_cpu on a bf16 cache holding the dequantized values
// (power-of-two scales keep them bf16-exact).
TEST(KvCacheFp8, AttentionCpuReadsDequantizedValues) {
  std::mt19937 rng(8);
  std::normal_distribution<float> dist(0.f, 4.f);
  const int qh = 4, kvh = 2, page = 4, kv_len = 11, q_len = 3, pages = 3;
  const std::vector<float> k_scale = {0.25f, 2.f}, v_scale = {1.f, 0.5f};
  std::vector<uint16_t> q(size_t(q_len) * qh * 64), out(q.size()), out_ref(q.size());
  for (auto& x : q) x = float_to_bf16(dist(rng) * 0.1f);
  const size_t elems = size_t(pages) * page * kvh * 64;
  std::vector<uint16_t> kb(elems), vb(elems), kd(elems), vd(elems);
  for (auto& x : kb) x = float_to_bf16(dist(rng));
  for (auto& x : vb) x = float_to_bf16(dist(rng));
  std::vector<uint8_t> k8(elems), v8(elems);
  const int64_t rows = pages * page;
  kv_fp8_quantize_rows_cpu(kb.data(), rows, kvh, 64, k_scale.data(), k8.data());
  kv_fp8_quantize_rows_cpu(vb.data(), rows, kvh, 64, v_scale.data(), v8.data());
  for (size_t i = 0; i < elems; ++i) {
    const int h = static_cast<int>((i / 64) % kvh);
    kd[i] = float_to_bf16(kv_fp8_dequantize(k8[i], k_scale[h]));
    vd[i] = float_to_bf16(kv_fp8_dequantize(v8[i], v_scale[h]));
    ASSERT_EQ(bf16_to_float(kd[i]), kv_fp8_dequantize(k8[i], k_scale[h]));  // bf16-exact
  }
  const std::vector<int32_t> cu = {0, q_len}, lens = {kv_len}, indptr = {0, pages}, indices = {2, 0, 1};
  const std::vector<float> sinks = {0.5f, -1.f, 2.f, 0.f};
  AttentionParams p;
  p.q = q.data();
  p.out = out.data();
  p.k_cache = k8.data();
  p.v_cache = v8.data();
  p.kv_fp8 = true;
  p.k_scale = k_scale.data();
  p.v_scale = v_scale.data();
  p.page_indptr = indptr.data();
  p.page_indices = indices.data();
  p.cu_seqlens_q = cu.data();
  p.kv_lens = lens.data();
  p.sinks = sinks.data();
  p.num_seqs = 1;
  p.num_tokens = q_len;
  p.num_q_heads = qh;
  p.num_kv_heads = kvh;
  p.page_size = page;
  attention_cpu(p);
  AttentionParams r = p;
  r.out = out_ref.data();
  r.k_cache = kd.data();
  r.v_cache = vd.data();
  r.kv_fp8 = false;
  attention_cpu(r);
  EXPECT_EQ(out, out_ref);
}

}  // namespace
}  // namespace gossamer::kernels
