#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/dtype.h"
#include "core/parallel.h"
#include "kernels/gemm_w4a8.h"
#include "kernels/mxfp4_tiled.h"
#include "kernels/quantize_fp8.h"  // quantize_fp8_group_cpu
#include "kernels/swiglu.h"

namespace gossamer::kernels {
namespace {

// The e5m2 weight the kernel decodes for code `code` (e2m1, sign in bit 3) of an MX block with exponent e in a row
// whose largest is r, as a float: f16 fp4 · 2^-14 times the f16 2^(v − 15) (v = e − r + 30 clamped to [0, 30]; 0 for
// v = 0), rounded to f16, its high byte (gemm_w4a8_sm90.cu's load_fragments and block_multiplier).
float w4a8_weight(uint8_t code, int e, int r) {
  const uint32_t f16 = (uint32_t(code & 8u) << 12) | (uint32_t(code & 7u) << 9);
  const int v = std::min(std::max(e - r + 30, 0), 30);
  const uint32_t product = mxfp4_mul_f16x2(f16, static_cast<uint32_t>(v) << 10) & 0xFFFFu;
  return fp16_to_float(static_cast<uint16_t>(product & 0xFF00u));
}

// Stored column c of A (register order) holds source column w4a8_source_column(c).
int w4a8_source_column(int c) {
  return (c & ~31) + 4 * w4a8_source_word((c & 31) >> 2) + (c & 3);
}

}  // namespace

// NOTE: in grouped mode the reference reads group_offsets (host memory here) directly; tile lists are a GPU
// scheduling detail and are ignored.
void gemm_w4a8_cpu(const GemmW4A8Params& p) {
  const int groups = p.grouped.group_offsets ? p.grouped.num_groups : 1;
  // The weights as the kernel decodes them, with the row factors 2^(r − 128) ([G, N, K] f32, [G, N]).
  std::vector<float> w(static_cast<size_t>(groups) * p.N * p.K), row_factor(static_cast<size_t>(groups) * p.N);
  parallel_for(int64_t{groups} * p.N, 16, [&](int64_t r0, int64_t r1) {
    for (int64_t i = r0; i < r1; ++i) {
      const uint8_t* group = p.b + i / p.N * mxfp4_tiled_group_bytes(p.N, p.K);
      const int64_t n = i % p.N;
      const int r = p.b_row_exponents[i];
      row_factor[static_cast<size_t>(i)] = std::ldexp(1.0f, r - 128);
      for (int64_t k = 0; k < p.K; ++k) {
        w[static_cast<size_t>(i) * p.K + k] =
            w4a8_weight(mxfp4_tiled_code(group, n, k, p.K), mxfp4_tiled_scale(group, n, k, p.K), r);
      }
    }
  });
  const int64_t row_work = std::max<int64_t>(1, int64_t(p.N) * p.K);
  parallel_for(p.M, std::max<int64_t>(1, (int64_t{1} << 22) / row_work), [&](int64_t m0, int64_t m1) {
    std::vector<float> a_row(p.K), out_row(p.N);
    int group = 0;
    for (int m = static_cast<int>(m0); m < m1; ++m) {
      if (p.grouped.group_offsets) {
        if (m >= p.grouped.group_offsets[p.grouped.num_groups]) break;  // rows past every group are left untouched
        while (m >= p.grouped.group_offsets[group + 1]) ++group;
      }
      for (int c = 0; c < p.K; ++c) a_row[w4a8_source_column(c)] = fp8e4m3_to_float(p.a[int64_t{m} * p.lda + c]);
      const float a_scale = p.a_scales ? p.a_scales[m] : p.a_scale;
      for (int n = 0; n < p.N; ++n) {
        const size_t row = static_cast<size_t>(group) * p.N + n;
        const float* wr = w.data() + row * p.K;
        double acc = 0.0;
        for (int k = 0; k < p.K; ++k) acc += double(a_row[k]) * wr[k];
        const double bias = p.bias ? bf16_to_float(p.bias[row]) : 0.0;
        out_row[n] = static_cast<float>(acc * a_scale * row_factor[row] + bias);
      }
      if (p.epilogue == GemmEpilogue::kBias) {
        uint16_t* out = static_cast<uint16_t*>(p.out) + int64_t{m} * p.ldc;
        for (int n = 0; n < p.N; ++n) out[n] = float_to_bf16(out_row[n]);
        continue;
      }
      uint8_t* out = static_cast<uint8_t*>(p.out) + int64_t{m} * p.ldc;
      for (int c = 0; c < p.N / 2; ++c) {
        const int o = w4a8_source_column(c);
        out[c] = float_to_fp8e4m3(kW4A8HiddenScale * swiglu_clamped_cpu(out_row[2 * o], out_row[2 * o + 1]));
      }
    }
  });
}

void w4a8_activations_cpu(const uint16_t* x, int64_t ldx, int rows, int K, const int32_t* scatter_rows, uint8_t* out,
                          int64_t ldo, float* out_scales) {
  std::vector<float> row(K);
  std::vector<uint8_t> q(K);
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < K; ++c) row[c] = bf16_to_float(x[int64_t{r} * ldx + c]);
    const float scale = quantize_fp8_group_cpu(row.data(), K, q.data());
    for (int k = 0; k < 4; ++k) {
      const int32_t dst = scatter_rows[int64_t{r} * 4 + k];
      if (dst < 0) continue;
      out_scales[dst] = scale;
      for (int c = 0; c < K; ++c) out[int64_t{dst} * ldo + c] = q[w4a8_source_column(c)];
    }
  }
}

void mxfp4_tiled_row_exponents_cpu(const uint8_t* src, int groups, int n, int k, uint8_t* out) {
  for (int g = 0; g < groups; ++g) {
    const uint8_t* group = src + g * mxfp4_tiled_group_bytes(n, k);
    for (int row = 0; row < n; ++row) {
      int e = 0;
      for (int c = 0; c < k; c += 32) e = std::max(e, int(mxfp4_tiled_scale(group, row, c, k)));
      out[int64_t{g} * n + row] = static_cast<uint8_t>(e);
    }
  }
}

}  // namespace gossamer::kernels
