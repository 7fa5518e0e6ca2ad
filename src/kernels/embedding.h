// Embedding gather: out[t] = table[ids[t] − vocab_begin] (no scaling, as src/model/cpu_model.cpp).
//
// The table may be a slice of the vocabulary: rows [vocab_begin, vocab_begin + vocab) of the whole
// embedding (a vocab-parallel rank's, model/sharding.h), so that the ranks' outputs summed over the group
// are the whole lookup (exactly: each id's row comes from one rank, every other rank adds zeros).
#pragma once

#include <cstdint>

#include "core/cuda/cuda_types.h"  // cudaStream_t, GOSSAMER_HOST_DEVICE

namespace gossamer::kernels {

struct EmbeddingParams {
  const uint16_t* table = nullptr;  // [vocab, hidden] bf16: vocabulary rows [vocab_begin, vocab_begin + vocab)
  const int32_t* ids = nullptr;     // [num_tokens]; an id outside [vocab_begin, vocab_begin + vocab) yields a zero row
  uint16_t* out = nullptr;          // [num_tokens, hidden] bf16, every row written
  int num_tokens = 0;
  int hidden = 0;  // multiple of 8
  int vocab = 0;   // rows of `table`
  int vocab_begin = 0;
};

void launch_embedding(const EmbeddingParams& p, cudaStream_t stream);
void embedding_cpu(const EmbeddingParams& p);

}  // namespace gossamer::kernels
