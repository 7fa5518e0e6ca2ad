// Token sampling from fp32 logits: greedy, temperature, top-k, top-p, seeded.
//
// Per row: temperature ≤ 0 → argmax (ties → lowest index). Otherwise x = logits / temperature and
//  1. top-k (0 < k < vocab): keep tokens whose x ≥ the k-th largest x (ties at the boundary are kept);
//  2. top-p (< 1): among those, keep the tokens with x ≥ t, t the largest value such that the kept mass
//     Σ exp(x − max) over x ≥ t is ≥ top_p · (mass of step 1) (the smallest top set, ties kept);
//  3. u = uniform [0,1) from splitmix64(seed) (top 24 bits); return the first token in index order
//     whose running kept mass exceeds u · (total kept mass).
#pragma once

#include <cstdint>

#include "core/cuda/cuda_types.h"  // cudaStream_t, GOSSAMER_HOST_DEVICE

namespace gossamer::kernels {

struct SamplingParams {
  const float* logits = nullptr;       // [num_rows, vocab] fp32, or null with logits_bf16
  int32_t* out_tokens = nullptr;       // [num_rows]
  const float* temperature = nullptr;  // [num_rows]
  const int32_t* top_k = nullptr;      // [num_rows] or null (off)
  const float* top_p = nullptr;        // [num_rows] or null (off)
  const uint64_t* seeds = nullptr;     // [num_rows] (e.g. request seed mixed with the step)
  int num_rows = 0;
  int vocab = 0;
  const uint16_t* logits_bf16 = nullptr;  // [num_rows, vocab] bf16 instead of logits (the model's, in place)
};

// The uniform draw both implementations use.
GOSSAMER_HOST_DEVICE inline float sampling_uniform(uint64_t seed) {
  uint64_t z = seed + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<float>(z >> 40) * (1.0f / 16777216.0f);
}

void launch_sampling(const SamplingParams& p, cudaStream_t stream);
void sampling_cpu(const SamplingParams& p);

}  // namespace gossamer::kernels
