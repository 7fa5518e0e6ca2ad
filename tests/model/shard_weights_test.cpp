// A rank's weights as a smaller checkpoint (model/shard_weights.h): every view and materialised slice
// holds exactly the rank's part of the whole model, TP and EP, and refused layouts say why.
#include "model/shard_weights.h"

#include <gtest/gtest.h>

#include "model/cpu_ops.h"
#include "model/dummy_checkpoint.h"

namespace gossamer::model {
namespace {

std::vector<float> decode_expert(const MxFp4Tensor& tensor, int64_t expert) {
  std::vector<float> out(static_cast<size_t>(tensor.rows() * tensor.cols()));
  cpu::decode_mxfp4_expert(tensor, expert, out.data());
  return out;
}

class ShardWeightsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config_ = preset_config("tiny");  // 16 q / 2 kv heads, 8 experts, intermediate 192, hidden 256
    dummy_ = make_dummy_weights(config_, 3);
  }
  GptOssConfig config_;
  DummyWeights dummy_;
};

TEST_F(ShardWeightsTest, TensorParallelRankHoldsItsHeadsAndIntermediateColumns) {
  const int64_t hidden = config_.hidden_size, inter = config_.intermediate_size;
  for (int32_t rank : {0, 1}) {
    const RankWeights shard = shard_weights(config_, dummy_.weights, dummy_.storage, {2, false, 1}, rank);
    EXPECT_EQ(shard.config.num_q_heads, 8);
    EXPECT_EQ(shard.config.num_kv_heads, 1);
    EXPECT_EQ(shard.config.intermediate_size, 96);
    EXPECT_EQ(shard.config.num_experts, 8);
    const LayerWeights& full = dummy_.weights.layers[1];
    const LayerWeights& mine = shard.weights.layers[1];
    const int64_t q0 = rank * 512, kv0 = rank * 64, i0 = rank * 96;
    // q/k rows and the o_proj columns of the local heads
    const auto q_full = cpu::to_f32(full.q_proj), q_mine = cpu::to_f32(mine.q_proj);
    ASSERT_EQ(mine.q_proj.shape, (Shape{512, hidden}));
    EXPECT_TRUE(std::equal(q_mine.begin(), q_mine.end(), q_full.begin() + q0 * hidden));
    const auto k_full = cpu::to_f32(full.k_proj), k_mine = cpu::to_f32(mine.k_proj);
    EXPECT_TRUE(std::equal(k_mine.begin(), k_mine.end(), k_full.begin() + kv0 * hidden));
    const auto o_full = cpu::to_f32(full.o_proj), o_mine = cpu::to_f32(mine.o_proj);
    ASSERT_EQ(mine.o_proj.shape, (Shape{hidden, 512}));
    for (int64_t row = 0; row < hidden; row += 37) {
      for (int64_t c = 0; c < 512; c += 29)
        EXPECT_EQ(o_mine[static_cast<size_t>(row * 512 + c)], o_full[static_cast<size_t>(row * 1024 + q0 + c)]);
    }
    const auto sinks_full = cpu::to_f32(full.sinks), sinks_mine = cpu::to_f32(mine.sinks);
    EXPECT_TRUE(std::equal(sinks_mine.begin(), sinks_mine.end(), sinks_full.begin() + rank * 8));
    // every expert's gate_up rows [2·i0, 2·i1) and down columns [i0, i1)
    for (int64_t e : {0, 5}) {
      const auto gu_full = decode_expert(full.gate_up, e), gu_mine = decode_expert(mine.gate_up, e);
      ASSERT_EQ(gu_mine.size(), static_cast<size_t>(2 * 96 * hidden));
      EXPECT_TRUE(std::equal(gu_mine.begin(), gu_mine.end(), gu_full.begin() + 2 * i0 * hidden));
      const auto down_full = decode_expert(full.down, e), down_mine = decode_expert(mine.down, e);
      ASSERT_EQ(down_mine.size(), static_cast<size_t>(hidden * 96));
      for (int64_t row = 0; row < hidden; row += 17) {
        for (int64_t c = 0; c < 96; ++c)
          EXPECT_EQ(down_mine[static_cast<size_t>(row * 96 + c)], down_full[static_cast<size_t>(row * inter + i0 + c)]);
      }
    }
    const auto gub_full = cpu::to_f32(full.gate_up_bias), gub_mine = cpu::to_f32(mine.gate_up_bias);
    EXPECT_EQ(gub_mine[static_cast<size_t>(5 * 192 + 7)], gub_full[static_cast<size_t>(5 * 2 * inter + 2 * i0 + 7)]);
    // the replicated biases of row-parallel outputs: rank 0 only
    const auto o_bias = cpu::to_f32(mine.o_bias), down_bias = cpu::to_f32(mine.down_bias);
    const auto o_bias_full = cpu::to_f32(full.o_bias), down_bias_full = cpu::to_f32(full.down_bias);
    EXPECT_EQ(o_bias, rank == 0 ? o_bias_full : std::vector<float>(o_bias_full.size(), 0.0f));
    EXPECT_EQ(down_bias, rank == 0 ? down_bias_full : std::vector<float>(down_bias_full.size(), 0.0f));
    // the embedding and the unembedding: views of the rank's vocabulary rows (vocab-parallel)
    EXPECT_EQ(shard.shard.vocab.begin, rank * ((config_.vocab_size + 1) / 2));
    for (const auto& [mine_vocab, full_vocab] : {std::pair{&shard.weights.embedding, &dummy_.weights.embedding},
                                                 std::pair{&shard.weights.unembedding, &dummy_.weights.unembedding}}) {
      EXPECT_EQ(mine_vocab->shape[0], shard.shard.vocab.size());
      EXPECT_EQ(mine_vocab->shape[1], full_vocab->shape[1]);
      EXPECT_EQ(static_cast<const uint8_t*>(mine_vocab->data),
                static_cast<const uint8_t*>(full_vocab->data) +
                    shard.shard.vocab.begin * full_vocab->shape[1] * bits_of(full_vocab->dtype) / 8);
    }
  }
}

TEST_F(ShardWeightsTest, ExpertParallelRankHoldsWholeLocalExperts) {
  const RankWeights shard = shard_weights(config_, dummy_.weights, dummy_.storage, {4, true, 1}, 3);
  EXPECT_EQ(shard.shard.experts.begin, 6);
  EXPECT_EQ(shard.shard.experts.size(), 2);
  EXPECT_EQ(shard.config.intermediate_size, config_.intermediate_size);
  const LayerWeights& full = dummy_.weights.layers[0];
  const LayerWeights& mine = shard.weights.layers[0];
  EXPECT_EQ(mine.gate_up.num_experts(), 2);
  EXPECT_EQ(decode_expert(mine.gate_up, 1), decode_expert(full.gate_up, 7));
  EXPECT_EQ(decode_expert(mine.down, 0), decode_expert(full.down, 6));
  const std::vector<float> down_bias_full = cpu::to_f32(full.down_bias);
  EXPECT_EQ(cpu::to_f32(mine.down_bias), std::vector<float>(down_bias_full.begin() + 6 * 256, down_bias_full.end()))
      << "each expert's own bias stays with it under EP";
  EXPECT_EQ(cpu::to_f32(mine.o_bias), std::vector<float>(256, 0.0f)) << "rank 3 does not add the o_proj bias";
}

TEST_F(ShardWeightsTest, RefusedLayoutsSayWhy) {
  try {  // 192 / 4 = 48 intermediate columns: not whole MXFP4 groups
    shard_weights(config_, dummy_.weights, dummy_.storage, {4, false, 1}, 0);
    FAIL() << "TP4 MoE on 192 columns was accepted";
  } catch (const Error& error) {
    EXPECT_NE(
        std::string(error.what()).find("48 intermediate columns per rank, not a multiple of the MXFP4 group of 32"),
        std::string::npos)
        << error.what();
  }
  EXPECT_THROW(shard_weights(config_, dummy_.weights, dummy_.storage, {3, false, 1}, 0), Error);
}

}  // namespace
}  // namespace gossamer::model
