#include <algorithm>

#include "kernels/vocab_shards.h"

namespace gossamer::kernels {

void vocab_shards_cpu(const VocabShardsParams& p) {
  for (int64_t v = 0; v < p.vocab; ++v) {
    const int64_t q = v / p.shard_rows, begin = q * p.shard_rows;
    const int64_t n = std::min(p.vocab, begin + p.shard_rows) - begin;
    const uint16_t* slot = p.shards + q * p.rows * p.shard_rows;
    for (int64_t r = 0; r < p.rows; ++r) p.out[r * p.vocab + v] = slot[r * n + (v - begin)];
  }
}

}  // namespace gossamer::kernels
