// YaRN rotary embedding tables for gpt-oss (NeoX half split, concentration on cos and sin).
//
// inv_freq and C come from the config through kernels/rope.h (rope_inv_freq, rope_concentration: the one
// table of both backends); cos/sin(p) = C · cos/sin(p · ω_i).
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
