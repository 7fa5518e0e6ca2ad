// Parallel layouts (tensor × expert × data parallel) and what each rank of a tensor-parallel group holds.
//
// A replica is a group of `tensor_parallel` ranks. Attention is split by heads: rank r holds query heads
// [r·Hq/tp, (r+1)·Hq/tp) and the KV heads they read (split when tp ≤ Hkv, otherwise each KV head is
// replicated on tp/Hkv ranks, as vLLM does); QKV is column-parallel, O row-parallel (one all-reduce).
// The MoE is split by intermediate columns (TP: every rank runs every chosen expert on its slice) or,
// with expert_parallel, by experts (EP: inputs replicated, rank r runs experts [r·E/tp, (r+1)·E/tp),
// the combine is the same all-reduce). Embedding and unembedding are vocab-parallel: rank r holds rows
// [r·⌈V/tp⌉, min(V, (r+1)·⌈V/tp⌉)). `data_parallel` replicas are independent copies of the group.
#pragma once

#include <cstdint>
#include <string>

#include "model/config.h"

namespace gossamer::model {

struct ParallelLayout {
  int32_t tensor_parallel = 1;   // ranks per replica (TP group = EP group)
  bool expert_parallel = false;  // MoE by experts instead of by intermediate columns
  int32_t data_parallel = 1;     // independent replicas

  int32_t num_devices() const { return tensor_parallel * data_parallel; }
  bool sharded() const { return tensor_parallel > 1; }
  // "TP4 EP4" (EP is the TP group's size when on, else 1), as the reference deployment names a replica.
  std::string describe() const;
  // describe() + " DP<n>": the whole deployment.
  std::string describe_with_dp() const;
};

// Throws gossamer::Error with a clear message when the layout cannot run `config`: sizes < 1, TP not
// dividing the query heads, KV heads neither divisible by nor dividing TP, TP not dividing the
// intermediate size (TP MoE) or the experts (EP), or more devices than `devices_present` (< 0 = no limit,
// the cpu backend's simulated ranks).
void validate_layout(const ParallelLayout& layout, const GptOssConfig& config, int devices_present);

struct IndexRange {
  int64_t begin = 0, end = 0;
  int64_t size() const { return end - begin; }
  bool contains(int64_t i) const { return i >= begin && i < end; }
};

// What rank `rank` of a validated layout holds.
struct RankShard {
  IndexRange q_heads;                 // query heads
  IndexRange kv_heads;                // KV heads read by those query heads
  IndexRange experts;                 // experts run here (all without EP)
  IndexRange intermediate;            // intermediate columns of each expert run here (all with EP)
  IndexRange vocab;                   // embedding / unembedding rows
  bool adds_replicated_bias = false;  // rank 0 adds the biases of row-parallel outputs (o_proj, down) once
};
RankShard shard_for(const ParallelLayout& layout, const GptOssConfig& config, int32_t rank);

// Rows every rank's vocab shard is padded to (⌈V/tp⌉): the all-gather of logits moves equal pieces.
int64_t vocab_shard_rows(const ParallelLayout& layout, const GptOssConfig& config);

}  // namespace gossamer::model
