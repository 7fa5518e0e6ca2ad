#include "model/rope.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace gossamer::model {

namespace {
double correction_dim(double num_rotations, int dim, double base, double original_positions) {
  return (dim * std::log(original_positions / (num_rotations * 2.0 * std::numbers::pi))) / (2.0 * std::log(base));
}
}  // namespace

RopeTables RopeTables::from_config(const GptOssConfig& config) {
  RopeTables tables;
  const int dim = config.head_dim, half = dim / 2;
  tables.inv_freq.resize(static_cast<size_t>(half));
  const float factor = static_cast<float>(config.rope_scaling_factor);
  const bool yarn = config.rope_scaling_factor > 1.0 && config.rope_original_max_positions > 0;
  double low = 0.0, high = 0.0;
  if (yarn) {
    low = correction_dim(config.rope_beta_fast, dim, config.rope_theta, config.rope_original_max_positions);
    high = correction_dim(config.rope_beta_slow, dim, config.rope_theta, config.rope_original_max_positions);
    if (config.rope_truncate) {
      low = std::floor(low);
      high = std::ceil(high);
    }
    low = std::max(low, 0.0);
    high = std::min(high, static_cast<double>(dim - 1));
    if (low == high) high += 0.001;
    tables.concentration = static_cast<float>(0.1 * std::log(config.rope_scaling_factor) + 1.0);
  }
  for (int i = 0; i < half; ++i) {
    const float pos_freq = std::pow(static_cast<float>(config.rope_theta), static_cast<float>(2 * i) / static_cast<float>(dim));
    const float extrapolation = 1.0f / pos_freq;
    if (!yarn) {
      tables.inv_freq[static_cast<size_t>(i)] = extrapolation;
      continue;
    }
    const float interpolation = 1.0f / (factor * pos_freq);
    const float ramp = std::clamp((static_cast<float>(i) - static_cast<float>(low)) / static_cast<float>(high - low), 0.0f, 1.0f);
    const float extrapolation_weight = 1.0f - ramp;
    tables.inv_freq[static_cast<size_t>(i)] =
        interpolation * (1.0f - extrapolation_weight) + extrapolation * extrapolation_weight;
  }
  return tables;
}

void RopeTables::at(int32_t position, float* cos_out, float* sin_out) const {
  for (size_t i = 0; i < inv_freq.size(); ++i) {
    const float angle = static_cast<float>(position) * inv_freq[i];  // fp32 product, as the references
    cos_out[i] = static_cast<float>(std::cos(static_cast<double>(angle))) * concentration;
    sin_out[i] = static_cast<float>(std::sin(static_cast<double>(angle))) * concentration;
  }
}

void apply_rope(float* head, int32_t head_dim, const float* cos, const float* sin) {
  const int32_t half = head_dim / 2;
  for (int32_t i = 0; i < half; ++i) {
    const float a = head[i], b = head[i + half];
    head[i] = a * cos[i] - b * sin[i];
    head[i + half] = b * cos[i] + a * sin[i];
  }
}

}  // namespace gossamer::model
