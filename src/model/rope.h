// YaRN rotary embedding tables for gpt-oss (NeoX half split, concentration on cos and sin).
//
// inv_freq follows transformers' `_compute_yarn_parameters` (fp32 pow, fractional correction range
// unless `truncate`); cos/sin(p) = C · cos/sin(p · ω_i) with C = 0.1·ln(factor) + 1 when factor > 1.
#pragma once

#include <vector>

#include "model/config.h"

namespace gossamer::model {

struct RopeTables {
  std::vector<float> inv_freq;  // [head_dim / 2]
  float concentration = 1.0f;

  static RopeTables from_config(const GptOssConfig& config);
  // cos and sin for one position: [head_dim / 2] each.
  void at(int32_t position, float* cos_out, float* sin_out) const;
};

// Rotates one head in place: x'[i] = a·cos − b·sin, x'[i+d/2] = b·cos + a·sin with a = x[i], b = x[i+d/2].
void apply_rope(float* head, int32_t head_dim, const float* cos, const float* sin);

}  // namespace gossamer::model
