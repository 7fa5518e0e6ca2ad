// The `cuda` backend (sm_90a): gpt-oss on one GPU with FP8 128×128 block-scaled linears and experts,
// bf16 activations and paged bf16 KV cache, attention with sinks from src/kernels.
//
// Contract: the constructor uploads and converts all weights (host views may be released afterwards)
// and throws gossamer::Error when the config is outside what the kernels support (head_dim 64, top-4,
// dims multiples of 16, experts a multiple of 8). forward() runs on one stream and returns float32
// logits (converted from bf16). Not thread-safe: one forward at a time.
#pragma once

#include <cuda_runtime.h>

#include <memory>
#include <vector>

#include "model/cuda/cuda_weights.h"
#include "model/cuda/device_buffer.h"
#include "model/model.h"
#include "model/rope.h"

namespace gossamer::model::cuda {

class CudaModel final : public Model {
 public:
  CudaModel(GptOssConfig config, const GptOssWeights& host_weights);
  ~CudaModel() override;

  const GptOssConfig& config() const override { return config_; }
  std::string backend_name() const override { return "cuda"; }
  void allocate_kv_cache(int32_t num_blocks, int32_t block_size) override;
  int32_t kv_num_blocks() const override { return num_blocks_; }
  int32_t kv_block_size() const override { return block_size_; }
  int64_t kv_bytes_per_block() const override;
  void forward(const ForwardBatch& batch, std::vector<float>& logits) override;

  uint64_t weight_bytes() const { return weights_.device_bytes; }
  // Waits for the GPU (for timing).
  void synchronize() const;

 private:
  struct StepPlan;
  void ensure_workspace(int num_tokens, int num_logit_rows);
  // out [m, w.n] bf16 = x [m, w.k] bf16 · wᵀ + bias, through per-token 1×128 FP8 quantization.
  void linear(const uint16_t* x, int m, const Fp8Linear& w, uint16_t* out);

  GptOssConfig config_;
  CudaWeights weights_;
  RopeTables rope_;
  cudaStream_t stream_ = nullptr;
  int32_t num_blocks_ = 0;
  int32_t block_size_ = 0;
  std::vector<DeviceBuffer> k_cache_, v_cache_;  // per layer: [num_blocks·block_size, kv_heads, 64] bf16

  // Step workspace, grown on demand (never shrunk).
  PinnedBuffer host_plan_, host_logits_;
  DeviceBuffer plan_;  // ids, positions, slots, cu_seqlens, kv_lens, page_indptr, page_indices, logit rows
  DeviceBuffer residual_, delta_, normed_, qkv_, q_, attn_out_, act_, act_scales_, router_logits_, moe_workspace_,
      decode_workspace_, final_rows_, logits_;
  int capacity_tokens_ = 0;
};

}  // namespace gossamer::model::cuda
