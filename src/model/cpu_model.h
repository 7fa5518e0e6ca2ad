// The `cpu` backend: a float32 reference forward pass of gpt-oss (the transformers GptOss model;
// docs/model-checkpoints-and-backends.md).
//
// Contract: the model keeps `storage` alive (a mapped Checkpoint or owned buffers) for as long as it
// lives; weights are read through views into it (dense rows converted to f32 on use, MXFP4 experts
// decoded per expert on use). Not thread-safe: one forward at a time.
#pragma once

#include <memory>
#include <unordered_map>
#include <vector>

#include "model/config.h"
#include "model/cpu_layers.h"
#include "model/model.h"
#include "model/rope.h"
#include "model/weights.h"

namespace gossamer::model {

// Quantization points of the cuda backend that the CPU reference can emulate (all off by default: the
// float32 oracle). With them on, the CPU model is the oracle for the cuda backend's FP8 mode, and the
// flags separate the format's error from kernel error (docs/model-checkpoints-and-backends.md).
struct CpuNumerics {
  bool fp8_attention = false;    // q/k/v/o: FP8 128×128 weights, FP8 1×128 activations (bf16 first)
  bool fp8_router = false;       // the router linear, likewise
  bool fp8_experts = false;      // expert gate_up/down activations to FP8 1×128 (MXFP4 weights are exact in FP8)
  bool fp8_unembedding = false;  // the unembedding, likewise
  bool bf16_activations =
      false;  // hidden states, attention inputs and K/V rounded to bf16 where the cuda path stores them
  // --kv-cache-dtype fp8: the full-attention layers' K/V rounded through e4m3 at the cache write (scale
  // kernels::kKvFp8DefaultScale, kernels/kv_cache_fp8.h), as the cuda backend stores them; the cache
  // itself stays float32 (so it takes float32's bytes).
  bool fp8_kv_cache = false;

  // The cuda fp8 mode: the router stays bf16 there.
  static CpuNumerics fp8_like_cuda() { return {true, false, true, true, true}; }
};

class CpuModel final : public Model {
 public:
  CpuModel(GptOssConfig config, GptOssWeights weights, std::shared_ptr<const void> storage);

  const GptOssConfig& config() const override { return config_; }
  std::string backend_name() const override { return "cpu"; }
  int32_t kv_num_blocks() const override { return num_blocks_; }
  int32_t kv_num_sliding_blocks() const override { return num_sliding_blocks_; }
  int32_t kv_block_size() const override { return block_size_; }
  int64_t kv_bytes_per_block() const override;
  std::string kv_cache_dtype_name() const override {
    return numerics_.fp8_kv_cache ? "float32 holding fp8_e4m3-rounded full-attention layers" : "float32";
  }
  void forward(const ForwardBatch& batch, std::vector<float>& logits) override;
  bool set_phase_timing(bool on) override;
  PhaseSeconds last_phase_seconds() override { return phase_clock_ ? phase_clock_->collect() : PhaseSeconds{}; }
  bool set_routing_trace(bool on) override;
  RoutingCounts last_routing() override { return routing_trace_ ? routing_trace_->counts() : RoutingCounts{}; }

  // Switches the emulated quantization points (takes effect on the next forward).
  void set_numerics(const CpuNumerics& numerics) { numerics_ = numerics; }

 protected:
  void allocate_kv_cache_impl(int32_t num_blocks, int32_t block_size, int32_t num_sliding_blocks) override;

 private:
  struct SmallLayerParams {  // f32 copies of the small per-layer vectors
    std::vector<float> attn_norm, q_bias, k_bias, v_bias, o_bias, sinks, mlp_norm, router_bias, gate_up_bias, down_bias;
  };
  void attention_block(int layer, const cpu::StepPlan& step, const ForwardBatch& batch, std::vector<float>& x);
  void moe_block(int layer, int64_t num_tokens, std::vector<float>& x);
  // out [rows, N] = x [rows, K] · Wᵀ + bias, through FP8 when `fp8` (weights quantized once, cached).
  void linear(const float* x, int64_t num_rows, const TensorView& weight, const float* bias, float* out, bool fp8);
  void mark(StepPhase phase) {
    if (phase_clock_) phase_clock_->mark(phase);
  }

  GptOssConfig config_;
  GptOssWeights weights_;
  std::shared_ptr<const void> storage_;
  std::vector<SmallLayerParams> small_;
  std::vector<float> final_norm_;
  RopeTables rope_;
  int32_t num_blocks_ = 0;
  int32_t block_size_ = 0;
  int32_t num_sliding_blocks_ = 0;  // > 0: sliding layers use their own pool (the ring)
  // per layer: [blocks · block_size, kv_width] f32 (blocks = num_sliding_blocks_ for ring layers)
  std::vector<std::vector<float>> k_cache_, v_cache_;
  CpuNumerics numerics_;
  std::unordered_map<const void*, std::vector<float>> fp8_weights_;  // dequantized FP8 weights by view data
  std::unique_ptr<WallPhaseClock> phase_clock_;                      // null unless phase timing is on (benchmarks)
  std::unique_ptr<RoutingTrace> routing_trace_;                      // null unless the routing is traced (benchmarks)
};

}  // namespace gossamer::model
