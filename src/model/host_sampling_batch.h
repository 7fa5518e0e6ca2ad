// kernels/sampling.h's host arrays for a batch of RowSampling rows: their settings, their penalty lists
// (one CSR list for the batch) and penalized scratch rows, and the outputs of the draw. params() points a
// kernels::SamplingParams at them and at the logits, for kernels::sampling_cpu (the cpu backends) or for a
// device sampler that copies the arrays up (the tests). Token masks are not part of it: they are applied to
// the logits first (kernels/token_mask.h).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kernels/sampling.h"
#include "model/model.h"

namespace gossamer::model {

struct HostSamplingBatch {
  HostSamplingBatch(std::span<const RowSampling> rows, int32_t vocab);

  // The rule's parameters over `logits` ([num_rows, vocab] f32, host) and this batch's arrays; valid while
  // both live and the batch is not resized.
  kernels::SamplingParams params(const float* logits);
  // Row r's raw logprobs after the draw (rows that asked: num_top_logprobs ≥ 0; at most kMaxTopLogprobs and
  // vocab top entries).
  RowLogprobs logprobs(int32_t r) const;

  int32_t num_rows = 0;
  int32_t vocab = 0;
  // [num_rows] each: the settings.
  std::vector<float> temperature, top_p, presence, frequency, repetition;
  std::vector<int32_t> top_k;
  std::vector<uint64_t> seeds;
  std::vector<int32_t> num_top;          // ≥ 0 (max(num_top_logprobs, 0))
  std::vector<int32_t> asked_logprobs;   // RowSampling::num_top_logprobs (−1: none)
  std::vector<int32_t> penalty_offsets;  // [num_rows + 1] into penalty_tokens / penalty_counts
  std::vector<int32_t> penalty_tokens, penalty_counts;
  std::vector<float> penalized;  // [num_rows, vocab] scratch when any row has penalties, else empty
  // Outputs: [num_rows] tokens and logprobs, [num_rows, kernels::kMaxTopLogprobs] top tokens and logprobs.
  std::vector<int32_t> tokens, top_tokens;
  std::vector<float> out_logprobs, top_logprobs;
};

}  // namespace gossamer::model
