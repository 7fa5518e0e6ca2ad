#include <algorithm>
#include <cmath>

#include "core/dtype.h"
#include "kernels/mxfp4_convert.h"

namespace gossamer::kernels {

void mxfp4_to_fp8_cpu(const Mxfp4ToFp8Params& p) {
  const int mx_cols = p.cols / 32;
  const int rbs = (p.rows + 127) / 128, kbs = (p.cols + 127) / 128;
  for (int e = 0; e < p.num_experts; ++e) {
    for (int rb = 0; rb < rbs; ++rb) {
      for (int kb = 0; kb < kbs; ++kb) {
        const int r0 = rb * 128, r1 = std::min(p.rows, r0 + 128);
        const int m0 = kb * 4, m1 = std::min(mx_cols, m0 + 4);
        int e_max = 0;
        for (int r = r0; r < r1; ++r)
          for (int m = m0; m < m1; ++m) e_max = std::max(e_max, int(p.scales[(int64_t(e) * p.rows + r) * mx_cols + m]));
        p.out_scales[(int64_t(e) * rbs + rb) * kbs + kb] = std::ldexp(1.0f, e_max - 127 - 6);
        for (int r = r0; r < r1; ++r) {
          for (int m = m0; m < m1; ++m) {
            const int64_t mb = (int64_t(e) * p.rows + r) * mx_cols + m;
            const int shift = int(p.scales[mb]) - e_max + 6;
            for (int j = 0; j < 16; ++j) {
              const uint8_t byte = p.blocks[mb * 16 + j];
              uint8_t* dst = p.out + (int64_t(e) * p.rows + r) * p.cols + m * 32 + 2 * j;
              dst[0] = float_to_fp8e4m3(std::ldexp(fp4e2m1_to_float(byte & 0xF), shift));
              dst[1] = float_to_fp8e4m3(std::ldexp(fp4e2m1_to_float(byte >> 4), shift));
            }
          }
        }
      }
    }
  }
}

}  // namespace gossamer::kernels
