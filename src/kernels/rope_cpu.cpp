#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/dtype.h"
#include "kernels/kv_cache_fp8.h"
#include "kernels/rope.h"
#include "kernels/rope_math.h"

namespace gossamer::kernels {

namespace {

bool is_yarn(const RopeScaling& s) {
  return s.factor > 1.0 && s.original_context > 0;
}

double correction_dim(double num_rotations, int dim, double base, double original_positions) {
  return (dim * std::log(original_positions / (num_rotations * 2.0 * std::numbers::pi))) / (2.0 * std::log(base));
}

}  // namespace

std::vector<float> rope_inv_freq(const RopeScaling& s, int head_dim) {
  const int dim = head_dim, half = dim / 2;
  std::vector<float> inv_freq(static_cast<size_t>(half));
  const float factor = static_cast<float>(s.factor);
  const bool yarn = is_yarn(s);
  double low = 0.0, high = 0.0;
  if (yarn) {
    low = correction_dim(s.beta_fast, dim, s.theta, s.original_context);
    high = correction_dim(s.beta_slow, dim, s.theta, s.original_context);
    if (s.truncate) {
      low = std::floor(low);
      high = std::ceil(high);
    }
    low = std::max(low, 0.0);
    high = std::min(high, static_cast<double>(dim - 1));
    if (low == high) high += 0.001;
  }
  for (int i = 0; i < half; ++i) {
    const float pos_freq = std::pow(static_cast<float>(s.theta), static_cast<float>(2 * i) / static_cast<float>(dim));
    const float extrapolation = 1.0f / pos_freq;
    if (!yarn) {
      inv_freq[static_cast<size_t>(i)] = extrapolation;
      continue;
    }
    const float interpolation = 1.0f / (factor * pos_freq);
    const float ramp =
        std::clamp((static_cast<float>(i) - static_cast<float>(low)) / static_cast<float>(high - low), 0.0f, 1.0f);
    const float extrapolation_weight = 1.0f - ramp;
    inv_freq[static_cast<size_t>(i)] =
        interpolation * (1.0f - extrapolation_weight) + extrapolation * extrapolation_weight;
  }
  return inv_freq;
}

float rope_concentration(const RopeScaling& s) {
  return is_yarn(s) ? static_cast<float>(0.1 * std::log(s.factor) + 1.0) : 1.0f;
}

void rope_cpu(const RopeParams& p) {
  const int num_heads = p.num_q_heads + 2 * p.num_kv_heads;
  for (int64_t t = 0; t < p.num_tokens; ++t) {
    const float pos = static_cast<float>(p.positions[t]);
    for (int h = 0; h < num_heads; ++h) {
      const uint16_t* src = p.qkv + t * p.qkv_stride + h * kHeadDim;
      uint16_t row[kHeadDim];
      std::copy(src, src + kHeadDim, row);
      const bool is_v = h >= p.num_q_heads + p.num_kv_heads;
      if (!is_v) {
        for (int i = 0; i < kHeadDim / 2; ++i) {
          float c, s, a, b;
          rope_cos_sin(pos, p.inv_freq[i], p.concentration, c, s);
          rope_rotate(bf16_to_float(src[i]), bf16_to_float(src[i + 32]), c, s, a, b);
          row[i] = float_to_bf16(a);
          row[i + 32] = float_to_bf16(b);
        }
      }
      if (h < p.num_q_heads) {
        std::copy(row, row + kHeadDim, p.q_out + (t * p.num_q_heads + h) * kHeadDim);
        continue;
      }
      const int kv = is_v ? h - p.num_q_heads - p.num_kv_heads : h - p.num_q_heads;
      uint16_t* plain = is_v ? p.v_out : p.k_out;
      if (plain) std::copy(row, row + kHeadDim, plain + (t * p.num_kv_heads + kv) * kHeadDim);
      void* cache = is_v ? p.v_cache : p.k_cache;
      if (cache && p.slots && p.slots[t] >= 0) {
        const int64_t at = (p.slots[t] * p.num_kv_heads + kv) * kHeadDim;
        if (p.kv_fp8) {
          const float* scales = is_v ? p.v_scale : p.k_scale;
          kv_fp8_quantize_rows_cpu(row, 1, 1, kHeadDim, scales ? scales + kv : nullptr,
                                   static_cast<uint8_t*>(cache) + at);
        } else {
          std::copy(row, row + kHeadDim, static_cast<uint16_t*>(cache) + at);
        }
      }
    }
  }
}

}  // namespace gossamer::kernels
