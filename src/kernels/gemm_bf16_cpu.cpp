#include <algorithm>
#include <cmath>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "core/parallel.h"
#include "kernels/gemm_bf16.h"
#include "kernels/swiglu.h"

namespace gossamer::kernels {
namespace {

// Σ_k a[k]·b[k] in fp32 over 8 interleaved partial sums (K is a multiple of 16), so the loop vectorises;
// any fixed fp32 order is an equally valid reference for the GPU's tile order.
float dot_fp32(const float* a, const float* b, int K) {
  float part[8] = {};
  for (int k = 0; k < K; k += 8) {
    for (int j = 0; j < 8; ++j) part[j] += a[k + j] * b[k + j];
  }
  return ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
}

}  // namespace

// NOTE: in grouped mode the CPU reference reads group_offsets (host memory here) directly; tile lists
// are a GPU scheduling detail and are ignored.
void gemm_bf16_cpu(const GemmBf16Params& p) {
  GOSSAMER_CHECK(p.K % 16 == 0 && p.N % 8 == 0, "gemm_bf16_cpu: K must be a multiple of 16 and N of 8");
  // Rows are independent: chunks of rows on worker threads give the same bits as one thread.
  const int64_t row_work = std::max<int64_t>(1, int64_t(p.N) * p.K);
  parallel_for(p.M, std::max<int64_t>(1, (int64_t{1} << 22) / row_work), [&](int64_t m0, int64_t m1) {
    std::vector<float> a_row(p.K);
    std::vector<float> b_group;  // [N, K] fp32 image of the current group's weights
    std::vector<float> out_row(p.N);
    int group = 0, loaded_group = -1;
    for (int m = static_cast<int>(m0); m < m1; ++m) {
      if (p.grouped.group_offsets) {
        while (m >= p.grouped.group_offsets[group + 1]) ++group;
      }
      if (group != loaded_group) {
        const uint16_t* b = p.b + static_cast<int64_t>(group) * p.N * p.K;
        b_group.resize(static_cast<size_t>(p.N) * p.K);
        for (size_t i = 0; i < b_group.size(); ++i) b_group[i] = bf16_to_float(b[i]);
        loaded_group = group;
      }
      const int src = p.a_row_index ? p.a_row_index[m] : m;
      for (int k = 0; k < p.K; ++k) a_row[k] = bf16_to_float(p.a[static_cast<int64_t>(src) * p.lda + k]);
      for (int n = 0; n < p.N; ++n) {
        const float bias = p.bias ? bf16_to_float(p.bias[static_cast<int64_t>(group) * p.N + n]) : 0.f;
        out_row[n] = bias + dot_fp32(a_row.data(), b_group.data() + static_cast<size_t>(n) * p.K, p.K);
      }
      uint16_t* out = p.out + static_cast<int64_t>(m) * p.ldc;
      gemm_epilogue_cpu(out_row.data(), p.N, p.epilogue, out);
    }
  });
}
}  // namespace gossamer::kernels
