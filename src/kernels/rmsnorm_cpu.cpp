#include <algorithm>
#include <cmath>
#include <vector>

#include "core/dtype.h"
#include "kernels/moe.h"           // moe_combine_cpu
#include "kernels/quantize_fp8.h"  // quantize_fp8_cpu
#include "kernels/rmsnorm.h"

namespace gossamer::kernels {

void rmsnorm_f32_cpu(const float* x, int64_t num_rows, int64_t hidden, const float* weight, float eps, float* y) {
  for (int64_t t = 0; t < num_rows; ++t) {
    const float* xt = x + t * hidden;
    float* yt = y + t * hidden;
    double sum_squares = 0.0;
    for (int64_t i = 0; i < hidden; ++i) sum_squares += static_cast<double>(xt[i]) * xt[i];
    const float inv = 1.0f / std::sqrt(static_cast<float>(sum_squares / static_cast<double>(hidden)) + eps);
    for (int64_t i = 0; i < hidden; ++i) yt[i] = (xt[i] * inv) * weight[i];
  }
}

void rmsnorm_cpu(const RmsNormParams& p) {
  if (p.moe_y) {  // x from the MoE pieces: moe_combine_cpu's rows (no residual), then the norm as usual
    std::vector<uint16_t> x(static_cast<size_t>(p.num_tokens) * p.hidden);
    moe_combine_cpu({p.moe_y, p.moe_pair_row, p.moe_topk_weights, nullptr, x.data(), p.num_tokens, p.hidden});
    RmsNormParams combined = p;
    combined.x = x.data();
    combined.moe_y = nullptr;
    combined.moe_pair_row = nullptr;
    combined.moe_topk_weights = nullptr;
    return rmsnorm_cpu(combined);
  }
  for (int64_t t = 0; t < p.num_tokens; ++t) {
    const int64_t base = t * p.hidden;
    float sum_sq = 0.f;
    std::vector<float> s(p.hidden);
    for (int i = 0; i < p.hidden; ++i) {
      float v = bf16_to_float(p.x[base + i]);
      if (p.residual) {
        const uint16_t sum = float_to_bf16(v + bf16_to_float(p.residual[base + i]));
        p.residual[base + i] = sum;
        v = bf16_to_float(sum);
      }
      s[i] = v;
      sum_sq += v * v;
    }
    const float inv_rms = 1.0f / std::sqrt(sum_sq / static_cast<float>(p.hidden) + p.eps);
    std::vector<uint16_t> normed(p.hidden);
    for (int i = 0; i < p.hidden; ++i) normed[i] = float_to_bf16(s[i] * inv_rms * bf16_to_float(p.weight[i]));
    if (p.out) std::copy(normed.begin(), normed.end(), p.out + base);
    if (p.out_q) {
      const int groups = (p.hidden + 127) / 128;
      quantize_fp8_cpu({normed.data(), p.hidden, p.out_q + t * p.ldq, p.ldq, p.out_scales + t * groups, 1, p.hidden});
    }
  }
}

}  // namespace gossamer::kernels
