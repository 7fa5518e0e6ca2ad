// Embedding gather: out[t] = table[ids[t]] (no scaling, as src/model/cpu_model.cpp).
#pragma once

#include <cstdint>

#include "core/cuda/cuda_types.h"  // cudaStream_t, GOSSAMER_HOST_DEVICE

namespace gossamer::kernels {

struct EmbeddingParams {
  const uint16_t* table = nullptr;  // [vocab, hidden] bf16
  const int32_t* ids = nullptr;     // [num_tokens]; an id outside [0, vocab) yields a zero row
  uint16_t* out = nullptr;          // [num_tokens, hidden] bf16
  int num_tokens = 0;
  int hidden = 0;  // multiple of 8
  int vocab = 0;
};

void launch_embedding(const EmbeddingParams& p, cudaStream_t stream);
void embedding_cpu(const EmbeddingParams& p);

}  // namespace gossamer::kernels
