// One rank of the cpu backend's tensor/expert-parallel forward pass (model/sharding.h says what it holds).
//
// Contract: the rank reads the checkpoint through views (row slices of q/k/v, the vocab shards, expert
// rows) and keeps f32 copies only of the column slices (o_proj, expert down columns decoded per use);
// `weights` must outlive it. forward() must be called by every rank of the group with the same step and
// the same communicator group; it exchanges partial sums through `comm` (3 all-reduces per layer pair:
// embedding, attention output, MoE combine) and leaves this rank's logits shard.
#pragma once

#include <cstdint>
#include <vector>

#include "comm/communicator.h"
#include "model/config.h"
#include "model/cpu_layers.h"
#include "model/model.h"
#include "model/sharding.h"
#include "model/weights.h"

namespace gossamer::model {

class CpuShardedRank {
 public:
  CpuShardedRank(const GptOssConfig& config, const GptOssWeights& weights, const ParallelLayout& layout, int32_t rank);

  const RankShard& shard() const { return shard_; }
  // Local K/V: [rows, local_kv_width] f32 per layer (sliding layers get sliding_rows when > 0).
  void allocate_kv_cache(int64_t rows, int64_t sliding_rows, int32_t block_size);
  int64_t kv_width() const { return shard_.kv_heads.size() * config_.head_dim; }
  // Runs the step; logits ← [logit rows, vocab_shard_rows] f32, this rank's vocab columns then −inf padding.
  void forward(const cpu::StepPlan& step, const ForwardBatch& batch, comm::Communicator& comm,
               std::vector<float>& logits);

 private:
  struct LayerShard {
    std::vector<float> attn_norm, q_bias, k_bias, v_bias, o_bias, sinks, mlp_norm, router_bias;
    TensorView q_proj, k_proj, v_proj;  // row slices: [local q width, hidden], [local kv width, hidden] ×2
    std::vector<float> o_proj;          // [hidden, local q width] f32 (a column slice)
    std::vector<float> gate_up_bias;    // [local experts, 2 · local intermediate]
    std::vector<float> down_bias;       // [local experts, hidden]
  };

  void embed(const ForwardBatch& batch, comm::Communicator& comm, std::vector<float>& x);
  void attention(int layer, const cpu::StepPlan& step, const ForwardBatch& batch, comm::Communicator& comm,
                 std::vector<float>& x);
  void moe(int layer, int64_t num_tokens, comm::Communicator& comm, std::vector<float>& x);

  GptOssConfig config_;
  const GptOssWeights& weights_;
  ParallelLayout layout_;
  RankShard shard_;
  std::vector<LayerShard> layers_;
  std::vector<float> final_norm_;
  TensorView unembedding_;  // [local vocab, hidden] row slice
  int32_t block_size_ = 0;
  bool ring_ = false;
  std::vector<std::vector<float>> k_cache_, v_cache_;  // per layer [rows, kv_width()]
};

}  // namespace gossamer::model
