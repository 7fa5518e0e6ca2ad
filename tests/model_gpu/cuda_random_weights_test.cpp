// `--load-format dummy` on a vocab-parallel rank (CudaWeights::random with a vocabulary slice; label `gpu`,
// skipped visibly without a GPU): the rank's embedding is exactly its rows of the unsharded random
// embedding, its unembedding has its row count, and the replicated tensors (norms, router) agree with the
// unsharded model's although the rank's other shapes (heads, intermediate) differ. TP2 splits the tiny
// vocabulary evenly, TP3 leaves the last slice short (1,024 = 342 + 342 + 340).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "gpu_test_util.h"
#include "model/cuda/cuda_weights.h"
#include "model/dummy_checkpoint.h"
#include "model/shard_weights.h"

namespace gossamer::model::cuda {
namespace {

using test::have_gpu;

std::vector<uint8_t> download(const DeviceBuffer& buffer, size_t bytes) {
  std::vector<uint8_t> host(bytes);
  GOSSAMER_CUDA_CHECK(cudaMemcpy(host.data(), buffer.get(), bytes, cudaMemcpyDeviceToHost));
  return host;
}

TEST(CudaRandomWeightsTest, VocabSliceHoldsTheUnshardedEmbeddingRows) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA GPU: vocab-parallel random weights not tested";
  GptOssConfig config = preset_config("tiny");
  const uint64_t seed = 11;
  const int64_t hidden = config.hidden_size, vocab = config.vocab_size;
  const CudaWeights whole = CudaWeights::random(config, seed, WeightFormat::kFp8);
  ASSERT_EQ(whole.embedding_rows, vocab);
  const std::vector<uint8_t> embedding = download(whole.embedding, static_cast<size_t>(vocab * hidden * 2));
  const std::vector<uint8_t> final_norm = download(whole.final_norm, static_cast<size_t>(hidden * 2));
  const CudaLayer& first = whole.layers[0];
  const std::vector<uint8_t> attn_norm = download(first.attn_norm, static_cast<size_t>(hidden * 2)),
                             router = download(first.router.weight, first.router.weight.bytes());
  for (const int32_t world : {2, 3}) {
    const ParallelLayout layout{world, false, 1};
    if (world == 3) {
      // TP3 does not divide the tiny heads: the vocabulary slices alone are what this case checks.
      config.num_q_heads = 24;
      config.num_kv_heads = 3;
    }
    for (int32_t rank = 0; rank < world; ++rank) {
      const RankShard shard = shard_for(layout, config, rank);
      const int64_t rows = shard.vocab.size();
      ASSERT_EQ(shard.vocab.begin, rank * ((vocab + world - 1) / world));
      const CudaWeights mine =
          CudaWeights::random(shard_config(config, shard), seed, WeightFormat::kFp8, 0, shard.vocab.begin, rows);
      const std::string name = "TP" + std::to_string(world) + " rank " + std::to_string(rank);
      EXPECT_EQ(mine.embedding_rows, rows) << name;
      EXPECT_EQ(mine.unembedding.n, rows) << name;
      EXPECT_EQ(mine.embedding.bytes(), static_cast<size_t>(rows * hidden * 2)) << name;
      const std::vector<uint8_t> slice = download(mine.embedding, static_cast<size_t>(rows * hidden * 2));
      EXPECT_TRUE(std::equal(slice.begin(), slice.end(), embedding.begin() + shard.vocab.begin * hidden * 2))
          << name << ": the embedding rows differ from the unsharded dummy model's";
      if (world == 2) {  // the same config but for the rank's shapes: the replicated tensors agree
        EXPECT_EQ(download(mine.final_norm, final_norm.size()), final_norm) << name;
        EXPECT_EQ(download(mine.layers[0].attn_norm, attn_norm.size()), attn_norm) << name;
        EXPECT_EQ(download(mine.layers[0].router.weight, router.size()), router) << name;
      }
    }
  }
}

}  // namespace
}  // namespace gossamer::model::cuda
