#include "model/sharding.h"

#include <algorithm>

#include "core/error.h"

namespace gossamer::model {

std::string ParallelLayout::describe() const {
  return "TP" + std::to_string(tensor_parallel) + " EP" + std::to_string(expert_parallel ? tensor_parallel : 1);
}

std::string ParallelLayout::describe_with_dp() const {
  return describe() + " DP" + std::to_string(data_parallel);
}

void validate_layout(const ParallelLayout& layout, const GptOssConfig& config, int devices_present) {
  const int32_t tp = layout.tensor_parallel;
  GOSSAMER_CHECK(tp >= 1, "--tensor-parallel-size must be ≥ 1, got ", tp);
  GOSSAMER_CHECK(layout.data_parallel >= 1, "--data-parallel-size must be ≥ 1, got ", layout.data_parallel);
  GOSSAMER_CHECK(config.num_q_heads % tp == 0, "--tensor-parallel-size ", tp, " does not divide the model's ",
                 config.num_q_heads, " attention heads");
  GOSSAMER_CHECK(config.num_kv_heads % tp == 0 || tp % config.num_kv_heads == 0, "--tensor-parallel-size ", tp,
                 " neither divides nor is a multiple of the model's ", config.num_kv_heads, " KV heads");
  if (layout.expert_parallel) {
    GOSSAMER_CHECK(config.num_experts % tp == 0, "--enable-expert-parallel over ", tp,
                   " ranks does not divide the model's ", config.num_experts, " experts");
  } else {
    GOSSAMER_CHECK(config.intermediate_size % tp == 0, "--tensor-parallel-size ", tp, " does not divide the experts' ",
                   config.intermediate_size, " intermediate columns (use --enable-expert-parallel)");
  }
  GOSSAMER_CHECK(config.vocab_size >= tp, "--tensor-parallel-size ", tp, " exceeds the vocabulary (", config.vocab_size,
                 ")");
  if (devices_present >= 0) {
    GOSSAMER_CHECK(layout.num_devices() <= devices_present, "layout ", layout.describe_with_dp(), " needs ",
                   layout.num_devices(), " GPUs (tensor-parallel × data-parallel), but ", devices_present,
                   " are present");
  }
}

RankShard shard_for(const ParallelLayout& layout, const GptOssConfig& config, int32_t rank) {
  const int64_t tp = layout.tensor_parallel;
  GOSSAMER_CHECK(rank >= 0 && rank < tp, "rank ", rank, " outside a tensor-parallel group of ", tp);
  RankShard shard;
  const int64_t q_per_rank = config.num_q_heads / tp;
  shard.q_heads = {rank * q_per_rank, (rank + 1) * q_per_rank};
  if (tp <= config.num_kv_heads) {
    const int64_t kv_per_rank = config.num_kv_heads / tp;
    shard.kv_heads = {rank * kv_per_rank, (rank + 1) * kv_per_rank};
  } else {
    const int64_t kv_head = rank / (tp / config.num_kv_heads);  // replicated on tp / Hkv ranks
    shard.kv_heads = {kv_head, kv_head + 1};
  }
  if (layout.expert_parallel) {
    const int64_t per_rank = config.num_experts / tp;
    shard.experts = {rank * per_rank, (rank + 1) * per_rank};
    shard.intermediate = {0, config.intermediate_size};
  } else {
    const int64_t per_rank = config.intermediate_size / tp;
    shard.experts = {0, config.num_experts};
    shard.intermediate = {rank * per_rank, (rank + 1) * per_rank};
  }
  const int64_t rows = vocab_shard_rows(layout, config);
  shard.vocab = {std::min<int64_t>(config.vocab_size, rank * rows),
                 std::min<int64_t>(config.vocab_size, (rank + 1) * rows)};
  shard.adds_replicated_bias = rank == 0;
  return shard;
}

int64_t vocab_shard_rows(const ParallelLayout& layout, const GptOssConfig& config) {
  return (int64_t{config.vocab_size} + layout.tensor_parallel - 1) / layout.tensor_parallel;
}

}  // namespace gossamer::model
