#include <cmath>
#include <vector>

#include "core/dtype.h"
#include "kernels/gemv_grouped.h"
#include "kernels/gemv_mxfp4.h"
#include "kernels/mxfp4_tiled.h"
#include "kernels/swiglu.h"

namespace gossamer::kernels {

// Per output: for each 32-column MX block, the fp32 dot product of x with the block's fp4 values, times
// 2^(e − 127), added to the fp32 sum on top of the bias; one rounding to bf16 (after SwiGLU for kSwiGlu).
void gemv_mxfp4_cpu(const GemvMxfp4Params& p) {
  const int64_t group_bytes = mxfp4_tiled_group_bytes(p.N, p.K);
  std::vector<float> x_row(p.K), out_row(p.N);
  auto one_row = [&](const uint16_t* x, int group, uint16_t* out) {
    for (int k = 0; k < p.K; ++k) x_row[k] = bf16_to_float(x[k]);
    const uint8_t* w = p.w + group * group_bytes;
    for (int n = 0; n < p.N; ++n) {
      float acc = p.bias ? bf16_to_float(p.bias[static_cast<int64_t>(group) * p.N + n]) : 0.f;
      for (int k0 = 0; k0 < p.K; k0 += 32) {
        float partial = 0.f;
        for (int k = k0; k < k0 + 32; ++k) partial += x_row[k] * fp4e2m1_to_float(mxfp4_tiled_code(w, n, k, p.K));
        acc += partial * std::ldexp(1.0f, int(mxfp4_tiled_scale(w, n, k0, p.K)) - 127);
      }
      out_row[n] = acc;
    }
    if (p.epilogue == GemmEpilogue::kSwiGlu) {
      for (int n = 0; n < p.N; n += 2) out[n / 2] = float_to_bf16(swiglu_clamped_cpu(out_row[n], out_row[n + 1]));
    } else {
      for (int n = 0; n < p.N; ++n) out[n] = float_to_bf16(out_row[n]);
    }
  };
  if (!gemv_grouped(p)) {
    for (int m = 0; m < p.M; ++m) one_row(p.x + m * p.ldx, 0, p.out + m * p.ldc);
    return;
  }
  gemv_grouped_cpu(p, one_row);
}

}  // namespace gossamer::kernels
