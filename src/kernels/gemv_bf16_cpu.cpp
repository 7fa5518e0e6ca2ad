#include "core/dtype.h"
#include "kernels/gemv_bf16.h"

namespace gossamer::kernels {

void gemv_bf16_cpu(const GemvBf16Params& p) {
  for (int m = 0; m < p.M; ++m) {
    for (int n = 0; n < p.N; ++n) {
      float acc = 0.f;
      for (int k = 0; k < p.K; ++k)
        acc += bf16_to_float(p.x[m * p.ldx + k]) * bf16_to_float(p.w[static_cast<int64_t>(n) * p.K + k]);
      const float bias = p.bias ? bf16_to_float(p.bias[n]) : 0.f;
      p.out[m * p.ldc + n] = float_to_bf16(acc + bias);
    }
  }
}

}  // namespace gossamer::kernels
