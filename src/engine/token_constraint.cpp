#include "engine/token_constraint.h"

#include <algorithm>
#include <limits>

namespace gossamer::engine {

void apply_token_mask(std::span<float> logits, std::span<const uint32_t> mask) {
  const float minus_infinity = -std::numeric_limits<float>::infinity();
  // NOTE: word by word, skipping all-allowed words (most of a mask inside a string or free reasoning).
  for (size_t w = 0; w * 32 < logits.size(); ++w) {
    const uint32_t word = mask[w];
    if (word == ~0u) continue;
    const size_t end = std::min(logits.size(), w * 32 + 32);
    for (size_t t = w * 32; t < end; ++t) {
      if (((word >> (t % 32)) & 1u) == 0) logits[t] = minus_infinity;
    }
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
