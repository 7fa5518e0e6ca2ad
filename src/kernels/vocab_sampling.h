// The local pieces of sampling over vocab-parallel logits (the cuda backend's form of
// model/sharded_sampling.h): each rank of a tensor-parallel group runs these on its own slice of the
// vocabulary, and the group sums the small f32 records they write (comm all_reduce: it exists on every
// group, the IPC-only ones of ranks sharing a GPU too). Never the [rows, vocab] logits cross ranks.
//
// The rule is kernels/sampling.h's, steps 0-4. Token masks are applied to the bf16 slice first
// (kernels/token_mask.h with vocab_begin; their −inf columns weigh nothing). 0. penalize writes the rows with
// penalty entries as f32 copies of their slice (the bf16 logit widened, then penalized_logit for the entries
// whose token falls in the slice: the single-device kernel's fp32 scratch rows, cut to the slice), and every
// later launch reads z of such a row from its copy, the others from the bf16 slice. Log-probabilities are
// kernels/vocab_logprobs.h's. x = z (greedy) or z · (1 / temperature), keys k(x) as there.
//  1. local_max: slot `rank` of records ← (key >> 16, key & 0xFFFF, id) of this slice's largest key
//     (lowest id on ties), the other slots ← 0; after the sum merge_max takes the largest (key, lowest id)
//     over ranks (slices ascend with the rank): the greedy token, exactly the single-device one, and the
//     row's max x for the sampled rows. Every record value is an integer < 2^24, so the sum is exact.
//  2. top-k (rows with 0 < k < vocab): the k-th largest key by radix selection over the group (4 rounds of
//     8 bits, as sampling_f32_sm90.cu): each round folds the summed 256-bin count histogram of the
//     previous one into the row's state and writes this slice's next histogram. Counts are integers:
//     the threshold is exactly the single-device one.
//  3. top-p (rows with top_p < 1): target = top_p · Σ_ranks local_mass(keys ≥ t_k), then 4 radix rounds
//     over summed mass histograms (the single-device kernel's passes, with its rounding fallback).
//  4. the draw: local_mass per rank (slots), total and the mass before this rank in rank order; each rank
//     walks its slice from that offset (local_draw: 1 + the first id whose running mass exceeds
//     u · total, and 1 + its last kept id, 0 for none); merge_draw takes the first rank's crossing, else
//     the last kept id of the highest rank that has one.
// Masses are f32 sums (as the single-device kernel), so a sampled draw can differ from it only when
// u · total falls within rounding of a token boundary; greedy rows and the top-k threshold are exact.
//
// Contract: every rank calls the same launches with the same rows, settings and buffer sizes, and sums the
// records between them (in place, f32, rank order, identical on every rank: comm/communicator.h); the
// results are then identical on every rank. Launches only enqueue (graph-capturable, no allocation).
// Every launch has a CPU reference (*_cpu) over host memory with the same arguments.
#pragma once

#include <bit>
#include <cstdint>

#include "core/cuda/cuda_types.h"  // cudaStream_t

namespace gossamer::kernels {

inline constexpr int kVocabSelectBins = 256;  // one radix round: 8 bits of the key
inline constexpr int kVocabMaxRecord = 3;     // f32 per rank per row in local_max's records

// This rank's slice and the step's rows.
struct VocabSliceParams {
  const uint16_t* logits = nullptr;  // [num_rows, ld] bf16: column c is the logit of global id vocab_begin + c
  int64_t ld = 0;
  int num_cols = 0;     // this rank's vocabulary ids (> 0)
  int vocab_begin = 0;  // its first global id
  int rank = 0;
  int world = 1;
  int num_rows = 0;
  const float* temperature = nullptr;  // [num_rows]: ≤ 0 greedy (x = z), else x = z · (1 / temperature)
  // Penalized rows (both null: none): row r reads z from penalized row penalized_rows[r] when that is ≥ 0.
  const float* penalized = nullptr;         // [penalized rows, num_cols] f32, written by penalize
  const int32_t* penalized_rows = nullptr;  // [num_rows] a row's row in `penalized`, < 0 = the bf16 slice
};

// Step 0's inputs: row r's entries are [offsets[r], offsets[r + 1]), global token ids, distinct per row.
struct VocabPenaltyParams {
  const int32_t* offsets = nullptr;   // [num_rows + 1]
  const int32_t* tokens = nullptr;    // [num_entries] in [0, vocab)
  const int32_t* counts = nullptr;    // [num_entries] count in the output (0: only in the prompt)
  const float* presence = nullptr;    // [num_rows]
  const float* frequency = nullptr;   // [num_rows]
  const float* repetition = nullptr;  // [num_rows] (1 = off)
  float* out = nullptr;               // [penalized rows, num_cols] f32: the slice's p.penalized
};

// 0. For each row r with penalized_rows[r] ≥ 0: out row penalized_rows[r] ← the bf16 slice row widened, then
// z_t ← penalized_logit(z_t, ...) for its entries t in [vocab_begin, vocab_begin + num_cols) (the same fp32
// arithmetic as kernels/sampling.h step 0). Reads p.logits and p.penalized_rows; p.penalized must be `out`
// for the launches that follow.
void launch_vocab_penalize(const VocabSliceParams& p, const VocabPenaltyParams& pen, cudaStream_t stream);
void vocab_penalize_cpu(const VocabSliceParams& p, const VocabPenaltyParams& pen);

// Per row, written by merge_max and the selections and read by the later launches.
struct VocabRowState {
  float max = 0.f;         // max x of the row over the group
  uint32_t threshold = 0;  // kept keys are ≥ threshold (0: all): after top-k, then after top-p
  uint32_t prefix = 0;     // the radix selection in progress: the key bits chosen so far
  uint32_t mask = 0;       //   and which bits those are
  float remaining = 0.f;   // top-k: how many keys the selection still has to pass; top-p: the target mass
  float above = 0.f;       // top-p: the kept mass above the current prefix range
};

enum class VocabSelect : uint8_t { kTopK, kTopP };

// Folds the group's summed histogram of one radix round (bits [shift, shift + 8) of the key) into a row's
// selection, as sampling_f32_sm90.cu's thread 0 does: top-k takes the bin where the count from the top
// reaches `remaining`; top-p the bin where the mass from the top reaches the target (if rounding leaves it
// unreached: the lowest non-empty bin).
GOSSAMER_HOST_DEVICE inline void vocab_select_fold(VocabSelect what, const float* hist, int shift,
                                                   VocabRowState& state) {
  int chosen = 0;
  if (what == VocabSelect::kTopK) {
    float cum = 0.f;
    for (int b = kVocabSelectBins - 1; b >= 0; --b) {
      if (cum + hist[b] >= state.remaining) {
        chosen = b;
        break;
      }
      cum += hist[b];
    }
    state.remaining -= cum;
  } else {
    float cum = state.above;
    int lowest = 0;
    chosen = -1;
    for (int b = kVocabSelectBins - 1; b >= 0; --b) {
      if (hist[b] > 0.f) lowest = b;
      if (hist[b] > 0.f && cum + hist[b] >= state.remaining) {
        chosen = b;
        break;
      }
      cum += hist[b];
    }
    if (chosen < 0) {
      chosen = lowest;
      cum = state.above;
      for (int b = kVocabSelectBins - 1; b > lowest; --b) cum += hist[b];
    }
    state.above = cum;
  }
  state.prefix |= static_cast<uint32_t>(chosen) << shift;
  state.mask |= 255u << shift;
}

// records [world, num_rows, kVocabMaxRecord] f32: slot rank ← this slice's (key >> 16, key & 0xFFFF, id),
// the others ← 0.
void launch_vocab_local_max(const VocabSliceParams& p, float* records, cudaStream_t stream);
void vocab_local_max_cpu(const VocabSliceParams& p, float* records);

// After the sum: tokens [num_rows] ← the largest (key, lowest id) over ranks; state[r].max ← its x and
// state[r].threshold ← 0.
void launch_vocab_merge_max(const float* records, int world, int num_rows, int32_t* tokens, VocabRowState* state,
                            cudaStream_t stream);
void vocab_merge_max_cpu(const float* records, int world, int num_rows, int32_t* tokens, VocabRowState* state);

// One radix round of a selection over `rows` [num_select] (row ids of the step). shift 24 starts it
// (top-k: remaining ← top_k[row]; top-p: remaining ← top_p[row] · Σ_ranks masses[q][j], masses from
// local_mass over these rows with the top-k threshold) and writes this slice's histogram of key bits
// [24, 32); shift 16, 8, 0 first fold the summed histogram of round shift + 8 into the state, then write
// the next; shift −8 folds the last and sets threshold (top-k: the k-th largest key; top-p: the larger of
// the kept prefix and the top-k threshold). hist [num_select, kVocabSelectBins] f32, in place: counts of
// all keys (top-k) or masses exp(x − max) of keys ≥ threshold (top-p).
struct VocabSelectParams {
  VocabSelect what = VocabSelect::kTopK;
  const int32_t* rows = nullptr;  // [num_select]
  int num_select = 0;
  int shift = 24;
  const int32_t* top_k = nullptr;  // [num_rows] (top-k)
  const float* top_p = nullptr;    // [num_rows] (top-p)
  const float* masses = nullptr;   // [world, num_select] (top-p, shift 24)
  VocabRowState* state = nullptr;  // [num_rows]
  float* hist = nullptr;           // [num_select, kVocabSelectBins]
};
// One round's state step for the j-th selected row, before its histogram pass: shift 24 starts the selection,
// a later round folds the summed histogram `hist` of round shift + 8, and shift −8 then sets the threshold.
// One truth for the kernel's thread 0 and the CPU reference.
GOSSAMER_HOST_DEVICE inline void vocab_select_advance(int world, const VocabSelectParams& s, int j, const float* hist,
                                                      VocabRowState& st) {
  const int row = s.rows[j];
  if (s.shift == 24) {
    st.prefix = st.mask = 0;
    st.above = 0.f;
    if (s.what == VocabSelect::kTopK) {
      st.remaining = static_cast<float>(s.top_k[row]);
    } else {
      float total = 0.f;
      for (int q = 0; q < world; ++q) total += s.masses[static_cast<int64_t>(q) * s.num_select + j];
      st.remaining = s.top_p[row] * total;
    }
  } else {
    vocab_select_fold(s.what, hist, s.shift + 8, st);
  }
  if (s.shift < 0) st.threshold = s.what == VocabSelect::kTopK || st.prefix > st.threshold ? st.prefix : st.threshold;
}
void launch_vocab_select_round(const VocabSliceParams& p, const VocabSelectParams& s, cudaStream_t stream);
void vocab_select_round_cpu(const VocabSliceParams& p, const VocabSelectParams& s);

// masses [world, num_select] f32: slot rank ← Σ exp(x − max) over this slice's keys ≥ state[row].threshold,
// the others ← 0.
void launch_vocab_local_mass(const VocabSliceParams& p, const int32_t* rows, int num_select, const VocabRowState* state,
                             float* masses, cudaStream_t stream);
void vocab_local_mass_cpu(const VocabSliceParams& p, const int32_t* rows, int num_select, const VocabRowState* state,
                          float* masses);

// After masses were summed: picks [world, num_select, 2] f32: slot rank ← (1 + the first id whose running
// mass, from Σ_{q < rank} masses[q], exceeds sampling_uniform(seeds[row]) · Σ_q masses[q], or 0;
// 1 + the last kept id, or 0), the others ← 0.
void launch_vocab_local_draw(const VocabSliceParams& p, const int32_t* rows, int num_select, const VocabRowState* state,
                             const float* masses, const uint64_t* seeds, float* picks, cudaStream_t stream);
void vocab_local_draw_cpu(const VocabSliceParams& p, const int32_t* rows, int num_select, const VocabRowState* state,
                          const float* masses, const uint64_t* seeds, float* picks);

// The j-th selected row's token from every rank's picks [world, num_select, 2] (first id + 1 whose crossing
// the rank saw, last kept id + 1; 0 = none): the lowest rank's first crossing, else the last kept id of the
// highest rank that kept one (the draw fell past the total by rounding). One truth for kernel and reference.
GOSSAMER_HOST_DEVICE inline int32_t vocab_merged_draw(const float* picks, int world, int num_select, int j) {
  int32_t chosen = -1, last = -1;
  for (int q = 0; q < world; ++q) {
    const float* pick = picks + (static_cast<int64_t>(q) * num_select + j) * 2;
    if (chosen < 0 && pick[0] > 0.f) chosen = static_cast<int32_t>(pick[0]) - 1;
    if (pick[1] > 0.f) last = static_cast<int32_t>(pick[1]) - 1;
  }
  return chosen >= 0 ? chosen : last;
}

// After picks were summed: tokens[rows[j]] ← the first rank's crossing, else the highest rank's last kept.
void launch_vocab_merge_draw(const float* picks, int world, const int32_t* rows, int num_select, int32_t* tokens,
                             cudaStream_t stream);
void vocab_merge_draw_cpu(const float* picks, int world, const int32_t* rows, int num_select, int32_t* tokens);

}  // namespace gossamer::kernels
