// The raw log-probabilities of kernels/sampling.h over vocab-parallel logits: each rank of a tensor-parallel
// group writes one fixed record per row from its slice of the (masked, unpenalized) bf16 logits, the group
// sums the records (comm all_reduce of zero-padded per-rank slots, as kernels/vocab_sampling.h's), and
// every rank merges them into the same outputs the single-device kernel writes (SamplingParams::out_*).
//
// A row's record in rank q's slot: the slice's max z (from −FLT_MAX: an all −inf slice adds nothing) and
// Σ exp(z − max) (f32, as the single-device kernel), the drawn token's z where this slice owns it (0
// elsewhere, so the sum is the owner's value), and the slice's first n = min(num_top, kMaxTopLogprobs,
// num_cols) tokens in the top list's order (sampling_top_before), as (global id + 1, z), (0, 0) past n.
// The merge: log_total = M + log(Σ_q sum_q · exp(max_q − M)) in rank order (M the largest max), the drawn
// logprob z_drawn − log_total, and the top list the first num_top of the slices' lists merged in the top
// order, each z − log_total: the single-device ids exactly, the logprobs within f32 rounding of it.
//
// Contract: every rank launches the same rows with the same tokens (the group's draw) and sums the
// records between the two launches; the outputs are then identical on every rank. Launches only enqueue
// (graph-capturable, no allocation). Each has a CPU reference (*_cpu) with the same arguments.
#pragma once

#include <cfloat>
#include <cmath>
#include <cstdint>

#include "core/cuda/cuda_types.h"  // cudaStream_t, GOSSAMER_HOST_DEVICE
#include "kernels/sampling.h"
#include "kernels/vocab_sampling.h"

namespace gossamer::kernels {

// f32 per rank per row: max, Σ exp, the drawn token's z, then kMaxTopLogprobs ids + 1, then their z.
inline constexpr int kVocabLogprobRecord = 3 + 2 * kMaxTopLogprobs;
inline constexpr int kVocabLogprobMaxWorld = 64;  // the merge keeps one cursor per rank

// records [world, num_rows, kVocabLogprobRecord] f32: slot p.rank ← this slice's record of each row (z the
// raw bf16 logits: p.penalized and p.temperature are not read), the others ← 0. tokens [num_rows] the drawn
// ids; num_top [num_rows] (< 0 or 0: no top list).
void launch_vocab_logprob_record(const VocabSliceParams& p, const int32_t* tokens, const int32_t* num_top,
                                 float* records, cudaStream_t stream);
void vocab_logprob_record_cpu(const VocabSliceParams& p, const int32_t* tokens, const int32_t* num_top, float* records);

// Row r's outputs from the summed records [world, num_rows, kVocabLogprobRecord]: *logprob, and the first
// min(num_top, kMaxTopLogprobs) merged top entries in top_ids / top_logprobs [kMaxTopLogprobs] (fewer when
// the slices hold fewer). One truth for the kernel and the reference.
GOSSAMER_HOST_DEVICE inline void vocab_merged_logprobs(const float* records, int world, int num_rows, int r,
                                                       int num_top, float* logprob, int32_t* top_ids,
                                                       float* top_logprobs) {
  const auto record = [&](int q) { return records + (static_cast<int64_t>(q) * num_rows + r) * kVocabLogprobRecord; };
  float max = -FLT_MAX;
  for (int q = 0; q < world; ++q) max = fmaxf(max, record(q)[0]);
  float total = 0.f, drawn = 0.f;
  for (int q = 0; q < world; ++q) {
    total += record(q)[1] * expf(record(q)[0] - max);
    drawn += record(q)[2];
  }
  const float log_total = max + logf(total);
  *logprob = drawn - log_total;
  const int n = num_top < kMaxTopLogprobs ? num_top : kMaxTopLogprobs;
  int cursor[kVocabLogprobMaxWorld] = {};
  for (int j = 0; j < n; ++j) {
    int best = -1;
    int32_t best_id = 0;
    float best_z = 0.f;
    for (int q = 0; q < world; ++q) {
      if (cursor[q] >= kMaxTopLogprobs) continue;
      const float* rec = record(q);
      const auto id = static_cast<int32_t>(rec[3 + cursor[q]]) - 1;
      if (id < 0) continue;
      const float z = rec[3 + kMaxTopLogprobs + cursor[q]];
      if (best < 0 || sampling_top_before(z, id, best_z, best_id)) {
        best = q;
        best_id = id;
        best_z = z;
      }
    }
    if (best < 0) return;
    ++cursor[best];
    top_ids[j] = best_id;
    top_logprobs[j] = best_z - log_total;
  }
}

// After the sum: out_logprobs [num_rows], and for rows with num_top > 0 out_top_tokens / out_top_logprobs
// [num_rows, kMaxTopLogprobs] (kernels/sampling.h's outputs).
void launch_vocab_merge_logprobs(const float* records, int world, int num_rows, const int32_t* num_top,
                                 float* out_logprobs, int32_t* out_top_tokens, float* out_top_logprobs,
                                 cudaStream_t stream);
void vocab_merge_logprobs_cpu(const float* records, int world, int num_rows, const int32_t* num_top,
                              float* out_logprobs, int32_t* out_top_tokens, float* out_top_logprobs);

}  // namespace gossamer::kernels
