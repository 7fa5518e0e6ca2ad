#include "model/cpu_model.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "core/parallel.h"
#include "kernels/moe.h"
#include "kernels/rmsnorm.h"
#include "kernels/swiglu.h"
#include "model/batch_check.h"
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
  const int64_t hidden = config_.hidden_size, half = config_.head_dim / 2;
  // ---- plan: one entry per new token ----
  std::vector<TokenPlan> plan;
  std::vector<int64_t> logit_rows;  // indices into plan whose logits are wanted, in output order
  for (size_t s = 0; s < batch.sequences.size(); ++s) {
    const SequenceInput& seq = batch.sequences[s];
    for (size_t i = 0; i < seq.tokens.size(); ++i) {
      const int32_t position = seq.num_cached + static_cast<int32_t>(i);
      const int64_t block = seq.block_table[static_cast<size_t>(position / block_size_)];
      const int64_t sliding_block =
          num_sliding_blocks_ > 0 ? seq.sliding_block_table[static_cast<size_t>(position / block_size_)] : block;
      plan.push_back(TokenPlan{static_cast<int32_t>(s), position, block * block_size_ + position % block_size_,
                               sliding_block * block_size_ + position % block_size_});
      const bool last = i + 1 == seq.tokens.size();
      if (seq.logits == LogitsWanted::kAll || (seq.logits == LogitsWanted::kLast && last)) {
        logit_rows.push_back(static_cast<int64_t>(plan.size()) - 1);
      }
    }
  }
  const int64_t num_tokens = static_cast<int64_t>(plan.size());
  // ---- embedding gather: x [T, hidden] ----
  std::vector<float> x(static_cast<size_t>(num_tokens * hidden));
  {
    int64_t t = 0;
    for (const SequenceInput& seq : batch.sequences) {
      for (int32_t token : seq.tokens) cpu::load_row(weights_.embedding, token, x.data() + (t++) * hidden);
    }
  }
  if (numerics_.bf16_activations) cpu::round_to_bf16(x.data(), static_cast<int64_t>(x.size()));
  // ---- rotary tables per token: [T, head_dim / 2] ----
  std::vector<float> cos(static_cast<size_t>(num_tokens * half)), sin(cos.size());
  for (int64_t t = 0; t < num_tokens; ++t)
    rope_.at(plan[static_cast<size_t>(t)].position, cos.data() + t * half, sin.data() + t * half);

  for (int layer = 0; layer < config_.num_layers; ++layer) {
    attention_block(layer, plan, batch, cos, sin, x);
    moe_block(layer, num_tokens, x);
  }
  // ---- final norm + unembedding on the wanted rows: logits [rows, vocab] ----
  mark(StepPhase::kFinalNorm);
  const int64_t num_rows = static_cast<int64_t>(logit_rows.size());
  std::vector<float> selected(static_cast<size_t>(num_rows * hidden));
  for (int64_t r = 0; r < num_rows; ++r) {
    kernels::rmsnorm_f32_cpu(x.data() + logit_rows[static_cast<size_t>(r)] * hidden, 1, hidden, final_norm_.data(),
                             config_.rms_norm_eps, selected.data() + r * hidden);
  }
  mark(StepPhase::kUnembedding);
  logits.resize(static_cast<size_t>(num_rows * config_.vocab_size));
  if (num_rows > 0)
    linear(selected.data(), num_rows, weights_.unembedding, nullptr, logits.data(), numerics_.fp8_unembedding);
  if (phase_clock_) phase_clock_->end();
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

void CpuModel::attention_block(int layer, const std::vector<TokenPlan>& plan, const ForwardBatch& batch,
                               const std::vector<float>& cos, const std::vector<float>& sin, std::vector<float>& x) {
  const LayerWeights& w = weights_.layers[static_cast<size_t>(layer)];
  const SmallLayerParams& p = small_[static_cast<size_t>(layer)];
  const int64_t num_tokens = static_cast<int64_t>(plan.size()), hidden = config_.hidden_size;
  const int64_t head_dim = config_.head_dim, half = head_dim / 2, q_width = config_.q_width(),
                kv_width = config_.kv_width();
  const int64_t group = config_.num_q_heads / config_.num_kv_heads;
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
  for (int64_t t = 0; t < num_tokens; ++t) {
    const float* c = cos.data() + t * half;
    const float* s = sin.data() + t * half;
    for (int64_t h = 0; h < config_.num_q_heads; ++h)
      apply_rope(q.data() + t * q_width + h * head_dim, config_.head_dim, c, s);
    for (int64_t h = 0; h < config_.num_kv_heads; ++h)
      apply_rope(k.data() + t * kv_width + h * head_dim, config_.head_dim, c, s);
    if (numerics_.bf16_activations) {
      cpu::round_to_bf16(q.data() + t * q_width, q_width);
      cpu::round_to_bf16(k.data() + t * kv_width, kv_width);
      cpu::round_to_bf16(v.data() + t * kv_width, kv_width);
    }
    const int64_t slot = ring ? plan[static_cast<size_t>(t)].sliding_slot : plan[static_cast<size_t>(t)].slot;
    std::copy_n(k.data() + t * kv_width, kv_width, k_cache.data() + slot * kv_width);
    std::copy_n(v.data() + t * kv_width, kv_width, v_cache.data() + slot * kv_width);
  }

  // ---- attention with sinks: out [T, q_width] ----
  mark(StepPhase::kAttention);
  std::vector<float> out(q.size());
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  parallel_for(num_tokens * config_.num_q_heads, 8, [&](int64_t begin, int64_t end) {
    std::vector<float> scores;
    for (int64_t item = begin; item < end; ++item) {
      const int64_t t = item / config_.num_q_heads, h = item % config_.num_q_heads, kv_head = h / group;
      const TokenPlan& token = plan[static_cast<size_t>(t)];
      const SequenceInput& seq = batch.sequences[static_cast<size_t>(token.sequence)];
      const std::span<const int32_t> table = ring ? seq.sliding_block_table : seq.block_table;
      const int32_t first = sliding ? std::max(0, token.position - config_.sliding_window + 1) : 0;
      const float* qh = q.data() + t * q_width + h * head_dim;
      scores.assign(static_cast<size_t>(token.position - first + 1), 0.0f);
      float max_score = p.sinks[static_cast<size_t>(h)];
      for (int32_t pos = first; pos <= token.position; ++pos) {
        const int64_t slot = int64_t{table[static_cast<size_t>(pos / block_size_)]} * block_size_ + pos % block_size_;
        const float* kh = k_cache.data() + slot * kv_width + kv_head * head_dim;
        float dot = 0.0f;
        for (int64_t d = 0; d < head_dim; ++d) dot += qh[d] * kh[d];
        scores[static_cast<size_t>(pos - first)] = dot * scale;
        max_score = std::max(max_score, dot * scale);
      }
      float denominator = std::exp(p.sinks[static_cast<size_t>(h)] - max_score);
      for (float& score : scores) {
        score = std::exp(score - max_score);
        denominator += score;
      }
      float* oh = out.data() + t * q_width + h * head_dim;
      std::fill_n(oh, head_dim, 0.0f);
      for (int32_t pos = first; pos <= token.position; ++pos) {
        const int64_t slot = int64_t{table[static_cast<size_t>(pos / block_size_)]} * block_size_ + pos % block_size_;
        const float* vh = v_cache.data() + slot * kv_width + kv_head * head_dim;
        const float weight = scores[static_cast<size_t>(pos - first)] / denominator;
        for (int64_t d = 0; d < head_dim; ++d) oh[d] += weight * vh[d];
      }
    }
  });

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
  std::vector<int32_t> chosen(static_cast<size_t>(num_tokens * top));
  std::vector<float> gates(chosen.size());
  std::vector<std::vector<std::pair<int64_t, float>>> tokens_of_expert(static_cast<size_t>(num_experts));
  for (int64_t t = 0; t < num_tokens; ++t) {
    int32_t* idx = chosen.data() + t * top;
    float* val = gates.data() + t * top;
    kernels::moe_topk_softmax_cpu(router.data() + t * num_experts, static_cast<int>(num_experts), top, idx, val);
    for (int k = 0; k < top; ++k) tokens_of_expert[static_cast<size_t>(idx[k])].push_back({t, val[k]});
  }

  // ---- experts: decode MXFP4 once per used expert, run its tokens, combine with the gate weights ----
  std::vector<float> moe_out(x.size(), 0.0f);
  std::vector<float> gate_up_w(static_cast<size_t>(2 * inter * hidden)), down_w(static_cast<size_t>(hidden * inter));
  for (int64_t e = 0; e < num_experts; ++e) {
    const auto& assigned = tokens_of_expert[static_cast<size_t>(e)];
    if (assigned.empty()) continue;
    const int64_t n = static_cast<int64_t>(assigned.size());
    cpu::decode_mxfp4_expert(w.gate_up, e, gate_up_w.data());
    cpu::decode_mxfp4_expert(w.down, e, down_w.data());
    std::vector<float> rows(static_cast<size_t>(n * hidden)), gate_up(static_cast<size_t>(n * 2 * inter)),
        activation(static_cast<size_t>(n * inter)), y(static_cast<size_t>(n * hidden));
    for (int64_t i = 0; i < n; ++i)
      std::copy_n(normed.data() + assigned[static_cast<size_t>(i)].first * hidden, hidden, rows.data() + i * hidden);
    if (numerics_.fp8_experts) cpu::fake_quantize_fp8_activations(rows.data(), n, hidden);
    cpu::matmul_bias_f32(rows.data(), n, gate_up_w.data(), 2 * inter, hidden, p.gate_up_bias.data() + e * 2 * inter,
                         gate_up.data());
    // clamped SwiGLU on interleaved (gate = even, up = odd) columns
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < inter; ++j) {
        activation[static_cast<size_t>(i * inter + j)] = kernels::swiglu_clamped_cpu(
            gate_up[static_cast<size_t>(i * 2 * inter + 2 * j)],
            gate_up[static_cast<size_t>(i * 2 * inter + 2 * j + 1)], config_.swiglu_limit, config_.swiglu_alpha);
      }
    }
    if (numerics_.fp8_experts) cpu::fake_quantize_fp8_activations(activation.data(), n, inter);
    cpu::matmul_bias_f32(activation.data(), n, down_w.data(), hidden, inter, p.down_bias.data() + e * hidden, y.data());
    if (numerics_.bf16_activations) cpu::round_to_bf16(y.data(), static_cast<int64_t>(y.size()));
    for (int64_t i = 0; i < n; ++i) {
      const auto [token, weight] = assigned[static_cast<size_t>(i)];
      for (int64_t d = 0; d < hidden; ++d)
        moe_out[static_cast<size_t>(token * hidden + d)] += weight * y[static_cast<size_t>(i * hidden + d)];
    }
  }
  for (size_t i = 0; i < x.size(); ++i) x[i] += moe_out[i];
  if (numerics_.bf16_activations) cpu::round_to_bf16(x.data(), static_cast<int64_t>(x.size()));
}

}  // namespace gossamer::model
