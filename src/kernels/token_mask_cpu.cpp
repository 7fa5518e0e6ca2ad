#include <limits>

#include "core/error.h"
#include "kernels/token_mask.h"

namespace gossamer::kernels {

void token_mask_cpu(const TokenMaskParams& p) {
  GOSSAMER_CHECK(p.num_rows >= 0 && p.vocab >= 0 && p.vocab_begin >= 0 &&
                     int64_t{p.words} * 32 >= int64_t{p.vocab_begin} + p.vocab,
                 "token_mask: bad shape");
  GOSSAMER_CHECK(p.num_rows == 0 || (p.logits != nullptr) != (p.logits_bf16 != nullptr),
                 "token_mask: give fp32 or bf16 logits");
  const float minus_infinity = -std::numeric_limits<float>::infinity();
  for (int32_t r = 0; r < p.num_rows; ++r) {
    const int32_t m = p.mask_rows != nullptr ? p.mask_rows[r] : r;
    if (m < 0) continue;
    const uint32_t* mask = p.masks + static_cast<int64_t>(m) * p.words;
    const int64_t base = static_cast<int64_t>(r) * p.vocab;
    for (int32_t c = 0; c < p.vocab; ++c) {
      const int32_t t = p.vocab_begin + c;
      if (((mask[t / 32] >> (t % 32)) & 1u) != 0) continue;
      if (p.logits != nullptr) {
        p.logits[base + c] = minus_infinity;
      } else {
        p.logits_bf16[base + c] = 0xFF80;  // bf16 -inf
      }
    }
  }
}

}  // namespace gossamer::kernels
