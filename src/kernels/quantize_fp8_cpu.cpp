#include <algorithm>
#include <cmath>

#include "core/dtype.h"
#include "kernels/quantize_fp8.h"

namespace gossamer::kernels {

void quantize_fp8_cpu(const QuantizeFp8Params& p) {
  const int groups = (p.K + 127) / 128;
  const int64_t rows = p.num_valid_rows ? *p.num_valid_rows : p.M;
  for (int64_t r = 0; r < rows; ++r) {
    const uint16_t* x = p.x + (p.row_index ? p.row_index[r] : r) * p.ldx;
    for (int g = 0; g < groups; ++g) {
      const int c0 = g * 128, c1 = std::min(p.K, c0 + 128);
      float amax = 0.f;
      for (int c = c0; c < c1; ++c) amax = std::max(amax, std::fabs(bf16_to_float(x[c])));
      amax = std::max(amax, 1e-4f);
      const float inv = 448.0f / amax;
      p.scales[r * groups + g] = amax / 448.0f;
      for (int c = c0; c < c1; ++c) p.q[r * p.ldq + c] = float_to_fp8e4m3(bf16_to_float(x[c]) * inv);
    }
  }
}

}  // namespace gossamer::kernels
