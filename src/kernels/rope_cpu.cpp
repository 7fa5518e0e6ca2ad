#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/dtype.h"
#include "kernels/rope.h"

namespace gossamer::kernels {

std::array<float, kHeadDim / 2> yarn_inv_freq(const YarnConfig& c) {
  const double d = kHeadDim;
  const double low = d * std::log(c.original_context / (c.beta_fast * 2.0 * std::numbers::pi)) /
                     (2.0 * std::log(c.theta));
  const double high = d * std::log(c.original_context / (c.beta_slow * 2.0 * std::numbers::pi)) /
                      (2.0 * std::log(c.theta));
  std::array<float, kHeadDim / 2> out{};
  for (int i = 0; i < kHeadDim / 2; ++i) {
    const float f = std::pow(static_cast<float>(c.theta), static_cast<float>(2 * i) / static_cast<float>(d));
    const float w_ext = 1.0f / f;
    const float w_int = 1.0f / (static_cast<float>(c.factor) * f);
    const float r = std::clamp(static_cast<float>((i - low) / (high - low)), 0.0f, 1.0f);
    out[i] = w_int * r + w_ext * (1.0f - r);
  }
  return out;
}

float yarn_concentration(const YarnConfig& c) { return static_cast<float>(0.1 * std::log(c.factor) + 1.0); }

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
          const float angle = pos * p.inv_freq[i];
          const float c = round_to_bf16(std::cos(angle) * p.concentration);
          const float s = round_to_bf16(std::sin(angle) * p.concentration);
          const float a = bf16_to_float(src[i]);
          const float b = bf16_to_float(src[i + 32]);
          row[i] = float_to_bf16(a * c - b * s);
          row[i + 32] = float_to_bf16(b * c + a * s);
        }
      }
      if (h < p.num_q_heads) {
        std::copy(row, row + kHeadDim, p.q_out + (t * p.num_q_heads + h) * kHeadDim);
        continue;
      }
      const int kv = is_v ? h - p.num_q_heads - p.num_kv_heads : h - p.num_q_heads;
      uint16_t* plain = is_v ? p.v_out : p.k_out;
      if (plain) std::copy(row, row + kHeadDim, plain + (t * p.num_kv_heads + kv) * kHeadDim);
      uint16_t* cache = is_v ? p.v_cache : p.k_cache;
      if (cache && p.slots && p.slots[t] >= 0) {
        std::copy(row, row + kHeadDim, cache + (p.slots[t] * p.num_kv_heads + kv) * kHeadDim);
      }
    }
  }
}

}  // namespace gossamer::kernels
