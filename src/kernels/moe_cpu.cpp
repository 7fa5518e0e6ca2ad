#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "kernels/fp8_tiled.h"
#include "kernels/gemm_bf16.h"
#include "kernels/gemm_fp8.h"
#include "kernels/gemm_w4a8.h"
#include "kernels/gemv_fp8.h"
#include "kernels/gemv_mxfp4.h"
#include "kernels/moe.h"
#include "kernels/mxfp4_tiled.h"
#include "kernels/quantize_fp8.h"

namespace gossamer::kernels {
namespace {

// y rows [T·4, hidden] bf16 for the pairs of local expert e (in pair order); written by the caller's expert.
using ExpertRows = std::function<void(int e, const std::vector<int>& pairs, uint16_t* y)>;

// The reference composition of launch_moe and launch_moe_bf16: route → each local expert's (token, k)
// pairs → y per pair → weighted combine (+ residual).
void moe_compose_cpu(const uint16_t* logits, const uint16_t* residual, uint16_t* out, int T, int num_experts,
                     int expert_begin, int num_local_experts, int hidden, const ExpertRows& run_expert) {
  std::vector<int32_t> ids(static_cast<size_t>(T) * kMoeTopK), pair_row(ids.size(), -1);
  std::vector<float> weights(ids.size());
  moe_route_cpu({logits, ids.data(), weights.data(), T, num_experts});
  std::vector<std::vector<int>> expert_pairs(std::max(num_local_experts, 0));
  for (int i = 0; i < T * kMoeTopK; ++i) {
    const int e = ids[i] - expert_begin;
    if (e < 0 || e >= num_local_experts) continue;
    expert_pairs[e].push_back(i);
    pair_row[i] = i;
  }
  std::vector<uint16_t> y(static_cast<size_t>(T) * kMoeTopK * hidden);
  for (int e = 0; e < num_local_experts; ++e) {
    if (!expert_pairs[e].empty()) run_expert(e, expert_pairs[e], y.data());
  }
  moe_combine_cpu({y.data(), pair_row.data(), weights.data(), residual, out, T, hidden});
}

}  // namespace

void moe_topk_softmax_cpu(const float* logits, int num_experts, int k, int32_t* ids, float* weights) {
  for (int slot = 0; slot < k; ++slot) {
    int32_t best = -1;
    for (int i = 0; i < num_experts; ++i) {
      bool taken = false;
      for (int s = 0; s < slot; ++s) taken |= ids[s] == i;
      if (taken) continue;
      if (best < 0 || logits[i] > logits[best]) best = i;  // strict: ties keep the lower index
    }
    ids[slot] = best;
  }
  float sum = 0.f;
  for (int slot = 0; slot < k; ++slot) sum += (weights[slot] = std::exp(logits[ids[slot]] - logits[ids[0]]));
  for (int slot = 0; slot < k; ++slot) weights[slot] /= sum;
}

void moe_route_cpu(const MoeRouteParams& p) {
  std::vector<float> row(p.num_experts);
  for (int t = 0; t < p.num_tokens; ++t) {
    const uint16_t* l = p.logits + static_cast<int64_t>(t) * p.num_experts;
    for (int e = 0; e < p.num_experts; ++e) row[e] = bf16_to_float(l[e]);
    moe_topk_softmax_cpu(row.data(), p.num_experts, kMoeTopK, p.topk_ids + t * kMoeTopK, p.topk_weights + t * kMoeTopK);
  }
}

int moe_max_tiles(int num_tokens, int num_local_experts, int tile_rows) {
  return (num_tokens * kMoeTopK + tile_rows - 1) / tile_rows + num_local_experts;
}

void moe_plan_cpu(const MoePlanParams& p) {
  const int num_pairs = p.num_tokens * kMoeTopK;
  std::vector<int> count(p.num_local_experts, 0), tile_offset(p.num_local_experts, 0);
  for (int i = 0; i < num_pairs; ++i) {
    const int e = p.topk_ids[i] - p.expert_begin;
    if (e >= 0 && e < p.num_local_experts) ++count[e];
  }
  int rows = 0, tiles = 0;
  for (int e = 0; e < p.num_local_experts; ++e) {
    p.group_offsets[e] = rows;
    tile_offset[e] = tiles;
    for (int t = 0; t * p.tile_rows < count[e]; ++t) {
      p.tile_group[tiles] = e;
      p.tile_m0[tiles++] = rows + t * p.tile_rows;
    }
    rows += count[e];
  }
  p.group_offsets[p.num_local_experts] = rows;
  *p.num_tiles = tiles;
  std::fill(count.begin(), count.end(), 0);
  for (int i = 0; i < num_pairs; ++i) {
    const int e = p.topk_ids[i] - p.expert_begin;
    int row = -1;
    if (e >= 0 && e < p.num_local_experts) {
      row = p.group_offsets[e] + count[e]++;
      p.row_token[row] = i / kMoeTopK;
    }
    p.pair_row[i] = row;
  }
}

void moe_combine_cpu(const MoeCombineParams& p) {
  for (int t = 0; t < p.num_tokens; ++t) {
    for (int c = 0; c < p.hidden; ++c) {
      float sum = 0.f;
      for (int k = 0; k < kMoeTopK; ++k) {
        const int row = p.pair_row[t * kMoeTopK + k];
        if (row >= 0)
          sum += p.topk_weights[t * kMoeTopK + k] * bf16_to_float(p.y[static_cast<int64_t>(row) * p.hidden + c]);
      }
      const float r = p.residual ? bf16_to_float(p.residual[static_cast<int64_t>(t) * p.hidden + c]) : 0.f;
      p.out[static_cast<int64_t>(t) * p.hidden + c] = float_to_bf16(r + sum);
    }
  }
}

namespace {

// launch_moe with mxfp4_w4a8: per local expert, its pairs' tokens quantized per row (w4a8_activations_cpu), then
// gemm_w4a8_cpu for gate_up (e4m3 h at the fixed scale) and down on that expert's weights and row exponents.
void moe_w4a8_cpu(const MoeParams& p) {
  const int H = p.hidden, I = p.inter;
  moe_compose_cpu(p.logits, p.residual, p.out, p.num_tokens, p.num_experts, p.expert_begin, p.num_local_experts, H,
                  [&](int e, const std::vector<int>& pairs, uint16_t* y) {
                    const int n = static_cast<int>(pairs.size());
                    std::vector<uint8_t> xq(static_cast<size_t>(n) * H), hq(static_cast<size_t>(n) * I);
                    std::vector<float> xs(n);
                    std::vector<uint16_t> out(static_cast<size_t>(n) * H);
                    for (int i = 0; i < n; ++i) {
                      const int32_t dst[kMoeTopK] = {i, -1, -1, -1};
                      w4a8_activations_cpu(p.x + static_cast<int64_t>(pairs[i] / kMoeTopK) * H, H, 1, H, dst, xq.data(),
                                           H, xs.data());
                    }
                    GemmW4A8Params g1;
                    g1.a = xq.data();
                    g1.lda = H;
                    g1.a_scales = xs.data();
                    g1.b = p.w1 + static_cast<int64_t>(e) * mxfp4_tiled_group_bytes(2 * I, H);
                    g1.b_row_exponents = p.w1_row_exponents + static_cast<int64_t>(e) * 2 * I;
                    g1.bias = p.b1 + static_cast<int64_t>(e) * 2 * I;
                    g1.out = hq.data();
                    g1.ldc = I;
                    g1.M = n;
                    g1.N = 2 * I;
                    g1.K = H;
                    g1.epilogue = GemmEpilogue::kSwiGluFp8;
                    gemm_w4a8_cpu(g1);
                    GemmW4A8Params g2;
                    g2.a = hq.data();
                    g2.lda = I;
                    g2.a_scale = 1.0f / kW4A8HiddenScale;
                    g2.b = p.w2 + static_cast<int64_t>(e) * mxfp4_tiled_group_bytes(H, I);
                    g2.b_row_exponents = p.w2_row_exponents + static_cast<int64_t>(e) * H;
                    g2.bias = p.b2 + static_cast<int64_t>(e) * H;
                    g2.out = out.data();
                    g2.ldc = H;
                    g2.M = n;
                    g2.N = H;
                    g2.K = I;
                    gemm_w4a8_cpu(g2);
                    for (int i = 0; i < n; ++i) {
                      std::copy_n(out.begin() + static_cast<int64_t>(i) * H, H, y + static_cast<int64_t>(pairs[i]) * H);
                    }
                  });
}

}  // namespace

void moe_cpu(const MoeParams& p) {
  if (p.weights_mxfp4 && p.mxfp4_w4a8) {
    GOSSAMER_CHECK(!p.combine_deferred, "moe_cpu: MXFP4 experts with a deferred combine are not modelled");
    return moe_w4a8_cpu(p);
  }
  if (p.weights_mxfp4) {  // the W4A16 GEMMs: launch_moe_bf16's arithmetic on the experts decoded to bf16 (exact)
    GOSSAMER_CHECK(!p.combine_deferred, "moe_cpu: MXFP4 experts with a deferred combine are not modelled");
    const int E = p.num_local_experts, H = p.hidden, I = p.inter;
    const std::vector<uint16_t> w1 = mxfp4_tiled_to_bf16_cpu(p.w1, E, 2 * I, H),
                                w2 = mxfp4_tiled_to_bf16_cpu(p.w2, E, H, I);
    MoeBf16Params q;
    q.x = p.x;
    q.logits = p.logits;
    q.residual = p.residual;
    q.out = p.out;
    q.w1 = w1.data();
    q.b1 = p.b1;
    q.w2 = w2.data();
    q.b2 = p.b2;
    q.num_tokens = p.num_tokens;
    q.num_experts = p.num_experts;
    q.expert_begin = p.expert_begin;
    q.num_local_experts = E;
    q.hidden = H;
    q.inter = I;
    return moe_bf16_cpu(q);
  }
  const int H = p.hidden, I = p.inter;
  const int kb_h = (H + 127) / 128, kb_i = (I + 127) / 128;
  std::vector<uint8_t> xq(H), hq(I);
  std::vector<float> xs(kb_h), hs(kb_i);
  std::vector<uint16_t> h(I);
  moe_compose_cpu(
      p.logits, p.residual, p.out, p.num_tokens, p.num_experts, p.expert_begin, p.num_local_experts, H,
      [&](int e, const std::vector<int>& pairs, uint16_t* y) {
        for (const int pair : pairs) {
          const int t = pair / kMoeTopK;
          quantize_fp8_cpu({p.x + static_cast<int64_t>(t) * H, H, xq.data(), H, xs.data(), 1, H});
          GemmFp8Params g1;
          g1.a = xq.data();
          g1.lda = H;
          g1.a_scales = xs.data();
          g1.b =
              p.w1 + static_cast<int64_t>(e) * (p.weights_tiled ? fp8_tiled_group_bytes(2 * I, H) : int64_t(2) * I * H);
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
          g2.out = y + static_cast<int64_t>(pair) * H;
          g2.ldc = H;
          g2.M = 1;
          g2.N = H;
          g2.K = I;
          gemm_fp8_cpu(g2);
        }
      });
}

void moe_bf16_cpu(const MoeBf16Params& p) {
  const int H = p.hidden, I = p.inter;
  // All of an expert's pairs in one GEMM, so its weights are converted once.
  moe_compose_cpu(p.logits, p.residual, p.out, p.num_tokens, p.num_experts, p.expert_begin, p.num_local_experts, H,
                  [&](int e, const std::vector<int>& pairs, uint16_t* y) {
                    const int rows = static_cast<int>(pairs.size());
                    std::vector<int32_t> tokens(rows);
                    for (int r = 0; r < rows; ++r) tokens[r] = pairs[r] / kMoeTopK;
                    std::vector<uint16_t> h(static_cast<size_t>(rows) * I), ye(static_cast<size_t>(rows) * H);
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
                    for (int r = 0; r < rows; ++r)
                      std::copy_n(ye.data() + static_cast<size_t>(r) * H, H, y + static_cast<size_t>(pairs[r]) * H);
                  });
}

GemvFp8Params moe_decode_projection(const MoeParams& p, bool gate_up, const int32_t* topk_ids, uint16_t* act,
                                    int32_t* pair_row, uint16_t* y) {
  GemvFp8Params g;
  g.x = gate_up ? p.x : act;
  g.ldx = gate_up ? p.hidden : p.inter;
  g.w = gate_up ? p.w1 : p.w2;
  g.w_tiled = p.weights_tiled;
  g.w_scales = gate_up ? p.w1_scales : p.w2_scales;
  g.bias = gate_up ? p.b1 : p.b2;
  g.out = gate_up ? act : y;
  g.ldc = gate_up ? p.inter : p.hidden;
  g.N = gate_up ? 2 * p.inter : p.hidden;
  g.K = gate_up ? p.hidden : p.inter;
  g.epilogue = gate_up ? GemmEpilogue::kSwiGlu : GemmEpilogue::kBias;
  g.topk_ids = topk_ids;
  g.num_pairs = p.num_tokens * kMoeTopK;
  g.expert_begin = p.expert_begin;
  g.num_local_experts = p.num_local_experts;
  g.x_pair_divisor = gate_up ? kMoeTopK : 1;
  g.pair_row = gate_up ? pair_row : nullptr;
  g.topk_from_earlier_kernel = !gate_up;
  return g;
}

void moe_decode_cpu(const MoeParams& p) {
  const int T = p.num_tokens, pairs = T * kMoeTopK;
  std::vector<int32_t> ids(pairs), pair_row(pairs);
  std::vector<float> weights(pairs);
  moe_route_cpu({p.logits, ids.data(), weights.data(), T, p.num_experts});
  std::vector<uint16_t> act(size_t(pairs) * p.inter), y(size_t(pairs) * p.hidden);
  // MXFP4 experts (weights_mxfp4) go through their own GEMV reference with the same grouped contract.
  const auto gemv = [&](const GemvFp8Params& g) {
    if (p.weights_mxfp4) {
      gemv_mxfp4_cpu(gemv_mxfp4_params_of(g));
    } else {
      gemv_fp8_cpu(g);
    }
  };
  gemv(moe_decode_projection(p, true, ids.data(), act.data(), pair_row.data(), y.data()));
  gemv(moe_decode_projection(p, false, ids.data(), act.data(), pair_row.data(), y.data()));
  moe_combine_cpu({y.data(), pair_row.data(), weights.data(), p.residual, p.out, T, p.hidden});
}

}  // namespace gossamer::kernels
