#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "core/dtype.h"
#include "kernels/fp8_tiled.h"
#include "kernels/gemm_fp8.h"
#include "kernels/moe.h"
#include "kernels/quantize_fp8.h"

namespace gossamer::kernels {

void moe_route_cpu(const MoeRouteParams& p) {
  std::vector<int> order(p.num_experts);
  for (int t = 0; t < p.num_tokens; ++t) {
    const uint16_t* l = p.logits + static_cast<int64_t>(t) * p.num_experts;
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return bf16_to_float(l[a]) > bf16_to_float(l[b]); });
    float w[kMoeTopK], sum = 0.f;
    const float top = bf16_to_float(l[order[0]]);
    for (int k = 0; k < kMoeTopK; ++k) sum += (w[k] = std::exp(bf16_to_float(l[order[k]]) - top));
    for (int k = 0; k < kMoeTopK; ++k) {
      p.topk_ids[t * kMoeTopK + k] = order[k];
      p.topk_weights[t * kMoeTopK + k] = w[k] / sum;
    }
  }
}

void moe_cpu(const MoeParams& p) {
  const int T = p.num_tokens, H = p.hidden, I = p.inter;
  std::vector<int32_t> ids(T * kMoeTopK);
  std::vector<float> weights(T * kMoeTopK);
  moe_route_cpu({p.logits, ids.data(), weights.data(), T, p.num_experts});
  const int kb_h = (H + 127) / 128, kb_i = (I + 127) / 128;
  std::vector<uint8_t> xq(H), hq(I);
  std::vector<float> xs(kb_h), hs(kb_i);
  std::vector<uint16_t> h(I), y(H);
  std::vector<float> acc(H);
  for (int t = 0; t < T; ++t) {
    quantize_fp8_cpu({p.x + static_cast<int64_t>(t) * H, H, xq.data(), H, xs.data(), 1, H});
    std::fill(acc.begin(), acc.end(), 0.f);
    for (int k = 0; k < kMoeTopK; ++k) {
      const int e = ids[t * kMoeTopK + k] - p.expert_begin;
      if (e < 0 || e >= p.num_local_experts) continue;
      GemmFp8Params g1;
      g1.a = xq.data();
      g1.lda = H;
      g1.a_scales = xs.data();
      g1.b = p.w1 + static_cast<int64_t>(e) * (p.weights_tiled ? fp8_tiled_group_bytes(2 * I, H) : int64_t(2) * I * H);
      g1.b_tiled = p.weights_tiled;
      g1.b_scales = p.w1_scales + static_cast<int64_t>(e) * ((2 * I + 127) / 128) * kb_h;
      g1.bias = p.b1 + static_cast<int64_t>(e) * 2 * I;
      g1.out = h.data();
      g1.ldc = I;
      g1.M = 1;
      g1.N = 2 * I;
      g1.K = H;
      g1.epilogue = GemmEpilogue::kSwiGlu;
      gemm_fp8_cpu(g1);
      quantize_fp8_cpu({h.data(), I, hq.data(), I, hs.data(), 1, I});
      GemmFp8Params g2;
      g2.a = hq.data();
      g2.lda = I;
      g2.a_scales = hs.data();
      g2.b = p.w2 + static_cast<int64_t>(e) * (p.weights_tiled ? fp8_tiled_group_bytes(H, I) : int64_t(H) * I);
      g2.b_tiled = p.weights_tiled;
      g2.b_scales = p.w2_scales + static_cast<int64_t>(e) * ((H + 127) / 128) * kb_i;
      g2.bias = p.b2 + static_cast<int64_t>(e) * H;
      g2.out = y.data();
      g2.ldc = H;
      g2.M = 1;
      g2.N = H;
      g2.K = I;
      gemm_fp8_cpu(g2);
      const float w = weights[t * kMoeTopK + k];
      for (int c = 0; c < H; ++c) acc[c] += w * bf16_to_float(y[c]);
    }
    for (int c = 0; c < H; ++c) {
      const float r = p.residual ? bf16_to_float(p.residual[static_cast<int64_t>(t) * H + c]) : 0.f;
      p.out[static_cast<int64_t>(t) * H + c] = float_to_bf16(r + acc[c]);
    }
  }
}

}  // namespace gossamer::kernels
