// Token sampling from fp32 (or bf16) logits: penalties, greedy, temperature, top-k, top-p, seeded; and the
// raw log-probabilities of the drawn token and of the row's top tokens.
//
// THE sampling rule (host sampler engine/sampler.cpp, this kernel and its CPU reference all implement it):
// per row, with z the logits widened to fp32,
//  0. penalties (when the row has entries): for each listed token t (a token of the prompt or of the output,
//     listed once, with c = its count in the output): z_t ← z_t > 0 ? z_t / repetition : z_t · repetition
//     (when repetition ≠ 1), then z_t ← z_t − frequency · c − (c > 0 ? presence : 0), in fp32.
//  1. temperature ≤ 0 → argmax z (ties → lowest index). Otherwise x = z · (1 / temperature) (fp32), keys
//     k(x) the order-preserving integer image of x, w = exp(x − max x);
//  2. top-k (0 < k < vocab): keep tokens whose key ≥ the k-th largest key (ties at the boundary are kept);
//  3. top-p (< 1): among those, keep the tokens with key ≥ t, t the largest key such that Σ w over key ≥ t
//     is ≥ top_p · (Σ w of step 2) (the smallest top set, ties kept);
//  4. u = sampling_uniform(seed) (24 bits), the token is the first in index order whose running Σ w over
//     the kept tokens exceeds u · (Σ w kept); if rounding leaves none, the last kept token.
// The CPU reference sums w in double, the kernel in float: they agree except for draws within rounding of
// a boundary. Log-probabilities are the model's raw ones, log_softmax(logits) before penalties and
// temperature (vLLM's default "raw_logprobs"); the top list is ordered by logit (ties → lowest index).
#pragma once

#include <bit>
#include <cfloat>
#include <cstdint>

#include "core/cuda/cuda_types.h"  // cudaStream_t, GOSSAMER_HOST_DEVICE

namespace gossamer::kernels {

inline constexpr int kMaxTopLogprobs = 20;  // OpenAI's cap on top_logprobs

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

  // Penalties (all null = none): row r's entries are [penalty_offsets[r], penalty_offsets[r + 1]).
  const int32_t* penalty_offsets = nullptr;  // [num_rows + 1]
  const int32_t* penalty_tokens = nullptr;   // [num_entries] distinct per row, each in [0, vocab)
  const int32_t* penalty_counts = nullptr;   // [num_entries] count in the output (0: only in the prompt)
  const float* presence = nullptr;           // [num_rows]
  const float* frequency = nullptr;          // [num_rows]
  const float* repetition = nullptr;         // [num_rows] (1 = off)
  float* penalized = nullptr;                // [scratch rows, vocab] fp32 scratch, written for rows with entries
  const int32_t* scratch_rows = nullptr;     // [num_rows] a penalized row's row in `penalized` (null: its index)

  // Log-probabilities (null = none): out_logprobs[r] is the drawn token's; rows with num_top[r] = n > 0 also
  // get their n most likely tokens in out_top_tokens / out_top_logprobs [num_rows, kMaxTopLogprobs].
  float* out_logprobs = nullptr;      // [num_rows]
  const int32_t* num_top = nullptr;   // [num_rows] in [0, kMaxTopLogprobs], or null (0)
  int32_t* out_top_tokens = nullptr;  // [num_rows, kMaxTopLogprobs]
  float* out_top_logprobs = nullptr;  // [num_rows, kMaxTopLogprobs]
};

// The rule's keys k(x): the order-preserving map of fp32 to uint32 (−0 below +0), and back (bit-exact).
GOSSAMER_HOST_DEVICE inline uint32_t sampling_order_key(float x) {
#ifdef __CUDA_ARCH__
  const uint32_t u = __float_as_uint(x);
#else
  const uint32_t u = std::bit_cast<uint32_t>(x);
#endif
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}
GOSSAMER_HOST_DEVICE inline float sampling_key_value(uint32_t key) {
  const uint32_t u = (key & 0x80000000u) ? (key & 0x7FFFFFFFu) : ~key;
#ifdef __CUDA_ARCH__
  return __uint_as_float(u);
#else
  return std::bit_cast<float>(u);
#endif
}

// The uniform draw both implementations use.
GOSSAMER_HOST_DEVICE inline float sampling_uniform(uint64_t seed) {
  uint64_t z = seed + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<float>(z >> 40) * (1.0f / 16777216.0f);
}

// Step 0 of the rule for one logit.
GOSSAMER_HOST_DEVICE inline float penalized_logit(float z, int32_t count, float presence, float frequency,
                                                  float repetition) {
  if (repetition != 1.0f) z = z > 0.0f ? z / repetition : z * repetition;
  return z - frequency * static_cast<float>(count) - (count > 0 ? presence : 0.0f);
}

// The top list's order: the higher logit first, ties → the lower token id.
GOSSAMER_HOST_DEVICE inline bool sampling_top_before(float za, int32_t a, float zb, int32_t b) {
  return za > zb || (za == zb && a < b);
}

void launch_sampling(const SamplingParams& p, CUstream_st* stream);
void sampling_cpu(const SamplingParams& p);

// The raw log-softmax's normaliser over a part of a row (the whole row, or one rank's vocab slice): the
// part's max z and Σ exp(z − max) in double, the max starting at −DBL_MAX (so a part of −inf logits adds
// nothing). A token's raw logprob is float(z − sampling_log_total(parts)); sampling_cpu takes the whole row
// as one part, a vocab-parallel sampler one part per rank in rank order.
struct LogitNormalizer {
  double max = -DBL_MAX;
  double sum = 0.0;
};
// z [num_cols] f32.
LogitNormalizer sampling_normalizer_cpu(const float* z, int num_cols);
// max_q + log(Σ_q sum_q · exp(max_q − max)) over parts [num_parts] in order, max the parts' largest; one
// part gives its own max + log(sum) exactly.
double sampling_log_total(const LogitNormalizer* parts, int num_parts);
// ids [n] ← the first n tokens of z [num_cols] (column c is token id_begin + c) in the top list's order
// (sampling_top_before); n ≤ num_cols. Merging every slice's first n in that order gives the row's first n.
void sampling_top_ids_cpu(const float* z, int num_cols, int32_t id_begin, int n, int32_t* ids);

}  // namespace gossamer::kernels
