#include "model/cpu_sharded_model.h"

#include <algorithm>
#include <thread>

#include "core/error.h"
#include "kernels/sampling.h"
#include "kernels/token_mask.h"
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

ShardedStep CpuShardedModel::plan(const ForwardBatch& batch) const {
  ShardedStep step;
  for (size_t s = 0; s < batch.sequences.size(); ++s) {
    const SequenceInput& seq = batch.sequences[s];
    for (size_t i = 0; i < seq.tokens.size(); ++i) {
      const int32_t position = seq.num_cached + static_cast<int32_t>(i);
      const int64_t block = seq.block_table[static_cast<size_t>(position / block_size_)];
      const int64_t sliding_block =
          num_sliding_blocks_ > 0 ? seq.sliding_block_table[static_cast<size_t>(position / block_size_)] : block;
      step.tokens.push_back({static_cast<int32_t>(s), position, block * block_size_ + position % block_size_,
                             sliding_block * block_size_ + position % block_size_});
      const bool last = i + 1 == seq.tokens.size();
      if (seq.logits == LogitsWanted::kAll || (seq.logits == LogitsWanted::kLast && last)) {
        step.logit_rows.push_back(static_cast<int64_t>(step.tokens.size()) - 1);
      }
    }
  }
  const int64_t half = config_.head_dim / 2, num_tokens = static_cast<int64_t>(step.tokens.size());
  step.cos.resize(static_cast<size_t>(num_tokens * half));
  step.sin.resize(step.cos.size());
  for (int64_t t = 0; t < num_tokens; ++t) {
    rope_.at(step.tokens[static_cast<size_t>(t)].position, step.cos.data() + t * half, step.sin.data() + t * half);
  }
  return step;
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
  const ShardedStep step = plan(batch);
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
  logprobs.assign(rows.size(), {});
  // Penalties, logprobs and token masks need the whole row: gather the full logits and draw with the one
  // rule's reference (kernels/sampling.h), which the vocab-parallel draw follows for the plain settings.
  const bool whole_rows = std::any_of(rows.begin(), rows.end(), [](const RowSampling& row) {
    return !row.penalty_tokens.empty() || row.num_top_logprobs >= 0 || row.token_mask != nullptr;
  });
  if (whole_rows) {
    sample_full_rows(batch, rows, tokens, logprobs);
    return;
  }
  check_forward_batch(config_, num_blocks_, block_size_, batch, num_sliding_blocks_);
  const ShardedStep step = plan(batch);
  GOSSAMER_CHECK(rows.size() == step.logit_rows.size(), "forward_sample: ", rows.size(), " sampling rows for ",
                 step.logit_rows.size(), " logits rows");
  const int64_t padded = vocab_shard_rows(layout_, config_);
  run_ranks([&](int32_t rank, comm::Communicator& comm) {
    std::vector<float> local;
    CpuShardedRank& shard = *ranks_[static_cast<size_t>(rank)];
    shard.forward(step, batch, comm, local);
    std::vector<int32_t> drawn = sample_vocab_parallel(local.data(), static_cast<int64_t>(rows.size()), padded,
                                                       shard.shard().vocab, config_.vocab_size, rows, comm);
    if (rank == 0) tokens = std::move(drawn);
  });
}

void CpuShardedModel::sample_full_rows(const ForwardBatch& batch, std::span<const RowSampling> rows,
                                       std::vector<int32_t>& tokens, std::vector<RowLogprobs>& logprobs) {
  std::vector<float> logits;
  forward(batch, logits);
  const int n = static_cast<int>(rows.size()), vocab = config_.vocab_size;
  GOSSAMER_CHECK(logits.size() == static_cast<size_t>(n) * static_cast<size_t>(vocab), "forward_sample: ", n,
                 " sampling rows for ", logits.size() / static_cast<size_t>(vocab), " logits rows");
  std::vector<float> temperature(static_cast<size_t>(n)), top_p(static_cast<size_t>(n)),
      presence(static_cast<size_t>(n)), frequency(static_cast<size_t>(n)), repetition(static_cast<size_t>(n)),
      penalized(static_cast<size_t>(n) * static_cast<size_t>(vocab)), out_logprobs(static_cast<size_t>(n)),
      top_logprobs(static_cast<size_t>(n) * kernels::kMaxTopLogprobs);
  std::vector<int32_t> top_k(static_cast<size_t>(n)), offsets(static_cast<size_t>(n) + 1, 0), entries, counts,
      num_top(static_cast<size_t>(n)), top_tokens(static_cast<size_t>(n) * kernels::kMaxTopLogprobs);
  std::vector<uint64_t> seeds(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    const RowSampling& row = rows[static_cast<size_t>(r)];
    temperature[static_cast<size_t>(r)] = row.temperature;
    top_k[static_cast<size_t>(r)] = row.top_k;
    top_p[static_cast<size_t>(r)] = row.top_p;
    seeds[static_cast<size_t>(r)] = row.seed;
    presence[static_cast<size_t>(r)] = row.presence;
    frequency[static_cast<size_t>(r)] = row.frequency;
    repetition[static_cast<size_t>(r)] = row.repetition;
    num_top[static_cast<size_t>(r)] = std::max(row.num_top_logprobs, 0);
    entries.insert(entries.end(), row.penalty_tokens.begin(), row.penalty_tokens.end());
    counts.insert(counts.end(), row.penalty_counts.begin(), row.penalty_counts.end());
    offsets[static_cast<size_t>(r) + 1] = static_cast<int32_t>(entries.size());
    if (row.token_mask != nullptr) {  // refused tokens are -inf before everything else
      kernels::TokenMaskParams mask;
      mask.logits = logits.data() + static_cast<size_t>(r) * static_cast<size_t>(vocab);
      mask.masks = row.token_mask;
      mask.num_rows = 1;
      mask.vocab = vocab;
      mask.words = (vocab + 31) / 32;
      kernels::token_mask_cpu(mask);
    }
  }
  kernels::SamplingParams p;
  p.logits = logits.data();
  tokens.assign(static_cast<size_t>(n), 0);
  p.out_tokens = tokens.data();
  p.temperature = temperature.data();
  p.top_k = top_k.data();
  p.top_p = top_p.data();
  p.seeds = seeds.data();
  p.num_rows = n;
  p.vocab = vocab;
  p.penalty_offsets = offsets.data();
  p.penalty_tokens = entries.data();
  p.penalty_counts = counts.data();
  p.presence = presence.data();
  p.frequency = frequency.data();
  p.repetition = repetition.data();
  p.penalized = penalized.data();
  p.out_logprobs = out_logprobs.data();
  p.num_top = num_top.data();
  p.out_top_tokens = top_tokens.data();
  p.out_top_logprobs = top_logprobs.data();
  kernels::sampling_cpu(p);
  for (int r = 0; r < n; ++r) {
    const RowSampling& row = rows[static_cast<size_t>(r)];
    if (row.num_top_logprobs < 0) continue;
    RowLogprobs& out = logprobs[static_cast<size_t>(r)];
    out.logprob = out_logprobs[static_cast<size_t>(r)];
    for (int j = 0; j < std::min(row.num_top_logprobs, kernels::kMaxTopLogprobs); ++j) {
      const size_t k = static_cast<size_t>(r) * kernels::kMaxTopLogprobs + static_cast<size_t>(j);
      out.top.emplace_back(top_tokens[k], top_logprobs[k]);
    }
  }
}

}  // namespace gossamer::model
