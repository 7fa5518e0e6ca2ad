#include <algorithm>

#include "kernels/embedding.h"

namespace gossamer::kernels {

void embedding_cpu(const EmbeddingParams& p) {
  for (int64_t t = 0; t < p.num_tokens; ++t) {
    uint16_t* out = p.out + t * p.hidden;
    const int64_t row = int64_t{p.ids[t]} - p.vocab_begin;
    if (row < 0 || row >= p.vocab) {
      std::fill(out, out + p.hidden, uint16_t{0});
    } else {
      std::copy(p.table + row * p.hidden, p.table + (row + 1) * p.hidden, out);
    }
  }
}

}  // namespace gossamer::kernels
