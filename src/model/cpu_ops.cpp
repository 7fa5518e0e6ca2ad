#include "model/cpu_ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "core/parallel.h"
#include "kernels/quantize_fp8.h"

namespace gossamer::model::cpu {

namespace {

float dot(const float* a, const float* b, int64_t n) {
  // Eight independent partial sums: vectorisable without -ffast-math, and deterministic.
  float partial[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int lane = 0; lane < 8; ++lane) partial[lane] += a[i + lane] * b[i + lane];
  }
  float sum = 0.0f;
  for (; i < n; ++i) sum += a[i] * b[i];
  for (int lane = 0; lane < 8; ++lane) sum += partial[lane];
  return sum;
}

constexpr int64_t kRowBlock = 16;  // weight rows converted to f32 at a time

}  // namespace

void load_row(const TensorView& tensor, int64_t row, float* out) {
  const int64_t cols = tensor.shape.rank >= 2 ? tensor.shape[tensor.shape.rank - 1] : tensor.num_elements();
  const uint8_t* base = static_cast<const uint8_t*>(tensor.data) + row * cols * size_of(tensor.dtype);
  switch (tensor.dtype) {
    case DType::kF32: std::memcpy(out, base, static_cast<size_t>(cols) * 4); return;
    case DType::kBF16:
      for (int64_t i = 0; i < cols; ++i) {
        uint16_t bits;
        std::memcpy(&bits, base + 2 * i, 2);
        out[i] = bf16_to_float(bits);
      }
      return;
    case DType::kF16:
      for (int64_t i = 0; i < cols; ++i) {
        uint16_t bits;
        std::memcpy(&bits, base + 2 * i, 2);
        out[i] = fp16_to_float(bits);
      }
      return;
    default: GOSSAMER_ASSERT(false, "load_row on dtype ", name_of(tensor.dtype));
  }
}

std::vector<float> to_f32(const TensorView& tensor) {
  std::vector<float> out(static_cast<size_t>(tensor.num_elements()));
  TensorView flat = tensor;
  flat.shape = Shape{tensor.num_elements()};
  load_row(flat, 0, out.data());
  return out;
}

void matmul_bias(const float* x, int64_t num_rows, const TensorView& weight, const float* bias, float* out) {
  const int64_t n = weight.shape[0], k = weight.shape[1];
  const int64_t num_blocks = (n + kRowBlock - 1) / kRowBlock;
  parallel_for(num_blocks, 4, [&](int64_t block_begin, int64_t block_end) {
    std::vector<float> rows(static_cast<size_t>(kRowBlock * k));
    for (int64_t block = block_begin; block < block_end; ++block) {
      const int64_t row0 = block * kRowBlock, count = std::min(kRowBlock, n - row0);
      for (int64_t r = 0; r < count; ++r) load_row(weight, row0 + r, rows.data() + r * k);
      for (int64_t t = 0; t < num_rows; ++t) {
        const float* xt = x + t * k;
        float* yt = out + t * n + row0;
        for (int64_t r = 0; r < count; ++r) yt[r] = dot(xt, rows.data() + r * k, k) + (bias ? bias[row0 + r] : 0.0f);
      }
    }
  });
}

void matmul_bias_f32(const float* x, int64_t num_rows, const float* weight, int64_t n, int64_t k, const float* bias,
                     float* out) {
  const int64_t num_blocks = (n + kRowBlock - 1) / kRowBlock;
  parallel_for(num_blocks, 4, [&](int64_t block_begin, int64_t block_end) {
    for (int64_t block = block_begin; block < block_end; ++block) {
      const int64_t row0 = block * kRowBlock, count = std::min(kRowBlock, n - row0);
      for (int64_t t = 0; t < num_rows; ++t) {
        const float* xt = x + t * k;
        float* yt = out + t * n + row0;
        for (int64_t r = 0; r < count; ++r)
          yt[r] = dot(xt, weight + (row0 + r) * k, k) + (bias ? bias[row0 + r] : 0.0f);
      }
    }
  });
}

void decode_mxfp4_expert(const MxFp4Tensor& tensor, int64_t expert, float* out) {
  const int64_t rows = tensor.rows(), groups = tensor.cols() / 32;
  const uint8_t* blocks = static_cast<const uint8_t*>(tensor.blocks.data) + expert * rows * groups * 16;
  const uint8_t* scales = static_cast<const uint8_t*>(tensor.scales.data) + expert * rows * groups;
  parallel_for(rows, 64, [&](int64_t row_begin, int64_t row_end) {
    for (int64_t row = row_begin; row < row_end; ++row) {
      for (int64_t g = 0; g < groups; ++g) {
        const float scale = e8m0_to_float(scales[row * groups + g]);
        const uint8_t* bytes = blocks + (row * groups + g) * 16;
        float* dst = out + row * groups * 32 + g * 32;
        for (int j = 0; j < 16; ++j) {
          dst[2 * j] = fp4e2m1_to_float(bytes[j] & 0xF) * scale;
          dst[2 * j + 1] = fp4e2m1_to_float(bytes[j] >> 4) * scale;
        }
      }
    }
  });
}

void round_to_bf16(float* x, int64_t count) {
  for (int64_t i = 0; i < count; ++i) x[i] = bf16_to_float(float_to_bf16(x[i]));
}

void fake_quantize_fp8_activations(float* x, int64_t num_rows, int64_t k) {
  round_to_bf16(x, num_rows * k);
  uint8_t q[128];
  for (int64_t r = 0; r < num_rows; ++r) {
    for (int64_t c0 = 0; c0 < k; c0 += 128) {
      float* group = x + r * k + c0;
      const int64_t width = std::min<int64_t>(128, k - c0);
      const float scale = kernels::quantize_fp8_group_cpu(group, width, q);
      for (int64_t c = 0; c < width; ++c) group[c] = fp8e4m3_to_float(q[c]) * scale;
    }
  }
}

std::vector<float> fake_quantize_fp8_blocks(const float* w, int64_t n, int64_t k) {
  std::vector<float> out(static_cast<size_t>(n * k));
  for (int64_t r0 = 0; r0 < n; r0 += 128) {
    for (int64_t c0 = 0; c0 < k; c0 += 128) {
      const int64_t rows = std::min<int64_t>(128, n - r0), width = std::min<int64_t>(128, k - c0);
      float* block = out.data() + r0 * k + c0;
      const float scale = kernels::quantize_fp8_weight_block_cpu(
          w + r0 * k + c0, k, rows, width,
          [&](int64_t r, int64_t c, uint8_t q) { block[r * k + c] = fp8e4m3_to_float(q); });
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < width; ++c) block[r * k + c] *= scale;
      }
    }
  }
  return out;
}

}  // namespace gossamer::model::cpu
