#include "model/rope.h"

#include <cmath>

#include "kernels/rope.h"

namespace gossamer::model {

RopeTables RopeTables::from_config(const GptOssConfig& config) {
  const kernels::RopeScaling scaling{
      config.rope_theta,     config.rope_scaling_factor, config.rope_original_max_positions,
      config.rope_beta_fast, config.rope_beta_slow,      config.rope_truncate};
  return RopeTables{kernels::rope_inv_freq(scaling, config.head_dim), kernels::rope_concentration(scaling)};
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
