#include <algorithm>
#include <cmath>
#include <vector>

#include "core/dtype.h"
#include "core/parallel.h"
#include "kernels/fp8_tiled.h"
#include "kernels/gemm_fp8.h"
#include "kernels/swiglu.h"

namespace gossamer::kernels {

// NOTE: in grouped mode the CPU reference reads group_offsets (host memory here) directly; tile lists
// are a GPU scheduling detail and are ignored.
void gemm_fp8_cpu(const GemmFp8Params& p) {
  const int num_kb = (p.K + 127) / 128, num_nb = (p.N + 127) / 128;
  float lut[256];
  for (int i = 0; i < 256; ++i) lut[i] = fp8e4m3_to_float(static_cast<uint8_t>(i));
  const int64_t kp = fp8_tiled_pad(p.K);
  // Rows are independent: chunks of rows on worker threads give the same bits as one thread.
  const int64_t row_work = std::max<int64_t>(1, int64_t(p.N) * p.K);
  parallel_for(p.M, std::max<int64_t>(1, (int64_t{1} << 22) / row_work), [&](int64_t m0, int64_t m1) {
    std::vector<float> a_row(p.K);
    std::vector<float> out_row(p.N);
    int group = 0;
    for (int m = static_cast<int>(m0); m < m1; ++m) {
      if (p.grouped.group_offsets) {
        while (m >= p.grouped.group_offsets[group + 1]) ++group;
      }
      const int src = p.a_row_index ? p.a_row_index[m] : m;
      for (int k = 0; k < p.K; ++k) a_row[k] = lut[p.a[static_cast<int64_t>(src) * p.lda + k]];
      const uint8_t* b =
          p.b + static_cast<int64_t>(group) * (p.b_tiled ? fp8_tiled_group_bytes(p.N, p.K) : int64_t(p.N) * p.K);
      for (int n = 0; n < p.N; ++n) {
        float acc = p.bias ? bf16_to_float(p.bias[static_cast<int64_t>(group) * p.N + n]) : 0.f;
        for (int kb = 0; kb < num_kb; ++kb) {
          float partial = 0.f;
          const int k1 = std::min(p.K, (kb + 1) * 128);
          for (int k = kb * 128; k < k1; ++k)
            partial += a_row[k] * lut[b[p.b_tiled ? fp8_tiled_offset(n, k, kp) : static_cast<int64_t>(n) * p.K + k]];
          const float sa = p.a_scales[static_cast<int64_t>(src) * num_kb + kb];
          const float sb = p.b_scales[(static_cast<int64_t>(group) * num_nb + n / 128) * num_kb + kb];
          acc += partial * sa * sb;
        }
        out_row[n] = acc;
      }
      uint16_t* out = p.out + static_cast<int64_t>(m) * p.ldc;
      gemm_epilogue_cpu(out_row.data(), p.N, p.epilogue, out);
    }
  });
}

}  // namespace gossamer::kernels
