#include "model/cpu_model.h"

#include <algorithm>

#include "core/error.h"
#include "kernels/kv_cache_fp8.h"
#include "kernels/rmsnorm.h"
#include "model/batch_check.h"
#include "model/cpu_layers.h"
#include "model/cpu_ops.h"

namespace gossamer::model {

CpuModel::CpuModel(GptOssConfig config, GptOssWeights weights, std::shared_ptr<const void> storage)
    : config_(std::move(config)), weights_(std::move(weights)), storage_(std::move(storage)) {
  GOSSAMER_CHECK(static_cast<int32_t>(weights_.layers.size()) == config_.num_layers, "weights have ",
                 weights_.layers.size(), " layers, config has ", config_.num_layers);
  for (const LayerWeights& layer : weights_.layers) {
    small_.push_back(SmallLayerParams{
        cpu::to_f32(layer.attn_norm), cpu::to_f32(layer.q_bias), cpu::to_f32(layer.k_bias), cpu::to_f32(layer.v_bias),
        cpu::to_f32(layer.o_bias), cpu::to_f32(layer.sinks), cpu::to_f32(layer.mlp_norm),
        cpu::to_f32(layer.router_bias), cpu::to_f32(layer.gate_up_bias), cpu::to_f32(layer.down_bias)});
  }
  final_norm_ = cpu::to_f32(weights_.final_norm);
  rope_ = RopeTables::from_config(config_);
}

void CpuModel::allocate_kv_cache_impl(int32_t num_blocks, int32_t block_size, int32_t num_sliding_blocks) {
  GOSSAMER_CHECK(num_blocks > 0 && block_size > 0 && num_sliding_blocks >= 0,
                 "KV cache needs positive blocks and block size");
  num_blocks_ = num_blocks;
  block_size_ = block_size;
  num_sliding_blocks_ = num_sliding_layers() > 0 ? num_sliding_blocks : 0;
  k_cache_.clear();
  for (int layer = 0; layer < config_.num_layers; ++layer) {
    const bool ring = num_sliding_blocks_ > 0 && config_.layer_is_sliding[static_cast<size_t>(layer)];
    const size_t rows = static_cast<size_t>(ring ? num_sliding_blocks_ : num_blocks) * static_cast<size_t>(block_size);
    k_cache_.emplace_back(rows * static_cast<size_t>(config_.kv_width()));
  }
  v_cache_ = k_cache_;
}

int64_t CpuModel::kv_bytes_per_block() const {
  return int64_t{2} * config_.num_layers * config_.kv_width() * std::max(block_size_, 1) * int64_t{4};
}

void CpuModel::forward(const ForwardBatch& batch, std::vector<float>& logits) {
  check_forward_batch(config_, num_blocks_, block_size_, batch, num_sliding_blocks_);
  mark(StepPhase::kEmbedding);
  const int64_t hidden = config_.hidden_size;
  // ---- plan: where each new token sits, its rotary tables ----
  const cpu::StepPlan step = cpu::plan_step(batch, block_size_, num_sliding_blocks_, rope_, config_.head_dim);
  const int64_t num_tokens = static_cast<int64_t>(step.tokens.size());
  // ---- embedding gather: x [T, hidden] ----
  std::vector<float> x(static_cast<size_t>(num_tokens * hidden));
  {
    int64_t t = 0;
    for (const SequenceInput& seq : batch.sequences) {
      for (int32_t token : seq.tokens) cpu::load_row(weights_.embedding, token, x.data() + (t++) * hidden);
    }
  }
  if (numerics_.bf16_activations) cpu::round_to_bf16(x.data(), static_cast<int64_t>(x.size()));
  if (routing_trace_) routing_trace_->begin_step();
  for (int layer = 0; layer < config_.num_layers; ++layer) {
    attention_block(layer, step, batch, x);
    moe_block(layer, num_tokens, x);
  }
  // ---- final norm + unembedding on the wanted rows: logits [rows, vocab] ----
  mark(StepPhase::kFinalNorm);
  const int64_t num_rows = static_cast<int64_t>(step.logit_rows.size());
  std::vector<float> selected(static_cast<size_t>(num_rows * hidden));
  for (int64_t r = 0; r < num_rows; ++r) {
    kernels::rmsnorm_f32_cpu(x.data() + step.logit_rows[static_cast<size_t>(r)] * hidden, 1, hidden, final_norm_.data(),
                             config_.rms_norm_eps, selected.data() + r * hidden);
  }
  mark(StepPhase::kUnembedding);
  logits.resize(static_cast<size_t>(num_rows * config_.vocab_size));
  if (num_rows > 0)
    linear(selected.data(), num_rows, weights_.unembedding, nullptr, logits.data(), numerics_.fp8_unembedding);
  if (phase_clock_) phase_clock_->end();
}

bool CpuModel::set_routing_trace(bool on) {
  if (!on) routing_trace_.reset();
  if (on && !routing_trace_) routing_trace_ = std::make_unique<RoutingTrace>();
  return true;
}

bool CpuModel::set_phase_timing(bool on) {
  if (!on) phase_clock_.reset();
  if (on && !phase_clock_) phase_clock_ = std::make_unique<WallPhaseClock>();
  return true;
}

void CpuModel::linear(const float* x, int64_t num_rows, const TensorView& weight, const float* bias, float* out,
                      bool fp8) {
  if (!fp8) return cpu::matmul_bias(x, num_rows, weight, bias, out);
  const int64_t n = weight.shape[0], k = weight.shape[1];
  auto [it, inserted] = fp8_weights_.try_emplace(weight.data);
  if (inserted) it->second = cpu::fake_quantize_fp8_blocks(cpu::to_f32(weight).data(), n, k);
  std::vector<float> quantized(x, x + num_rows * k);
  cpu::fake_quantize_fp8_activations(quantized.data(), num_rows, k);
  cpu::matmul_bias_f32(quantized.data(), num_rows, it->second.data(), n, k, bias, out);
  cpu::round_to_bf16(out, num_rows * n);
}

void CpuModel::attention_block(int layer, const cpu::StepPlan& step, const ForwardBatch& batch, std::vector<float>& x) {
  const LayerWeights& w = weights_.layers[static_cast<size_t>(layer)];
  const SmallLayerParams& p = small_[static_cast<size_t>(layer)];
  const int64_t num_tokens = static_cast<int64_t>(step.tokens.size()), hidden = config_.hidden_size;
  const int64_t head_dim = config_.head_dim, half = head_dim / 2, q_width = config_.q_width(),
                kv_width = config_.kv_width();
  const bool sliding = config_.layer_is_sliding[static_cast<size_t>(layer)];
  const bool ring = sliding && num_sliding_blocks_ > 0;  // this layer's K/V live in the sliding pool

  // ---- norm + projections: q [T, q_width], k/v [T, kv_width] ----
  std::vector<float> normed(x.size()), q(static_cast<size_t>(num_tokens * q_width)),
      k(static_cast<size_t>(num_tokens * kv_width)), v(k.size());
  mark(StepPhase::kAttnNorm);
  kernels::rmsnorm_f32_cpu(x.data(), num_tokens, hidden, p.attn_norm.data(), config_.rms_norm_eps, normed.data());
  const bool fp8 = numerics_.fp8_attention;
  mark(StepPhase::kQkv);
  linear(normed.data(), num_tokens, w.q_proj, p.q_bias.data(), q.data(), fp8);
  linear(normed.data(), num_tokens, w.k_proj, p.k_bias.data(), k.data(), fp8);
  linear(normed.data(), num_tokens, w.v_proj, p.v_bias.data(), v.data(), fp8);

  // ---- RoPE on q and k, then write k/v into the cache ----
  mark(StepPhase::kRope);
  std::vector<float>& k_cache = k_cache_[static_cast<size_t>(layer)];
  std::vector<float>& v_cache = v_cache_[static_cast<size_t>(layer)];
  const bool kv_fp8 = numerics_.fp8_kv_cache && !(sliding && config_.sliding_window > 0);
  constexpr float kKvScale = kernels::kKvFp8DefaultScale;
  for (int64_t t = 0; t < num_tokens; ++t) {
    const float* c = step.cos.data() + t * half;
    const float* s = step.sin.data() + t * half;
    for (int64_t h = 0; h < config_.num_q_heads; ++h)
      apply_rope(q.data() + t * q_width + h * head_dim, config_.head_dim, c, s);
    for (int64_t h = 0; h < config_.num_kv_heads; ++h)
      apply_rope(k.data() + t * kv_width + h * head_dim, config_.head_dim, c, s);
    if (numerics_.bf16_activations) {
      cpu::round_to_bf16(q.data() + t * q_width, q_width);
      cpu::round_to_bf16(k.data() + t * kv_width, kv_width);
      cpu::round_to_bf16(v.data() + t * kv_width, kv_width);
    }
    const int64_t slot =
        ring ? step.tokens[static_cast<size_t>(t)].sliding_slot : step.tokens[static_cast<size_t>(t)].slot;
    std::copy_n(k.data() + t * kv_width, kv_width, k_cache.data() + slot * kv_width);
    std::copy_n(v.data() + t * kv_width, kv_width, v_cache.data() + slot * kv_width);
    if (kv_fp8) {  // the cuda backend's e4m3 cache, one static scale per KV head
      for (int64_t i = slot * kv_width; i < (slot + 1) * kv_width; ++i) {
        k_cache[static_cast<size_t>(i)] = kernels::kv_fp8_round_trip(k_cache[static_cast<size_t>(i)], kKvScale);
        v_cache[static_cast<size_t>(i)] = kernels::kv_fp8_round_trip(v_cache[static_cast<size_t>(i)], kKvScale);
      }
    }
  }

  // ---- attention with sinks: out [T, q_width] ----
  mark(StepPhase::kAttention);
  std::vector<float> out(q.size());
  cpu::CacheAttention attention;
  attention.q = q.data();
  attention.sinks = p.sinks.data();
  attention.k_cache = k_cache.data();
  attention.v_cache = v_cache.data();
  attention.out = out.data();
  attention.num_heads = config_.num_q_heads;
  attention.head_dim = head_dim;
  attention.kv_width = kv_width;
  attention.group = config_.num_q_heads / config_.num_kv_heads;
  attention.block_size = block_size_;
  attention.window = sliding ? config_.sliding_window : 0;
  attention.ring = ring;
  cpu::attention_with_sinks(attention, step, batch);

  // ---- output projection + residual ----
  mark(StepPhase::kOProj);
  std::vector<float> projected(x.size());
  if (numerics_.bf16_activations) cpu::round_to_bf16(out.data(), static_cast<int64_t>(out.size()));
  linear(out.data(), num_tokens, w.o_proj, p.o_bias.data(), projected.data(), fp8);
  for (size_t i = 0; i < x.size(); ++i) x[i] += projected[i];
  if (numerics_.bf16_activations) cpu::round_to_bf16(x.data(), static_cast<int64_t>(x.size()));
}

void CpuModel::moe_block(int layer, int64_t num_tokens, std::vector<float>& x) {
  const LayerWeights& w = weights_.layers[static_cast<size_t>(layer)];
  const SmallLayerParams& p = small_[static_cast<size_t>(layer)];
  const int64_t hidden = config_.hidden_size, inter = config_.intermediate_size, num_experts = config_.num_experts;
  const int top = config_.experts_per_token;

  // ---- norm + router: logits [T, E] → top-k → softmax over the k ----
  std::vector<float> normed(x.size()), router(static_cast<size_t>(num_tokens * num_experts));
  mark(StepPhase::kMlpNorm);
  kernels::rmsnorm_f32_cpu(x.data(), num_tokens, hidden, p.mlp_norm.data(), config_.rms_norm_eps, normed.data());
  if (numerics_.bf16_activations) cpu::round_to_bf16(normed.data(), static_cast<int64_t>(normed.size()));
  mark(StepPhase::kRouter);
  linear(normed.data(), num_tokens, w.router, p.router_bias.data(), router.data(), numerics_.fp8_router);
  mark(StepPhase::kExperts);
  if (routing_trace_) {
    routing_trace_->add_layer(router, static_cast<int32_t>(num_tokens), static_cast<int32_t>(num_experts), top);
  }
  const auto tokens_of_expert = cpu::route_tokens(router.data(), num_tokens, num_experts, top);

  // ---- experts: decode MXFP4 once per used expert, run its tokens, combine with the gate weights ----
  std::vector<float> moe_out(x.size(), 0.0f);
  std::vector<float> gate_up_w(static_cast<size_t>(2 * inter * hidden)), down_w(static_cast<size_t>(hidden * inter));
  for (int64_t e = 0; e < num_experts; ++e) {
    const auto& assigned = tokens_of_expert[static_cast<size_t>(e)];
    if (assigned.empty()) continue;
    const int64_t n = static_cast<int64_t>(assigned.size());
    cpu::decode_mxfp4_expert(w.gate_up, e, gate_up_w.data());
    cpu::decode_mxfp4_expert(w.down, e, down_w.data());
    std::vector<float> rows = cpu::gather_rows(normed.data(), assigned, hidden),
                       gate_up(static_cast<size_t>(n * 2 * inter)), activation(static_cast<size_t>(n * inter)),
                       y(static_cast<size_t>(n * hidden));
    if (numerics_.fp8_experts) cpu::fake_quantize_fp8_activations(rows.data(), n, hidden);
    cpu::matmul_bias_f32(rows.data(), n, gate_up_w.data(), 2 * inter, hidden, p.gate_up_bias.data() + e * 2 * inter,
                         gate_up.data());
    cpu::swiglu_interleaved(gate_up.data(), n, inter, config_.swiglu_limit, config_.swiglu_alpha, activation.data());
    if (numerics_.fp8_experts) cpu::fake_quantize_fp8_activations(activation.data(), n, inter);
    cpu::matmul_bias_f32(activation.data(), n, down_w.data(), hidden, inter, p.down_bias.data() + e * hidden, y.data());
    if (numerics_.bf16_activations) cpu::round_to_bf16(y.data(), static_cast<int64_t>(y.size()));
    cpu::add_gated_rows(assigned, y.data(), hidden, moe_out);
  }
  for (size_t i = 0; i < x.size(); ++i) x[i] += moe_out[i];
  if (numerics_.bf16_activations) cpu::round_to_bf16(x.data(), static_cast<int64_t>(x.size()));
}

}  // namespace gossamer::model
