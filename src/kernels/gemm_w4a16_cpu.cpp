#include <algorithm>
#include <cmath>
#include <vector>

#include "core/dtype.h"
#include "core/parallel.h"
#include "kernels/gemm_w4a16.h"
#include "kernels/mxfp4_tiled.h"
#include "kernels/swiglu.h"  // gemm_epilogue_cpu

namespace gossamer::kernels {

// NOTE: in grouped mode the reference reads group_offsets (host memory here) directly; tile lists are a GPU
// scheduling detail and are ignored.
void gemm_w4a16_cpu(const GemmW4A16Params& p) {
  const int groups = p.grouped.group_offsets ? p.grouped.num_groups : 1;
  // The weights as the kernel decodes them: fp4 · 2^(e − 127), logical columns ([G, N, K] bf16, exact).
  const std::vector<uint16_t> w = mxfp4_tiled_to_bf16_cpu(p.b, groups, p.N, p.K);
  const int64_t row_work = std::max<int64_t>(1, int64_t(p.N) * p.K);
  parallel_for(p.M, std::max<int64_t>(1, (int64_t{1} << 22) / row_work), [&](int64_t m0, int64_t m1) {
    std::vector<float> a_row(p.K), out_row(p.N);
    std::vector<uint16_t> natural(p.N);
    int group = 0;
    for (int m = static_cast<int>(m0); m < m1; ++m) {
      if (p.grouped.group_offsets) {
        if (m >= p.grouped.group_offsets[p.grouped.num_groups]) break;  // rows past every group are left untouched
        while (m >= p.grouped.group_offsets[group + 1]) ++group;
      }
      // A as stored is in register order: stored column c holds logical column w4a16_source_column(c).
      for (int c = 0; c < p.K; ++c) a_row[w4a16_source_column(c)] = bf16_to_float(p.a[int64_t{m} * p.lda + c]);
      for (int n = 0; n < p.N; ++n) {
        const uint16_t* wr = w.data() + (static_cast<size_t>(group) * p.N + n) * p.K;
        double acc = p.bias ? bf16_to_float(p.bias[static_cast<int64_t>(group) * p.N + n]) : 0.0;
        for (int k = 0; k < p.K; ++k) acc += double(a_row[k]) * bf16_to_float(wr[k]);
        out_row[n] = static_cast<float>(acc);
      }
      uint16_t* out = p.out + int64_t{m} * p.ldc;
      if (!p.out_register_order) {
        gemm_epilogue_cpu(out_row.data(), p.N, p.epilogue, out);
        continue;
      }
      gemm_epilogue_cpu(out_row.data(), p.N, p.epilogue, natural.data());
      for (int c = 0; c < p.N / 2; ++c) out[c] = natural[w4a16_source_column(c)];
    }
  });
}

void w4a16_activations_cpu(const uint16_t* x, int64_t ldx, int rows, int K, const int32_t* scatter_rows, uint16_t* out,
                           int64_t ldo) {
  for (int r = 0; r < rows; ++r) {
    for (int k = 0; k < 4; ++k) {
      const int32_t dst = scatter_rows[int64_t{r} * 4 + k];
      if (dst < 0) continue;
      for (int c = 0; c < K; ++c) out[int64_t{dst} * ldo + c] = x[int64_t{r} * ldx + w4a16_source_column(c)];
    }
  }
}

}  // namespace gossamer::kernels
