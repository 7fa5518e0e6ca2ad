// Vocab-parallel logits reassembled: every rank of a tensor-parallel group computes the logits of its
// contiguous vocabulary slice (model/sharding.h: rank q holds ids [q·shard_rows, min(vocab, (q+1)·shard_rows))),
// the group all-gathers the slices (one equal-sized slot per rank), and this gather lays them out as the
// full [rows, vocab] logits the sampler reads.
//
//   out[r, v] = shards[q][r · n_q + (v − q · shard_rows)],   q = v / shard_rows,
//   n_q = min(vocab, (q + 1) · shard_rows) − q · shard_rows   (rank q's slot holds its [rows, n_q] logits)
#pragma once

#include <cstdint>

#include "core/cuda/cuda_types.h"  // cudaStream_t

namespace gossamer::kernels {

struct VocabShardsParams {
  const uint16_t* shards = nullptr;  // [world, rows · shard_rows] bf16: rank q's slot starts with its [rows, n_q]
  uint16_t* out = nullptr;           // [rows, vocab] bf16
  int rows = 0;
  int64_t shard_rows = 0;  // ⌈vocab / world⌉ (model/sharding.h vocab_shard_rows)
  int64_t vocab = 0;
};

void launch_vocab_shards(const VocabShardsParams& p, cudaStream_t stream);
void vocab_shards_cpu(const VocabShardsParams& p);

}  // namespace gossamer::kernels
