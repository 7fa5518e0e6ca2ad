#include "model/cpu_sharded_model.h"

#include <algorithm>
#include <thread>

#include "core/error.h"
#include "model/batch_check.h"
#include "model/sharded_sampling.h"

namespace gossamer::model {

CpuShardedModel::CpuShardedModel(GptOssConfig config, GptOssWeights weights, std::shared_ptr<const void> storage,
                                 ParallelLayout layout)
    : config_(std::move(config)),
      weights_(std::move(weights)),
      storage_(std::move(storage)),
      layout_(layout),
      rope_(RopeTables::from_config(config_)),
      group_(layout.tensor_parallel) {
  validate_layout(layout_, config_, -1);
  GOSSAMER_CHECK(layout_.data_parallel == 1, "a CpuShardedModel is one replica (data_parallel 1), got ",
                 layout_.data_parallel);
  GOSSAMER_CHECK(static_cast<int32_t>(weights_.layers.size()) == config_.num_layers, "weights have ",
                 weights_.layers.size(), " layers, config has ", config_.num_layers);
  for (int32_t rank = 0; rank < layout_.tensor_parallel; ++rank) {
    ranks_.push_back(std::make_unique<CpuShardedRank>(config_, weights_, layout_, rank));
  }
}

void CpuShardedModel::allocate_kv_cache_impl(int32_t num_blocks, int32_t block_size, int32_t num_sliding_blocks) {
  GOSSAMER_CHECK(num_blocks > 0 && block_size > 0 && num_sliding_blocks >= 0,
                 "KV cache needs positive blocks and block size");
  num_blocks_ = num_blocks;
  block_size_ = block_size;
  num_sliding_blocks_ = num_sliding_layers() > 0 ? num_sliding_blocks : 0;
  for (auto& rank : ranks_) {
    rank->allocate_kv_cache(int64_t{num_blocks} * block_size, int64_t{num_sliding_blocks_} * block_size, block_size);
  }
}

int64_t CpuShardedModel::kv_bytes_per_token() const {
  int64_t width = 0;
  for (const auto& rank : ranks_) width += rank->kv_width();
  return int64_t{2} * config_.num_layers * width * 4;
}

int64_t CpuShardedModel::kv_bytes_per_block() const {
  return kv_bytes_per_token() * std::max(block_size_, 1);
}

void CpuShardedModel::run_ranks(const std::function<void(int32_t rank, comm::Communicator& comm)>& fn) {
  const int32_t world = layout_.tensor_parallel;
  std::vector<std::string> failures(static_cast<size_t>(world));  // the rank's own failure (not a peer's echo)
  std::vector<std::string> echoes(static_cast<size_t>(world));    // CommError: the group failed under it
  std::vector<std::thread> threads;
  for (int32_t rank = 0; rank < world; ++rank) {
    threads.emplace_back([&, rank] {
      try {
        fn(rank, group_.communicator(rank));
      } catch (const comm::CommError& error) {
        echoes[static_cast<size_t>(rank)] = error.what();
      } catch (const std::exception& error) {
        failures[static_cast<size_t>(rank)] = error.what();
        group_.abort("rank " + std::to_string(rank) + " failed: " + error.what());
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int32_t rank = 0; rank < world; ++rank) {
    if (failures[static_cast<size_t>(rank)].empty()) continue;
    group_.reset();
    GOSSAMER_THROW("rank ", rank, " of ", layout_.describe(), ": ", failures[static_cast<size_t>(rank)]);
  }
  for (int32_t rank = 0; rank < world; ++rank) {
    if (echoes[static_cast<size_t>(rank)].empty()) continue;
    group_.reset();
    GOSSAMER_THROW(layout_.describe(), ": ", echoes[static_cast<size_t>(rank)]);
  }
}

void CpuShardedModel::forward(const ForwardBatch& batch, std::vector<float>& logits) {
  check_forward_batch(config_, num_blocks_, block_size_, batch, num_sliding_blocks_);
  const cpu::StepPlan step = cpu::plan_step(batch, block_size_, num_sliding_blocks_, rope_, config_.head_dim);
  const int64_t num_rows = static_cast<int64_t>(step.logit_rows.size()), padded = vocab_shard_rows(layout_, config_);
  const int64_t vocab = config_.vocab_size;
  logits.resize(static_cast<size_t>(num_rows * vocab));
  run_ranks([&](int32_t rank, comm::Communicator& comm) {
    std::vector<float> local;
    ranks_[static_cast<size_t>(rank)]->forward(step, batch, comm, local);
    // All-gather of the vocab shards: [world, rows, padded]; rank 0 assembles [rows, vocab].
    std::vector<float> gathered(static_cast<size_t>(layout_.tensor_parallel * num_rows * padded));
    comm.all_gather(local.data(), gathered.data(), static_cast<int64_t>(local.size() * sizeof(float)));
    if (rank != 0) return;
    for (int32_t q = 0; q < layout_.tensor_parallel; ++q) {
      const IndexRange slice = ranks_[static_cast<size_t>(q)]->shard().vocab;
      for (int64_t r = 0; r < num_rows; ++r) {
        std::copy_n(gathered.begin() + (q * num_rows + r) * padded, slice.size(),
                    logits.begin() + r * vocab + slice.begin);
      }
    }
  });
}

void CpuShardedModel::forward_sample(const ForwardBatch& batch, std::span<const RowSampling> rows,
                                     std::vector<int32_t>& tokens, std::vector<RowLogprobs>& logprobs) {
  check_forward_batch(config_, num_blocks_, block_size_, batch, num_sliding_blocks_);
  const cpu::StepPlan step = cpu::plan_step(batch, block_size_, num_sliding_blocks_, rope_, config_.head_dim);
  GOSSAMER_CHECK(rows.size() == step.logit_rows.size(), "forward_sample: ", rows.size(), " sampling rows for ",
                 step.logit_rows.size(), " logits rows");
  const int64_t padded = vocab_shard_rows(layout_, config_);
  run_ranks([&](int32_t rank, comm::Communicator& comm) {
    std::vector<float> local;
    CpuShardedRank& shard = *ranks_[static_cast<size_t>(rank)];
    shard.forward(step, batch, comm, local);
    VocabParallelSample drawn = sample_vocab_parallel(local.data(), static_cast<int64_t>(rows.size()), padded,
                                                      shard.shard().vocab, config_.vocab_size, rows, comm);
    if (rank != 0) return;
    tokens = std::move(drawn.tokens);
    logprobs = std::move(drawn.logprobs);
  });
}

}  // namespace gossamer::model
