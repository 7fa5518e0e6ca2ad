// `--load-format dummy` on the GPU (CudaWeights::random; label `gpu`, skipped visibly without a GPU). On a
// vocab-parallel rank (a vocabulary slice): the rank's embedding is exactly its rows of the unsharded random
// embedding, its unembedding has its row count, and the replicated tensors (norms, router) agree with the
// unsharded model's although the rank's other shapes (heads, intermediate) differ. TP2 splits the tiny
// vocabulary evenly, TP3 leaves the last slice short (1,024 = 342 + 342 + 340). Across weight formats: the FP8
// experts are the MXFP4 ones converted, as a checkpoint's are.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "gpu_test_util.h"
#include "kernels/fp8_tiled.h"
#include "kernels/mxfp4_tiled.h"
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

// --weights fp8's random experts are --weights mxfp4's for the same seed converted by the rule a checkpoint's MXFP4
// experts take (kernels::mxfp4_tiled_to_fp8_cpu, 128×128 block scales; partial blocks: the tiny intermediate is
// 192), with the same biases, and the dense linears (FP8 in both formats) are the same bytes: the two formats hold
// the same values and route alike, so their benchmarks compare the kernels alone.
TEST(CudaRandomWeightsTest, Fp8ExpertsAreTheMxfp4ExpertsConverted) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA GPU: random FP8 experts not tested";
  const GptOssConfig config = preset_config("tiny");
  const uint64_t seed = 5;
  const CudaWeights fp8 = CudaWeights::random(config, seed, WeightFormat::kFp8);
  const CudaWeights mxfp4 = CudaWeights::random(config, seed, WeightFormat::kMxfp4);
  ASSERT_EQ(fp8.layers.size(), mxfp4.layers.size());
  const int groups = config.num_experts, hidden = config.hidden_size, inter = config.intermediate_size;
  struct Pair {
    const char* name;
    const DeviceExperts& fp8;
    const DeviceExperts& mxfp4;
    int rows, cols;
  };
  for (size_t layer = 0; layer < fp8.layers.size(); ++layer) {
    const CudaLayer &f = fp8.layers[layer], &m = mxfp4.layers[layer];
    ASSERT_EQ(f.qkv.weight.bytes(), m.qkv.weight.bytes());
    EXPECT_EQ(download(f.qkv.weight, f.qkv.weight.bytes()), download(m.qkv.weight, m.qkv.weight.bytes()))
        << "layer " << layer << " qkv";
    for (const Pair& p :
         {Pair{"gate_up", f.gate_up, m.gate_up, 2 * inter, hidden}, Pair{"down", f.down, m.down, hidden, inter}}) {
      const std::string name = "layer " + std::to_string(layer) + " " + p.name;
      ASSERT_TRUE(p.mxfp4.mxfp4) << name;
      ASSERT_TRUE(p.fp8.fp8 && !p.fp8.mxfp4) << name;
      const std::vector<uint8_t> tiled =
          download(p.mxfp4.weight, static_cast<size_t>(groups * kernels::mxfp4_tiled_group_bytes(p.rows, p.cols)));
      std::vector<uint8_t> want(static_cast<size_t>(groups * kernels::fp8_tiled_group_bytes(p.rows, p.cols)));
      std::vector<float> want_scales(static_cast<size_t>(groups) * ((p.rows + 127) / 128) * ((p.cols + 127) / 128));
      kernels::mxfp4_tiled_to_fp8_cpu(tiled.data(), want.data(), want_scales.data(), groups, p.rows, p.cols);
      EXPECT_TRUE(download(p.fp8.weight, want.size()) == want) << name << ": FP8 weights";
      std::vector<float> got_scales(want_scales.size());
      GOSSAMER_CUDA_CHECK(
          cudaMemcpy(got_scales.data(), p.fp8.scales.get(), got_scales.size() * sizeof(float), cudaMemcpyDeviceToHost));
      EXPECT_EQ(got_scales, want_scales) << name << ": block scales";
      const size_t bias_bytes = static_cast<size_t>(groups) * p.rows * 2;
      EXPECT_EQ(download(p.fp8.bias, bias_bytes), download(p.mxfp4.bias, bias_bytes)) << name << ": bias";
    }
  }
}

}  // namespace
}  // namespace gossamer::model::cuda
