// The KV budget → block count rule (EngineConfig::resolve, model::kv_pool_bytes_per_token) with layers of
// different bytes per position, as --kv-cache-dtype fp8 makes them on cuda (e4m3 full-attention layers,
// bf16 sliding-window layers): the main pool's blocks cost only the full layers' bytes when the ring
// serves the sliding ones, and both kinds without the ring. And the cap on the ring's share of an automatic
// budget (EngineConfig::kMaxRingShare), which lowers max_num_seqs rather than starve the main pool.
#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "engine/engine_config.h"
#include "model/model.h"
#include "testing/fake_model.h"

namespace gossamer::engine {
namespace {

// 4 layers, two of them sliding (window 128), 1,024 bytes per position on a full layer and 2,048 on a
// sliding one (gpt-oss's 2·512 e4m3 vs 2·512 bf16).
class MixedKvModel : public FakeModel {
 public:
  MixedKvModel() {
    config_.num_layers = 4;
    config_.head_dim = 64;
    config_.num_q_heads = 64;
    config_.num_kv_heads = 8;
    config_.sliding_window = 128;
    config_.layer_is_sliding = {true, false, true, false};
    config_.max_position_embeddings = 8192;
    config_.vocab_size = 201088;
  }
  const model::GptOssConfig& config() const override { return config_; }
  int64_t kv_layer_bytes_per_token(bool sliding) const override { return sliding ? 2048 : 1024; }
  int64_t kv_bytes_per_token() const override { return 2 * 2048 + 2 * 1024; }

 private:
  model::GptOssConfig config_;
};

TEST(KvPoolSizing, PoolBytesFollowTheLayerKinds) {
  const MixedKvModel model;
  const model::KvPoolBytes ring = model::kv_pool_bytes_per_token(model, true);
  EXPECT_EQ(ring.main, 2 * 1024);
  EXPECT_EQ(ring.ring, 2 * 2048);
  const model::KvPoolBytes flat = model::kv_pool_bytes_per_token(model, false);
  EXPECT_EQ(flat.main, 2 * 1024 + 2 * 2048);
  EXPECT_EQ(flat.ring, 0);
}

// 64 sequences of up to 8,192 positions over an automatic budget of `budget` bytes.
EngineConfig sixty_four_sequences(int64_t budget) {
  EngineConfig config;
  config.max_num_seqs = 64;
  config.max_model_len = 8192;
  config.kv_cache_memory_bytes = budget;
  return config;
}

TEST(KvPoolSizing, BudgetBuysBlocksAtThePoolsOwnBytes) {
  const MixedKvModel model;
  EngineConfig config = sixty_four_sequences(int64_t{1} << 30);
  const EngineConfig with_ring = config.resolve(model);
  ASSERT_GT(with_ring.num_sliding_kv_blocks, 0);
  const int64_t ring_bytes = int64_t{2} * 2048 * 16 * with_ring.num_sliding_kv_blocks;
  EXPECT_EQ(with_ring.num_kv_blocks, (config.kv_cache_memory_bytes - ring_bytes) / (int64_t{2} * 1024 * 16));
  config.sliding_window_ring = false;
  const EngineConfig flat = config.resolve(model);
  EXPECT_EQ(flat.num_sliding_kv_blocks, 0);
  EXPECT_EQ(flat.num_kv_blocks, config.kv_cache_memory_bytes / (int64_t{6} * 1024 * 16));
}

// A ring block of MixedKvModel: 2 sliding layers · 2,048 bytes · 16 positions.
constexpr int64_t kRingBlockBytes = int64_t{2} * 2048 * 16;
constexpr int64_t kMainBlockBytes = int64_t{2} * 1024 * 16;

TEST(KvPoolSizing, RingOverItsShareLowersMaxNumSeqs) {
  const MixedKvModel model;
  const EngineConfig config = sixty_four_sequences(int64_t{64} << 20);
  // NOTE: the ring for 64 sequences alone (64 · 19 + 128 blocks, 84 MiB) exceeds the whole 64 MiB budget:
  // before the cap the main pool got 1 block and resolve() refused to start.
  ASSERT_GT(kRingBlockBytes * config.ring_blocks_needed(model.config().sliding_window), config.kv_cache_memory_bytes);
  testing::internal::CaptureStderr();
  const EngineConfig out = config.resolve(model);
  const std::string log = testing::internal::GetCapturedStderr();
  const int64_t share = config.kv_cache_memory_bytes / 4;
  EXPECT_EQ(out.max_num_seqs, 6);  // (16 MiB / 64 KiB − 128) / 19
  EXPECT_EQ(out.max_num_batched_tokens, 2048);
  EXPECT_EQ(out.num_sliding_kv_blocks, out.ring_blocks_needed(out.sliding_window));
  EXPECT_LE(kRingBlockBytes * out.num_sliding_kv_blocks, share);
  EngineConfig one_more = out;
  ++one_more.max_num_seqs;  // the largest count that fits
  EXPECT_GT(kRingBlockBytes * one_more.ring_blocks_needed(out.sliding_window), share);
  EXPECT_GE(out.num_kv_blocks, (out.max_model_len + out.block_size - 1) / out.block_size);
  EXPECT_EQ(out.num_kv_blocks,
            (config.kv_cache_memory_bytes - kRingBlockBytes * out.num_sliding_kv_blocks) / kMainBlockBytes);
  EXPECT_NE(log.find("max_num_seqs lowered from 64 to 6"), std::string::npos) << log;
  // The engine resolves the server's resolved copy again: nothing moves.
  const EngineConfig again = out.resolve(model);
  EXPECT_EQ(again.max_num_seqs, out.max_num_seqs);
  EXPECT_EQ(again.num_sliding_kv_blocks, out.num_sliding_kv_blocks);
  EXPECT_EQ(again.num_kv_blocks, out.num_kv_blocks);
}

TEST(KvPoolSizing, LoweredMaxNumSeqsKeepsTheResolvedStepBudget) {
  const MixedKvModel model;
  EngineConfig config = sixty_four_sequences(int64_t{64} << 20);
  config.decode_first = true;  // auto budget: max_num_seqs + max_prefill_tokens, of the asked max_num_seqs
  const EngineConfig out = config.resolve(model);
  EXPECT_EQ(out.max_num_batched_tokens, 64 + EngineConfig::kDefaultPrefillTokens);
  EXPECT_LT(out.max_num_seqs, 64);
  EXPECT_EQ(out.max_num_seqs, out.max_num_seqs_for_ring(out.sliding_window, (int64_t{16} << 20) / kRingBlockBytes));
  EXPECT_LE(kRingBlockBytes * out.num_sliding_kv_blocks, config.kv_cache_memory_bytes / 4);
}

TEST(KvPoolSizing, RingWithinItsShareChangesNothing) {
  const MixedKvModel model;
  EngineConfig config = sixty_four_sequences(int64_t{1} << 30);  // the ring: 84 MiB, 8% of it
  testing::internal::CaptureStderr();
  const EngineConfig out = config.resolve(model);
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  EXPECT_EQ(out.max_num_seqs, 64);
  EXPECT_EQ(out.max_num_batched_tokens, 2048);
  EXPECT_EQ(out.num_sliding_kv_blocks, 64 * 19 + 2048 / 16);
  // Given blocks (no automatic budget) are taken as they are, however large the ring.
  config.kv_cache_memory_bytes = int64_t{64} << 20;
  config.num_kv_blocks = 512;
  const EngineConfig given = config.resolve(model);
  EXPECT_EQ(given.max_num_seqs, 64);
  EXPECT_EQ(given.num_kv_blocks, 512);
}

TEST(KvPoolSizing, BudgetTooSmallEvenForOneSequenceStillRefuses) {
  const MixedKvModel model;
  // 8,192 positions are 512 main blocks, 16 MiB; one sequence's ring (147 blocks, 9.2 MiB) leaves 10.8 MiB.
  const EngineConfig config = sixty_four_sequences(int64_t{20} << 20);
  try {
    (void)config.resolve(model);
    FAIL() << "resolve() accepted a cache that cannot hold one sequence";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("cannot hold one sequence of max_model_len 8192"), std::string::npos)
        << error.what();
  }
}

}  // namespace
}  // namespace gossamer::engine
