// Distributed argmax and sampling over vocab-parallel logits: each rank holds a contiguous slice of the
// vocabulary and only small per-row records cross ranks (never the [rows, vocab] logits).
//
// The rule is kernels/sampling.h's (a row's token mask, then its penalties; greedy = lowest index of the
// maximum; otherwise temperature, top-k with boundary ties kept, top-p as the smallest top set by key, one
// seeded draw in index order; raw logprobs of the masked logits):
//  - token masks: each rank applies its slice's bits (kernels/token_mask.h with vocab_begin);
//  - penalties: each rank applies those of its slice's tokens (kernels::penalized_logit);
//  - greedy: one all-gather of (max, index) per row;
//  - top-k: the k-th largest key from the merge of every rank's local top k;
//  - top-p: the threshold key by bisection over the 32-bit key order (32 rounds of per-row masses);
//  - the draw: per-rank kept masses, prefix sums in rank order, the owning rank walks its slice;
//  - logprobs: one all-gather of a fixed-size record per row that asked: the slice's normaliser
//    (kernels::LogitNormalizer, merged in rank order by kernels::sampling_log_total), the drawn token's
//    logit from the rank that owns it, and the slice's first n tokens in the top list's order (merged: the
//    row's first n, as kernels::sampling_top_ids_cpu orders them).
// Masses are summed in double per rank, then in rank order, so a draw can differ from a single-device
// sampler only when u·total falls within rounding of a token boundary; logprobs only by the rounding of
// the double normaliser's merge (the top tokens and their order are exact).
// Contract: every rank calls it with the same rows; the result is identical on every rank.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "comm/communicator.h"
#include "model/model.h"
#include "model/sharding.h"

namespace gossamer::model {

struct VocabParallelSample {
  std::vector<int32_t> tokens;        // [num_rows] global token ids
  std::vector<RowLogprobs> logprobs;  // [num_rows], set for rows with num_top_logprobs ≥ 0
};

// local: [num_rows, row_stride] f32, this rank's logits for global ids [vocab.begin, vocab.end) in the
// first vocab.size() columns (read only); vocab_size: the whole vocabulary. rows: one RowSampling per row
// (token masks cover the whole vocabulary, penalty tokens are global ids).
VocabParallelSample sample_vocab_parallel(const float* local, int64_t num_rows, int64_t row_stride, IndexRange vocab,
                                          int64_t vocab_size, std::span<const RowSampling> rows,
                                          comm::Communicator& comm);

}  // namespace gossamer::model
