#include <algorithm>
#include <cmath>
#include <vector>

#include "core/dtype.h"
#include "kernels/quantize_fp8.h"

namespace gossamer::kernels {

float quantize_fp8_group_cpu(const float* x, int64_t n, uint8_t* q) {
  float amax = 0.f;
  for (int64_t c = 0; c < n; ++c) amax = std::max(amax, std::fabs(x[c]));
  amax = std::max(amax, 1e-4f);
  const float inv = 448.0f / amax;
  for (int64_t c = 0; c < n; ++c) q[c] = float_to_fp8e4m3(x[c] * inv);
  return amax / 448.0f;
}

void quantize_fp8_cpu(const QuantizeFp8Params& p) {
  const int groups = (p.K + 127) / 128;
  std::vector<float> group(128);
  const int64_t rows = p.num_valid_rows ? *p.num_valid_rows : p.M;
  std::vector<uint8_t> q(p.K);
  for (int64_t r = 0; r < rows; ++r) {
    const uint16_t* x = p.x + (p.row_index ? p.row_index[r] : r) * p.ldx;
    const int width_out = p.scatter_rows ? p.scatter_width : 1;
    for (int g = 0; g < groups; ++g) {
      const int c0 = g * 128, width = std::min(p.K, c0 + 128) - c0;
      for (int c = 0; c < width; ++c) group[c] = bf16_to_float(x[c0 + c]);
      const float scale = quantize_fp8_group_cpu(group.data(), width, q.data() + c0);
      for (int k = 0; k < width_out; ++k) {
        const int64_t out = p.scatter_rows ? p.scatter_rows[r * p.scatter_width + k] : r;
        if (out < 0) continue;
        p.scales[out * groups + g] = scale;
        std::copy(q.begin() + c0, q.begin() + c0 + width, p.q + out * p.ldq + c0);
      }
    }
  }
}

}  // namespace gossamer::kernels
