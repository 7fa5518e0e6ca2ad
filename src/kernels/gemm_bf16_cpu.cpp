#include <algorithm>
#include <cmath>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "kernels/gemm_bf16.h"
#include "kernels/moe.h"
#include "kernels/swiglu.h"

namespace gossamer::kernels {
namespace {

// Σ_k a[k]·b[k] in fp32 over 8 interleaved partial sums (K is a multiple of 16), so the loop vectorises;
// any fixed fp32 order is an equally valid reference for the GPU's tile order.
float dot_fp32(const float* a, const float* b, int K) {
  float part[8] = {};
  for (int k = 0; k < K; k += 8) {
    for (int j = 0; j < 8; ++j) part[j] += a[k + j] * b[k + j];
  }
  return ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
}

}  // namespace

// NOTE: in grouped mode the CPU reference reads group_offsets (host memory here) directly; tile lists
// are a GPU scheduling detail and are ignored.
void gemm_bf16_cpu(const GemmBf16Params& p) {
  GOSSAMER_CHECK(p.K % 16 == 0 && p.N % 8 == 0, "gemm_bf16_cpu: K must be a multiple of 16 and N of 8");
  std::vector<float> a_row(p.K);
  std::vector<float> b_group;  // [N, K] fp32 image of the current group's weights
  std::vector<float> out_row(p.N);
  int group = 0, loaded_group = -1;
  for (int m = 0; m < p.M; ++m) {
    if (p.group_offsets) {
      while (m >= p.group_offsets[group + 1]) ++group;
    }
    if (group != loaded_group) {
      const uint16_t* b = p.b + static_cast<int64_t>(group) * p.N * p.K;
      b_group.resize(static_cast<size_t>(p.N) * p.K);
      for (size_t i = 0; i < b_group.size(); ++i) b_group[i] = bf16_to_float(b[i]);
      loaded_group = group;
    }
    const int src = p.a_row_index ? p.a_row_index[m] : m;
    for (int k = 0; k < p.K; ++k) a_row[k] = bf16_to_float(p.a[static_cast<int64_t>(src) * p.lda + k]);
    for (int n = 0; n < p.N; ++n) {
      const float bias = p.bias ? bf16_to_float(p.bias[static_cast<int64_t>(group) * p.N + n]) : 0.f;
      out_row[n] = bias + dot_fp32(a_row.data(), b_group.data() + static_cast<size_t>(n) * p.K, p.K);
    }
    uint16_t* out = p.out + static_cast<int64_t>(m) * p.ldc;
    if (p.epilogue == GemmEpilogue::kSwiGlu) {
      for (int n = 0; n < p.N; n += 2) out[n / 2] = float_to_bf16(swiglu_clamped_cpu(out_row[n], out_row[n + 1]));
    } else {
      for (int n = 0; n < p.N; ++n) out[n] = float_to_bf16(out_row[n]);
    }
  }
}

void moe_bf16_cpu(const MoeBf16Params& p) {
  const int T = p.num_tokens, H = p.hidden, I = p.inter;
  std::vector<int32_t> ids(static_cast<size_t>(T) * kMoeTopK);
  std::vector<float> weights(static_cast<size_t>(T) * kMoeTopK);
  moe_route_cpu({p.logits, ids.data(), weights.data(), T, p.num_experts});
  // Rows of all (token, k) pairs per local expert, so each expert's weights are converted once.
  std::vector<std::vector<int>> expert_pairs(std::max(p.num_local_experts, 0));
  for (int i = 0; i < T * kMoeTopK; ++i) {
    const int e = ids[i] - p.expert_begin;
    if (e >= 0 && e < p.num_local_experts) expert_pairs[e].push_back(i);
  }
  // y[pair] (bf16, bias included) for pairs routed here, as the GPU path's permuted y.
  std::vector<uint16_t> y(static_cast<size_t>(T) * kMoeTopK * H);
  std::vector<uint16_t> h;
  for (int e = 0; e < p.num_local_experts; ++e) {
    const std::vector<int>& pairs = expert_pairs[e];
    if (pairs.empty()) continue;
    const int rows = static_cast<int>(pairs.size());
    std::vector<int32_t> tokens(rows);
    for (int r = 0; r < rows; ++r) tokens[r] = pairs[r] / kMoeTopK;
    h.assign(static_cast<size_t>(rows) * I, 0);
    std::vector<uint16_t> ye(static_cast<size_t>(rows) * H);
    GemmBf16Params g1;
    g1.a = p.x;
    g1.lda = H;
    g1.a_row_index = tokens.data();
    g1.b = p.w1 + static_cast<int64_t>(e) * 2 * I * H;
    g1.bias = p.b1 + static_cast<int64_t>(e) * 2 * I;
    g1.out = h.data();
    g1.ldc = I;
    g1.M = rows;
    g1.N = 2 * I;
    g1.K = H;
    g1.epilogue = GemmEpilogue::kSwiGlu;
    gemm_bf16_cpu(g1);
    GemmBf16Params g2;
    g2.a = h.data();
    g2.lda = I;
    g2.b = p.w2 + static_cast<int64_t>(e) * H * I;
    g2.bias = p.b2 + static_cast<int64_t>(e) * H;
    g2.out = ye.data();
    g2.ldc = H;
    g2.M = rows;
    g2.N = H;
    g2.K = I;
    gemm_bf16_cpu(g2);
    for (int r = 0; r < rows; ++r) {
      std::copy_n(ye.data() + static_cast<size_t>(r) * H, H, y.data() + static_cast<size_t>(pairs[r]) * H);
    }
  }
  // ---- combine: out = bf(residual + Σ_k w·y), fp32 ----
  std::vector<float> acc(H);
  for (int t = 0; t < T; ++t) {
    std::fill(acc.begin(), acc.end(), 0.f);
    for (int k = 0; k < kMoeTopK; ++k) {
      const int i = t * kMoeTopK + k;
      const int e = ids[i] - p.expert_begin;
      if (e < 0 || e >= p.num_local_experts) continue;
      const float w = weights[i];
      const uint16_t* yr = y.data() + static_cast<size_t>(i) * H;
      for (int c = 0; c < H; ++c) acc[c] += w * bf16_to_float(yr[c]);
    }
    for (int c = 0; c < H; ++c) {
      const float r = p.residual ? bf16_to_float(p.residual[static_cast<int64_t>(t) * H + c]) : 0.f;
      p.out[static_cast<int64_t>(t) * H + c] = float_to_bf16(r + acc[c]);
    }
  }
}

}  // namespace gossamer::kernels
