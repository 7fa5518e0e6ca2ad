// The `cpu` backend: a float32 reference forward pass of gpt-oss (spec/gpt-oss-model.md §2).
//
// Contract: the model keeps `storage` alive (a mapped Checkpoint or owned buffers) for as long as it
// lives; weights are read through views into it (dense rows converted to f32 on use, MXFP4 experts
// decoded per expert on use). Not thread-safe: one forward at a time.
#pragma once

#include <memory>
#include <vector>

#include "model/config.h"
#include "model/model.h"
#include "model/rope.h"
#include "model/weights.h"

namespace gossamer::model {

class CpuModel final : public Model {
 public:
  CpuModel(GptOssConfig config, GptOssWeights weights, std::shared_ptr<const void> storage);

  const GptOssConfig& config() const override { return config_; }
  std::string backend_name() const override { return "cpu"; }
  void allocate_kv_cache(int32_t num_blocks, int32_t block_size) override;
  int32_t kv_num_blocks() const override { return num_blocks_; }
  int32_t kv_block_size() const override { return block_size_; }
  int64_t kv_bytes_per_block() const override;
  void forward(const ForwardBatch& batch, std::vector<float>& logits) override;

 private:
  struct SmallLayerParams {  // f32 copies of the small per-layer vectors
    std::vector<float> attn_norm, q_bias, k_bias, v_bias, o_bias, sinks, mlp_norm, router_bias, gate_up_bias, down_bias;
  };
  struct TokenPlan {          // where each new token of the step sits
    int32_t sequence = 0;
    int32_t position = 0;
    int64_t slot = 0;         // KV cache row
  };

  void attention_block(int layer, const std::vector<TokenPlan>& plan, const ForwardBatch& batch,
                       const std::vector<float>& cos, const std::vector<float>& sin, std::vector<float>& x);
  void moe_block(int layer, int64_t num_tokens, std::vector<float>& x);

  GptOssConfig config_;
  GptOssWeights weights_;
  std::shared_ptr<const void> storage_;
  std::vector<SmallLayerParams> small_;
  std::vector<float> final_norm_;
  RopeTables rope_;
  int32_t num_blocks_ = 0;
  int32_t block_size_ = 0;
  std::vector<std::vector<float>> k_cache_, v_cache_;  // per layer: [num_blocks · block_size, kv_width] f32
};

}  // namespace gossamer::model
