// The KV budget → block count rule (EngineConfig::resolve, model::kv_pool_bytes_per_token) with layers of
// different bytes per position, as --kv-cache-dtype fp8 makes them on cuda (e4m3 full-attention layers,
// bf16 sliding-window layers): the main pool's blocks cost only the full layers' bytes when the ring
// serves the sliding ones, and both kinds without the ring.
#include <gtest/gtest.h>

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

TEST(KvPoolSizing, BudgetBuysBlocksAtThePoolsOwnBytes) {
  const MixedKvModel model;
  EngineConfig config;
  config.max_num_seqs = 64;
  config.max_model_len = 8192;
  config.kv_cache_memory_bytes = int64_t{1} << 30;
  const EngineConfig with_ring = config.resolve(model);
  ASSERT_GT(with_ring.num_sliding_kv_blocks, 0);
  const int64_t ring_bytes = int64_t{2} * 2048 * 16 * with_ring.num_sliding_kv_blocks;
  EXPECT_EQ(with_ring.num_kv_blocks, (config.kv_cache_memory_bytes - ring_bytes) / (int64_t{2} * 1024 * 16));
  config.sliding_window_ring = false;
  const EngineConfig flat = config.resolve(model);
  EXPECT_EQ(flat.num_sliding_kv_blocks, 0);
  EXPECT_EQ(flat.num_kv_blocks, config.kv_cache_memory_bytes / (int64_t{6} * 1024 * 16));
}

}  // namespace
}  // namespace gossamer::engine
