// Host-side launch-shape rules of the decode GEMVs (kernels/gemv_launch.h) and the fused QKV + RoPE
// reference (kernels/gemv_fp8_rope.h): no GPU needed.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "core/dtype.h"
#include "kernels/fp8_tiled.h"
#include "kernels/gemv_fp8_rope.h"
#include "kernels/gemv_launch.h"

namespace gossamer::kernels {
namespace {

// The rule's cluster (gemv_cluster_size) on an H200 (132 SMs, 8-warp CTAs) at the gemv-tune shapes: one
// token's 4 experts (K = 2880: 23 K steps of 128), gate_up 360 row tiles, down 180.
TEST(GemvLaunchShape, RuleClusterKeepsOneCtaPerSmAndTwoStepsPerWarp) {
  const int sms = 132, k_steps = 23;
  EXPECT_EQ(gemv_cluster_size(360, 1, k_steps, 8, sms, 0, "test"), 1);  // 720 > 132
  EXPECT_EQ(gemv_cluster_size(180, 1, k_steps, 8, sms, 0, "test"), 1);  // 360 > 132
  EXPECT_EQ(gemv_cluster_size(16, 1, 128, 8, sms, 0, "test"), 8);       // small N, long K: up to 8
  EXPECT_EQ(gemv_cluster_size(16, 1, 23, 8, sms, 0, "test"), 2);        // every warp keeps 2 K steps
  EXPECT_EQ(gemv_cluster_size(360, 1, k_steps, 8, sms, 4, "test"), 4);  // a requested cluster wins
  EXPECT_THROW(gemv_cluster_size(360, 1, k_steps, 8, sms, 3, "test"), std::exception);
}

// gemv_fp8_rope_cpu is the GEMV into qkv, then RoPE over it: q of a v-free 1-head problem checked by hand
// against gemv_fp8_cpu + rope_cpu, and the contract check.
TEST(GemvFp8RopeReference, EqualsGemvThenRope) {
  std::mt19937 rng(7);
  const int q_heads = 2, kv_heads = 1, N = (q_heads + 2 * kv_heads) * 64, K = 128, T = 3;
  std::vector<uint16_t> x(size_t(T) * K), bias(N);
  std::normal_distribution<float> nd(0.f, 1.f);
  for (auto& v : x) v = float_to_bf16(nd(rng));
  for (auto& v : bias) v = float_to_bf16(nd(rng));
  std::vector<uint8_t> w(size_t(N) * K);
  for (auto& b : w) b = float_to_fp8e4m3(nd(rng) * 8.f);
  std::vector<uint8_t> wt(fp8_tiled_group_bytes(N, K));
  fp8_to_tiled_cpu(w.data(), wt.data(), 1, N, K);
  std::vector<float> scales(size_t((N + 127) / 128), 0.01f);
  GemvFp8Params g;
  g.x = x.data();
  g.ldx = K;
  g.w = wt.data();
  g.w_tiled = true;
  g.w_scales = scales.data();
  g.bias = bias.data();
  g.M = T;
  g.N = N;
  g.K = K;
  const std::vector<int32_t> pos = {0, 17, 4000};
  const std::vector<int64_t> slots = {2, -1, 0};
  std::vector<uint16_t> q(size_t(T) * q_heads * 64), kc(size_t(4) * kv_heads * 64, 0xFFFF), vc = kc;
  RopeParams r;
  r.positions = pos.data();
  r.q_out = q.data();
  r.k_cache = kc.data();
  r.v_cache = vc.data();
  r.slots = slots.data();
  r.num_tokens = T;
  r.num_q_heads = q_heads;
  r.num_kv_heads = kv_heads;
  const std::vector<float> inv_freq = rope_inv_freq(RopeScaling{}, kHeadDim);
  std::copy(inv_freq.begin(), inv_freq.end(), r.inv_freq.begin());
  r.concentration = rope_concentration(RopeScaling{});
  ASSERT_TRUE(gemv_fp8_rope_supported(g, r));
  gemv_fp8_rope_cpu(g, r);

  std::vector<uint16_t> qkv(size_t(T) * N), q2(q.size()), kc2(kc.size(), 0xFFFF), vc2 = kc2;
  GemvFp8Params g2 = g;
  g2.out = qkv.data();
  g2.ldc = N;
  gemv_fp8_cpu(g2);
  RopeParams r2 = r;
  r2.qkv = qkv.data();
  r2.qkv_stride = N;
  r2.q_out = q2.data();
  r2.k_cache = kc2.data();
  r2.v_cache = vc2.data();
  rope_cpu(r2);
  EXPECT_EQ(q, q2);
  EXPECT_EQ(kc, kc2);
  EXPECT_EQ(vc, vc2);
  EXPECT_EQ(vc[64 * 1], 0xFFFF) << "slot 1 (the padding token's) stays unwritten";
  // v is the GEMV's output as is (slot 2 ← token 0).
  for (int i = 0; i < 64; ++i) EXPECT_EQ(vc[2 * 64 + i], qkv[size_t(q_heads + kv_heads) * 64 + i]);

  g.M = 2;  // tokens and rows must agree
  EXPECT_FALSE(gemv_fp8_rope_supported(g, r));
}

}  // namespace
}  // namespace gossamer::kernels
