#include <algorithm>
#include <cmath>
#include <vector>

#include "core/dtype.h"
#include "kernels/gemv_mxfp4.h"
#include "kernels/mxfp4_tiled.h"
#include "kernels/swiglu.h"

namespace gossamer::kernels {

namespace {

// kFp8: x row [K] bf16 → its e4m3 values (as floats, x · 2^(7 − E) rounded) and per 128-column chunk the
// inverse factor 2^(E − 7), E = ⌊log2 max|x|⌋ of the chunk (the kernel's rule: a zero or subnormal max counts
// as E = −127; the exponent 7 − E clamped to [−126, 126]).
void quantize_x_row_fp8(const uint16_t* x, int K, std::vector<float>& q, std::vector<float>& inv) {
  for (int c = 0; c * 128 < K; ++c) {
    const int end = std::min(K, 128 * c + 128);
    float amax = 0.f;
    for (int k = 128 * c; k < end; ++k) amax = std::max(amax, std::fabs(bf16_to_float(x[k])));
    const int e = amax >= 0x1p-126f ? std::ilogb(amax) : -127;
    const int f = std::clamp(7 - e, -126, 126);
    inv[c] = std::ldexp(1.0f, -f);
    for (int k = 128 * c; k < end; ++k) q[k] = fp8e4m3_to_float(float_to_fp8e4m3(std::ldexp(bf16_to_float(x[k]), f)));
  }
}

}  // namespace

// Per output: for each 32-column MX block, the fp32 dot product of x with the block's fp4 values, times
// 2^(e − 127), added to the fp32 sum on top of the bias; one rounding to bf16 (after SwiGLU for kSwiGlu).
// kFp8: the same with x's e4m3 values, each block's product also times its chunk's inverse factor (exact).
void gemv_mxfp4_cpu(const GemvMxfp4Params& p) {
  const int64_t group_bytes = mxfp4_tiled_group_bytes(p.N, p.K);
  const bool fp8 = p.activations == GemvMxfp4Activations::kFp8;
  std::vector<float> x_row(p.K), out_row(p.N), x_inv((p.K + 127) / 128, 1.0f);
  auto one_row = [&](const uint16_t* x, int group, uint16_t* out) {
    if (fp8) {
      quantize_x_row_fp8(x, p.K, x_row, x_inv);
    } else {
      for (int k = 0; k < p.K; ++k) x_row[k] = bf16_to_float(x[k]);
    }
    const uint8_t* w = p.w + group * group_bytes;
    for (int n = 0; n < p.N; ++n) {
      float acc = p.bias ? bf16_to_float(p.bias[static_cast<int64_t>(group) * p.N + n]) : 0.f;
      for (int k0 = 0; k0 < p.K; k0 += 32) {
        float partial = 0.f;
        for (int k = k0; k < k0 + 32; ++k) partial += x_row[k] * fp4e2m1_to_float(mxfp4_tiled_code(w, n, k, p.K));
        acc += partial * std::ldexp(1.0f, int(mxfp4_tiled_scale(w, n, k0, p.K)) - 127) * x_inv[k0 / 128];
      }
      out_row[n] = acc;
    }
    if (p.epilogue == GemmEpilogue::kSwiGlu) {
      for (int n = 0; n < p.N; n += 2) out[n / 2] = float_to_bf16(swiglu_clamped_cpu(out_row[n], out_row[n + 1]));
    } else {
      for (int n = 0; n < p.N; ++n) out[n] = float_to_bf16(out_row[n]);
    }
  };
  if (!p.topk_ids) {
    for (int m = 0; m < p.M; ++m) one_row(p.x + m * p.ldx, 0, p.out + m * p.ldc);
    return;
  }
  for (int q = 0; q < p.num_pairs; ++q) {
    const int e = p.topk_ids[q] - p.expert_begin;
    const bool local = e >= 0 && e < p.num_local_experts;
    if (p.pair_row) p.pair_row[q] = local ? q : -1;
    if (local) one_row(p.x + (q / p.x_pair_divisor) * p.ldx, e, p.out + q * p.ldc);
  }
}

}  // namespace gossamer::kernels
