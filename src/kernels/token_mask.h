// Token-mask application for structured output: before sampling, every logit whose token is not allowed
// by its row's bitmask becomes -inf.
//
//   for each row r with mask_rows[r] >= 0, column c < vocab, token t = vocab_begin + c:
//     if bit (t % 32) of masks[mask_rows[r] · words + t / 32] is 0: logits[r · vocab + c] = -inf
//
// The logits are whole rows (vocab_begin 0) or one rank's vocab slice of them (tensor parallelism: the
// masks stay whole-vocabulary, each rank reads its slice's bits).
// Rows with mask_rows[r] < 0 (or mask_rows null: every row r uses mask r) are left as they are. The logits
// are fp32 or bf16 (the device sampler's input); the result is exact (only -inf is written), so the CPU
// reference gives the same bits.
#pragma once

#include <cstdint>

#include "core/cuda/cuda_types.h"  // cudaStream_t

namespace gossamer::kernels {

struct TokenMaskParams {
  float* logits = nullptr;             // [num_rows, vocab] fp32, masked in place; or null with logits_bf16
  uint16_t* logits_bf16 = nullptr;     // [num_rows, vocab] bf16 bits, masked in place
  const uint32_t* masks = nullptr;     // [num_masks, words] bit t % 32 of word t / 32 = token t allowed
  const int32_t* mask_rows = nullptr;  // [num_rows] mask index of each row, < 0 = unmasked; null = identity
  int32_t num_rows = 0;
  int32_t vocab = 0;        // columns per row (the slice's width for a slice)
  int32_t vocab_begin = 0;  // the first column's token id
  int32_t words = 0;        // >= ceil((vocab_begin + vocab) / 32)
};

// Asynchronous on `stream`, launched with PDL (starts with pdl_wait); graph capturable.
void launch_token_mask(const TokenMaskParams& p, cudaStream_t stream);
void token_mask_cpu(const TokenMaskParams& p);

}  // namespace gossamer::kernels
