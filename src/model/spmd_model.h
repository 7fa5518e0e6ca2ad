// One model over a one-process-per-GPU group (docs/scaling.md): every rank must make the same model
// calls in the same order, so that their collectives line up. Rank 0's engine drives SpmdLeader, which
// sends each call (KV cache allocation, forward, forward_sample) to the other ranks over a TCP control
// channel before running it on its own shard; ranks 1..N−1 run run_spmd_worker, replaying the calls on
// theirs. Only rank 0's results are used (every rank computes the same ones).
//
// Contract: the control channel is a TcpBootstrap of the group (rank 0 = the leader), separate from the
// communicator's. A worker that is gone makes the leader's next call throw comm::CommError naming it
// (the engine then aborts that step's requests); the leader's destructor tells the workers to stop, and
// a vanished leader ends each worker's loop with CommError. A call that fails on a worker with a
// gossamer::Error (bad input) fails identically on the leader; the worker logs it and keeps serving.
#pragma once

#include <memory>

#include "comm/tcp_bootstrap.h"
#include "model/model.h"

namespace gossamer::model {

class SpmdLeader final : public Model {
 public:
  SpmdLeader(std::unique_ptr<Model> local, std::unique_ptr<comm::TcpBootstrap> control);
  ~SpmdLeader() override;

  const GptOssConfig& config() const override { return local_->config(); }
  std::string backend_name() const override { return local_->backend_name(); }
  std::string parallel_layout() const override { return local_->parallel_layout(); }
  int32_t kv_num_blocks() const override { return local_->kv_num_blocks(); }
  int32_t kv_num_sliding_blocks() const override { return local_->kv_num_sliding_blocks(); }
  int32_t kv_block_size() const override { return local_->kv_block_size(); }
  int64_t kv_bytes_per_block() const override { return local_->kv_bytes_per_block(); }
  int64_t kv_bytes_per_token() const override { return local_->kv_bytes_per_token(); }
  int64_t kv_layer_bytes_per_token(bool sliding) const override { return local_->kv_layer_bytes_per_token(sliding); }
  std::string kv_cache_dtype_name() const override { return local_->kv_cache_dtype_name(); }
  uint64_t weight_bytes() const override { return local_->weight_bytes(); }
  bool samples_on_device() const override { return local_->samples_on_device(); }
  void forward(const ForwardBatch& batch, std::vector<float>& logits) override;
  bool samples_with_token_masks() const override { return local_->samples_with_token_masks(); }
  using Model::forward_sample;  // the overload without logprobs
  void forward_sample(const ForwardBatch& batch, std::span<const RowSampling> rows, std::vector<int32_t>& tokens,
                      std::vector<RowLogprobs>& logprobs) override;

 protected:
  void allocate_kv_cache_impl(int32_t num_blocks, int32_t block_size, int32_t num_sliding_blocks) override;

 private:
  std::unique_ptr<Model> local_;
  std::unique_ptr<comm::TcpBootstrap> control_;
};

// Rank r ≥ 1: replays rank 0's calls on `local` until the leader says stop (returns) or is gone (throws
// comm::CommError).
void run_spmd_worker(Model& local, comm::TcpBootstrap& control);

}  // namespace gossamer::model
