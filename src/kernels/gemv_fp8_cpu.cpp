#include <algorithm>
#include <cmath>
#include <vector>

#include "core/dtype.h"
#include "kernels/fp8_tiled.h"
#include "kernels/gemv_fp8.h"
#include "kernels/gemv_grouped.h"
#include "kernels/swiglu.h"

namespace gossamer::kernels {

// Per output: fp32 dot products per 128-column block, times the block scale, summed over blocks on top
// of the bias; one rounding to bf16 (after SwiGLU for kSwiGlu).
void gemv_fp8_cpu(const GemvFp8Params& p) {
  const int num_kb = (p.K + 127) / 128, num_nb = (p.N + 127) / 128;
  float lut[256];
  for (int i = 0; i < 256; ++i) lut[i] = fp8e4m3_to_float(static_cast<uint8_t>(i));
  std::vector<float> x_row(p.K), out_row(p.N);
  // One output row from one x row with the weights of `group`.
  auto one_row = [&](const uint16_t* x, int group, uint16_t* out) {
    for (int k = 0; k < p.K; ++k) x_row[k] = bf16_to_float(x[k]);
    const uint8_t* w =
        p.w + static_cast<int64_t>(group) * (p.w_tiled ? fp8_tiled_group_bytes(p.N, p.K) : int64_t(p.N) * p.K);
    const int64_t kp = fp8_tiled_pad(p.K);
    const float* scales = p.w_scales + static_cast<int64_t>(group) * num_nb * num_kb;
    for (int n = 0; n < p.N; ++n) {
      float acc = p.bias ? bf16_to_float(p.bias[static_cast<int64_t>(group) * p.N + n]) : 0.f;
      for (int kb = 0; kb < num_kb; ++kb) {
        float partial = 0.f;
        const int k1 = std::min(p.K, (kb + 1) * 128);
        for (int k = kb * 128; k < k1; ++k)
          partial += x_row[k] * lut[w[p.w_tiled ? fp8_tiled_offset(n, k, kp) : static_cast<int64_t>(n) * p.K + k]];
        acc += partial * scales[(n / 128) * num_kb + kb];
      }
      out_row[n] = acc;
    }
    gemm_epilogue_cpu(out_row.data(), p.N, p.epilogue, out);
  };
  if (p.rope_epilogue) {  // the plain rows, then rope_cpu on them
    std::vector<uint16_t> qkv(static_cast<size_t>(p.M) * p.N);
    for (int m = 0; m < p.M; ++m) one_row(p.x + m * p.ldx, 0, qkv.data() + static_cast<size_t>(m) * p.N);
    RopeParams r = p.rope;
    r.qkv = qkv.data();
    r.qkv_stride = p.N;
    r.num_tokens = p.M;
    return rope_cpu(r);
  }
  if (!gemv_grouped(p)) {
    for (int m = 0; m < p.M; ++m) one_row(p.x + m * p.ldx, 0, p.out + m * p.ldc);
    return;
  }
  gemv_grouped_cpu(p, one_row);
}

}  // namespace gossamer::kernels
