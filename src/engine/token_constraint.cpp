#include "engine/token_constraint.h"

#include <limits>

namespace gossamer::engine {

void apply_token_mask(std::span<float> logits, std::span<const uint32_t> mask) {
  const float minus_infinity = -std::numeric_limits<float>::infinity();
  for (size_t t = 0; t < logits.size(); ++t) {
    if (((mask[t / 32] >> (t % 32)) & 1u) == 0) logits[t] = minus_infinity;
  }
}

bool token_mask_allows_any(std::span<const uint32_t> mask, int32_t vocab_size) {
  for (int32_t w = 0; w * 32 < vocab_size; ++w) {
    uint32_t word = mask[static_cast<size_t>(w)];
    if (vocab_size - w * 32 < 32) word &= (1u << (vocab_size - w * 32)) - 1;
    if (word != 0) return true;
  }
  return false;
}

}  // namespace gossamer::engine
