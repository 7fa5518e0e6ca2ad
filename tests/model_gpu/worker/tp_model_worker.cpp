// One rank of a tensor/expert-parallel cuda model, run as its own process by
// tests/model_gpu/tp_model_gpu_test.cpp (both ranks may share one GPU: they reduce through the IPC
// all-reduce). Loads its shard of a checkpoint (model/shard_weights.h), prefills every sequence of a
// tokens JSON up to `prefix`, decodes the rest one token per step (the decode graphs), and writes the
// logits of every position as float32 .npy [batch, length, vocab], after a line with the rank's embedding rows
// and weight bytes ("embedding_rows N weight_bytes B"). With --tokens-out it then runs the same
// steps again as sampled steps (on a vocab-parallel group: sampled on the slices, kernels/vocab_sampling.h)
// and writes the drawn tokens as float32 .npy [4, batch, length]: greedy, then temperature 0.8, top-k 40,
// top-p 0.9 seeded by position, then greedy under a token mask that allows the even ids (structured output:
// applied to each rank's slice), then greedy with penalties (tests/model_gpu/tp_penalty_rows.h, entries from
// the position's logits) and 5 top logprobs, whose logprobs go to --logprobs-out as float32 .npy
// [batch, length, 11]: the drawn token's, the 5 top ids, their logprobs. --world 1: the whole model on the
// GPU, no communicator (the TP1 reference).
//
// usage: gossamer_tp_model_worker --model DIR --tokens JSON --out NPY --rank R --world N --port P
//        [--expert-parallel] [--weights mxfp4|fp8|bf16] [--prefix N] [--tokens-out NPY --logprobs-out NPY]
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "../tp_penalty_rows.h"
#include "comm/cuda/cuda_communicator.h"
#include "core/mapped_file.h"
#include "core/npy.h"
#include "model/checkpoint.h"
#include "model/cuda/cuda_model.h"
#include "model/shard_weights.h"

int main(int argc, char** argv) {
  using namespace gossamer;
  std::string model_dir, tokens_path, out_path, tokens_out_path, logprobs_out_path, weights = "bf16";
  int rank = 0, world = 1, port = 0, prefix = 0;
  bool expert_parallel = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const std::string value = i + 1 < argc ? argv[i + 1] : "";
    if (arg == "--model")
      model_dir = value, ++i;
    else if (arg == "--tokens")
      tokens_path = value, ++i;
    else if (arg == "--out")
      out_path = value, ++i;
    else if (arg == "--rank")
      rank = std::atoi(value.c_str()), ++i;
    else if (arg == "--world")
      world = std::atoi(value.c_str()), ++i;
    else if (arg == "--port")
      port = std::atoi(value.c_str()), ++i;
    else if (arg == "--weights")
      weights = value, ++i;
    else if (arg == "--prefix")
      prefix = std::atoi(value.c_str()), ++i;
    else if (arg == "--tokens-out")
      tokens_out_path = value, ++i;
    else if (arg == "--logprobs-out")
      logprobs_out_path = value, ++i;
    else if (arg == "--expert-parallel")
      expert_parallel = true;
  }
  try {
    const auto tokens = nlohmann::json::parse(read_text_file(tokens_path)).get<std::vector<std::vector<int32_t>>>();
    std::shared_ptr<model::Checkpoint> checkpoint = model::Checkpoint::open(model_dir);
    const model::ParallelLayout layout{world, expert_parallel, 1};
    const model::RankWeights shard =
        model::shard_weights(checkpoint->config(), checkpoint->weights(), checkpoint, layout, rank);

    model::cuda::CudaOptions options;
    options.weights = model::cuda::parse_weight_format(weights);
    if (world > 1) {
      comm::CudaCommOptions comm_options;
      comm_options.bootstrap.port = port;
      comm_options.bootstrap.rank = rank;
      comm_options.bootstrap.world_size = world;
      comm_options.device = 0;
      comm_options.use_nccl = false;  // ranks share one GPU, which NCCL refuses: every sum takes the IPC path
      // The vocab-parallel logits of a prefill of every position travel as one sum of zero-padded slots.
      comm_options.ipc_max_bytes = int64_t{96} << 20;
      options.comm = std::make_shared<comm::CudaCommunicator>(comm_options);
      options.expert_begin = static_cast<int>(shard.shard.experts.begin);
      options.num_local_experts = static_cast<int>(shard.shard.experts.size());
      options.vocab_shard_rows = model::vocab_shard_rows(layout, checkpoint->config());
      options.vocab_rows = shard.shard.vocab.size();
    }
    model::cuda::CudaModel model(shard.config, shard.weights, options);
    // What the rank holds (the test reads these): its vocabulary rows of the embedding and its weight bytes.
    std::printf("rank %d: embedding_rows %lld weight_bytes %llu\n", rank,
                static_cast<long long>(model.embedding_rows()), static_cast<unsigned long long>(model.weight_bytes()));

    // ---- prefill `prefix` positions of every sequence, then one token per step ----
    const int64_t vocab = model.config().vocab_size, length = static_cast<int64_t>(tokens[0].size());
    const int32_t block = 16, per_seq = static_cast<int32_t>((length + block - 1) / block),
                  seqs = static_cast<int32_t>(tokens.size());
    model.allocate_kv_cache(seqs * per_seq, block);
    std::vector<std::vector<int32_t>> tables(tokens.size(), std::vector<int32_t>(static_cast<size_t>(per_seq)));
    for (int32_t b = 0; b < per_seq; ++b) {
      for (int32_t s = 0; s < seqs; ++s) tables[static_cast<size_t>(s)][static_cast<size_t>(b)] = seqs * b + s;
    }
    std::vector<float> out(static_cast<size_t>(seqs * length * vocab)), logits;
    // drawn [4, seqs, length]: greedy, sampled, masked greedy, penalized greedy (as float32: ids are exact);
    // logprobs_out [seqs, length, 1 + 2·5] of the penalized pass
    constexpr int kTop = testing::kTpTopLogprobs, kLogprobWidth = 1 + 2 * kTop;
    std::vector<float> drawn(static_cast<size_t>(4 * seqs * length)),
        logprobs_out(static_cast<size_t>(seqs * length * kLogprobWidth));
    std::vector<testing::PenaltyEntries> entries(static_cast<size_t>(seqs * length));
    const std::vector<uint32_t> even_ids(static_cast<size_t>((vocab + 31) / 32), 0x55555555u);
    std::vector<int32_t> step_tokens;
    std::vector<model::RowLogprobs> step_logprobs;
    // logits, greedy, sampled, masked, penalized with logprobs
    for (int pass = 0; pass < (tokens_out_path.empty() ? 1 : 5); ++pass) {
      for (int64_t done = 0; done < length;) {
        const int64_t n = done == 0 ? std::max<int64_t>(1, prefix) : 1;
        model::ForwardBatch batch;
        for (size_t s = 0; s < tokens.size(); ++s) {
          batch.sequences.push_back({std::span(tokens[s]).subspan(static_cast<size_t>(done), static_cast<size_t>(n)),
                                     static_cast<int32_t>(done), tables[s], model::LogitsWanted::kAll});
        }
        if (pass == 0) {
          model.forward(batch, logits);
          for (size_t s = 0; s < tokens.size(); ++s) {
            std::copy_n(logits.begin() + static_cast<int64_t>(s) * n * vocab, n * vocab,
                        out.begin() + (static_cast<int64_t>(s) * length + done) * vocab);
          }
        } else {
          std::vector<model::RowSampling> rows(static_cast<size_t>(seqs * n));
          for (int64_t s = 0; s < seqs; ++s) {
            for (int64_t i = 0; i < n; ++i) {
              model::RowSampling& row = rows[static_cast<size_t>(s * n + i)];
              if (pass == 2) {
                row.temperature = 0.8f;
                row.top_k = 40;
                row.top_p = 0.9f;
                row.seed = static_cast<uint64_t>(s * length + done + i) * 0x9E3779B9ull + 1;
              }
              if (pass == 3) row.token_mask = even_ids.data();
              if (pass == 4) {
                const int64_t at = s * length + done + i;
                testing::PenaltyEntries& e = entries[static_cast<size_t>(at)];
                e = testing::tp_penalty_entries(out.data() + at * vocab, vocab);  // from pass 0's logits
                row.penalty_tokens = e.tokens;
                row.penalty_counts = e.counts;
                row.presence = testing::kTpPresence;
                row.frequency = testing::kTpFrequency;
                row.repetition = testing::kTpRepetition;
                row.num_top_logprobs = kTop;
              }
            }
          }
          model.forward_sample(batch, rows, step_tokens, step_logprobs);
          for (int64_t s = 0; s < seqs; ++s) {
            for (int64_t i = 0; i < n; ++i) {
              drawn[static_cast<size_t>(((pass - 1) * seqs + s) * length + done + i)] =
                  static_cast<float>(step_tokens[static_cast<size_t>(s * n + i)]);
              if (pass != 4) continue;
              const model::RowLogprobs& lp = step_logprobs[static_cast<size_t>(s * n + i)];
              float* at = logprobs_out.data() + (s * length + done + i) * kLogprobWidth;
              at[0] = lp.logprob;
              for (size_t j = 0; j < lp.top.size() && j < kTop; ++j) {
                at[1 + j] = static_cast<float>(lp.top[j].first);
                at[1 + kTop + j] = lp.top[j].second;
              }
            }
          }
        }
        done += n;
      }
    }
    write_npy_f32(out_path, {seqs, length, vocab}, out.data());
    if (!tokens_out_path.empty()) write_npy_f32(tokens_out_path, {4, seqs, length}, drawn.data());
    if (!logprobs_out_path.empty())
      write_npy_f32(logprobs_out_path, {seqs, length, kLogprobWidth}, logprobs_out.data());
    std::printf("rank %d: %s %s wrote %s (graph replays %lld)\n", rank, layout.describe().c_str(), weights.c_str(),
                out_path.c_str(), static_cast<long long>(model.graph_replays()));
    return 0;
  } catch (const std::exception& error) {
    std::printf("rank %d: error: %s\n", rank, error.what());
    return 1;
  }
}
