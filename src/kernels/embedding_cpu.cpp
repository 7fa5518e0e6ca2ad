#include <algorithm>

#include "kernels/embedding.h"

namespace gossamer::kernels {

void embedding_cpu(const EmbeddingParams& p) {
  for (int64_t t = 0; t < p.num_tokens; ++t) {
    uint16_t* out = p.out + t * p.hidden;
    const int32_t id = p.ids[t];
    if (id < 0 || id >= p.vocab) {
      std::fill(out, out + p.hidden, uint16_t{0});
    } else {
      std::copy(p.table + static_cast<int64_t>(id) * p.hidden, p.table + (static_cast<int64_t>(id) + 1) * p.hidden,
                out);
    }
  }
}

}  // namespace gossamer::kernels
