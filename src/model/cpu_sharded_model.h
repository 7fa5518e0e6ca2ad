// The `cpu` backend split over N simulated ranks: the tensor/expert-parallel math of model/sharding.h,
// each rank a thread with its own weight shard and KV heads, partial sums exchanged through an in-memory
// communicator (comm/thread_communicator.h). It is the oracle the multi-GPU layouts are tested against:
// its logits equal CpuModel's up to float summation order.
//
// Contract: as CpuModel (keeps `storage` alive, one forward at a time). forward() gathers the vocab
// shards into full logits; forward_sample() samples vocab-parallel (model/sharded_sampling.h: token
// masks, penalties and logprobs too), so only token ids, logprobs and small per-row records leave the
// ranks. A rank that fails makes the step throw gossamer::Error naming the rank and the cause on the
// caller's thread; the group is re-armed for the next step.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "comm/thread_communicator.h"
#include "model/cpu_sharded_rank.h"
#include "model/model.h"
#include "model/rope.h"
#include "model/sharding.h"

namespace gossamer::model {

class CpuShardedModel final : public Model {
 public:
  // Throws gossamer::Error when `layout` does not fit `config` (validate_layout); data_parallel must be 1
  // (replicas are separate models).
  CpuShardedModel(GptOssConfig config, GptOssWeights weights, std::shared_ptr<const void> storage,
                  ParallelLayout layout);

  const GptOssConfig& config() const override { return config_; }
  std::string backend_name() const override { return "cpu"; }
  std::string parallel_layout() const override { return layout_.describe(); }
  int32_t kv_num_blocks() const override { return num_blocks_; }
  int32_t kv_num_sliding_blocks() const override { return num_sliding_blocks_; }
  int32_t kv_block_size() const override { return block_size_; }
  // Summed over the ranks (KV heads replicated when TP > KV heads count once per copy).
  int64_t kv_bytes_per_block() const override;
  int64_t kv_bytes_per_token() const override;
  void forward(const ForwardBatch& batch, std::vector<float>& logits) override;
  bool samples_on_device() const override { return true; }
  bool samples_with_token_masks() const override { return true; }
  using Model::forward_sample;  // the overload without logprobs
  void forward_sample(const ForwardBatch& batch, std::span<const RowSampling> rows, std::vector<int32_t>& tokens,
                      std::vector<RowLogprobs>& logprobs) override;
  // The bytes the ranks have handed to collectives so far, summed over ranks (comm::ThreadGroup::bytes_sent).
  int64_t communicated_bytes() const { return group_.bytes_sent(); }

 protected:
  void allocate_kv_cache_impl(int32_t num_blocks, int32_t block_size, int32_t num_sliding_blocks) override;

 private:
  // Runs fn(rank, communicator) on one thread per rank; rethrows the first failure on this thread.
  void run_ranks(const std::function<void(int32_t rank, comm::Communicator& comm)>& fn);

  GptOssConfig config_;
  GptOssWeights weights_;
  std::shared_ptr<const void> storage_;
  ParallelLayout layout_;
  RopeTables rope_;
  comm::ThreadGroup group_;
  std::vector<std::unique_ptr<CpuShardedRank>> ranks_;
  int32_t num_blocks_ = 0;
  int32_t block_size_ = 0;
  int32_t num_sliding_blocks_ = 0;
};

}  // namespace gossamer::model
