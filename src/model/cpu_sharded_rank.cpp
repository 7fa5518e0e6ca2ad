#include "model/cpu_sharded_rank.h"

#include <algorithm>
#include <limits>

#include "core/error.h"
#include "kernels/rmsnorm.h"
#include "model/cpu_ops.h"
#include "model/rope.h"

namespace gossamer::model {

namespace {

// Rows [range) of a 2-D dense view (a view into the same bytes).
TensorView row_slice(const TensorView& tensor, IndexRange range) {
  TensorView slice = tensor;
  const int64_t cols = tensor.shape[1];
  slice.data = static_cast<uint8_t*>(tensor.data) + range.begin * cols * size_of(tensor.dtype);
  slice.shape[0] = range.size();
  return slice;
}

std::vector<float> vector_slice(const std::vector<float>& values, int64_t begin, int64_t count) {
  return {values.begin() + begin, values.begin() + begin + count};
}

// Rows [begin, begin + count) of expert `expert` of an MXFP4 tensor, as a one-expert view.
MxFp4Tensor expert_rows(const MxFp4Tensor& tensor, int64_t expert, int64_t begin, int64_t count) {
  const int64_t groups = tensor.cols() / 32, first_row = expert * tensor.rows() + begin;
  MxFp4Tensor view = tensor;
  view.blocks.data = static_cast<uint8_t*>(tensor.blocks.data) + first_row * groups * 16;
  view.scales.data = static_cast<uint8_t*>(tensor.scales.data) + first_row * groups;
  view.blocks.shape = Shape{1, count, groups, 16};
  view.scales.shape = Shape{1, count, groups};
  return view;
}

}  // namespace

CpuShardedRank::CpuShardedRank(const GptOssConfig& config, const GptOssWeights& weights, const ParallelLayout& layout,
                               int32_t rank)
    : config_(config), weights_(weights), layout_(layout), shard_(shard_for(layout, config, rank)) {
  const int64_t hidden = config.hidden_size, head_dim = config.head_dim, q_width = config.q_width();
  const IndexRange q_cols{shard_.q_heads.begin * head_dim, shard_.q_heads.end * head_dim};
  const IndexRange kv_cols{shard_.kv_heads.begin * head_dim, shard_.kv_heads.end * head_dim};
  const int64_t inter = config.intermediate_size, local_inter = shard_.intermediate.size();
  for (const LayerWeights& w : weights.layers) {
    LayerShard s;
    s.attn_norm = cpu::to_f32(w.attn_norm);
    s.mlp_norm = cpu::to_f32(w.mlp_norm);
    s.router_bias = cpu::to_f32(w.router_bias);
    s.q_bias = vector_slice(cpu::to_f32(w.q_bias), q_cols.begin, q_cols.size());
    s.k_bias = vector_slice(cpu::to_f32(w.k_bias), kv_cols.begin, kv_cols.size());
    s.v_bias = vector_slice(cpu::to_f32(w.v_bias), kv_cols.begin, kv_cols.size());
    s.o_bias = cpu::to_f32(w.o_bias);
    s.sinks = vector_slice(cpu::to_f32(w.sinks), shard_.q_heads.begin, shard_.q_heads.size());
    s.q_proj = row_slice(w.q_proj, q_cols);
    s.k_proj = row_slice(w.k_proj, kv_cols);
    s.v_proj = row_slice(w.v_proj, kv_cols);
    // o_proj [hidden, q_width] → columns of the local heads: [hidden, local q width]
    const std::vector<float> o_full = cpu::to_f32(w.o_proj);
    s.o_proj.resize(static_cast<size_t>(hidden * q_cols.size()));
    for (int64_t row = 0; row < hidden; ++row) {
      std::copy_n(o_full.begin() + row * q_width + q_cols.begin, q_cols.size(), s.o_proj.begin() + row * q_cols.size());
    }
    // Expert biases of the local experts and intermediate columns (gate/up interleaved: 2 entries per column).
    const std::vector<float> gate_up_bias = cpu::to_f32(w.gate_up_bias), down_bias = cpu::to_f32(w.down_bias);
    for (int64_t e = shard_.experts.begin; e < shard_.experts.end; ++e) {
      const auto first = gate_up_bias.begin() + e * 2 * inter + 2 * shard_.intermediate.begin;
      s.gate_up_bias.insert(s.gate_up_bias.end(), first, first + 2 * local_inter);
      s.down_bias.insert(s.down_bias.end(), down_bias.begin() + e * hidden, down_bias.begin() + (e + 1) * hidden);
    }
    layers_.push_back(std::move(s));
  }
  final_norm_ = cpu::to_f32(weights.final_norm);
  unembedding_ = row_slice(weights.unembedding, shard_.vocab);
}

void CpuShardedRank::allocate_kv_cache(int64_t rows, int64_t sliding_rows, int32_t block_size) {
  block_size_ = block_size;
  ring_ = sliding_rows > 0;
  k_cache_.clear();
  for (int layer = 0; layer < config_.num_layers; ++layer) {
    const bool ring_layer = ring_ && config_.layer_is_sliding[static_cast<size_t>(layer)];
    k_cache_.emplace_back(static_cast<size_t>((ring_layer ? sliding_rows : rows) * kv_width()));
  }
  v_cache_ = k_cache_;
}

void CpuShardedRank::forward(const cpu::StepPlan& step, const ForwardBatch& batch, comm::Communicator& comm,
                             std::vector<float>& logits) {
  const int64_t hidden = config_.hidden_size, num_tokens = static_cast<int64_t>(step.tokens.size());
  std::vector<float> x(static_cast<size_t>(num_tokens * hidden));  // [T, hidden] f32, replicated on every rank
  embed(batch, comm, x);
  for (int layer = 0; layer < config_.num_layers; ++layer) {
    attention(layer, step, batch, comm, x);
    moe(layer, num_tokens, comm, x);
  }
  // ---- final norm + this rank's vocab columns: logits [rows, vocab_shard_rows] ----
  const int64_t num_rows = static_cast<int64_t>(step.logit_rows.size()), padded = vocab_shard_rows(layout_, config_);
  const int64_t local = shard_.vocab.size();
  std::vector<float> selected(static_cast<size_t>(num_rows * hidden)),
      local_logits(static_cast<size_t>(num_rows * local));
  for (int64_t r = 0; r < num_rows; ++r) {
    kernels::rmsnorm_f32_cpu(x.data() + step.logit_rows[static_cast<size_t>(r)] * hidden, 1, hidden, final_norm_.data(),
                             config_.rms_norm_eps, selected.data() + r * hidden);
  }
  if (num_rows > 0 && local > 0)
    cpu::matmul_bias(selected.data(), num_rows, unembedding_, nullptr, local_logits.data());
  logits.assign(static_cast<size_t>(num_rows * padded), -std::numeric_limits<float>::infinity());
  for (int64_t r = 0; r < num_rows; ++r) {
    std::copy_n(local_logits.begin() + r * local, local, logits.begin() + r * padded);
  }
}

void CpuShardedRank::embed(const ForwardBatch& batch, comm::Communicator& comm, std::vector<float>& x) {
  // Vocab-parallel: each rank writes the rows of its own tokens, the all-reduce fills in the rest (exact).
  const int64_t hidden = config_.hidden_size;
  int64_t t = 0;
  for (const SequenceInput& seq : batch.sequences) {
    for (int32_t token : seq.tokens) {
      if (shard_.vocab.contains(token)) cpu::load_row(weights_.embedding, token, x.data() + t * hidden);
      ++t;
    }
  }
  comm.all_reduce(x.data(), static_cast<int64_t>(x.size()), DType::kF32);
}

void CpuShardedRank::attention(int layer, const cpu::StepPlan& step, const ForwardBatch& batch,
                               comm::Communicator& comm, std::vector<float>& x) {
  const LayerShard& p = layers_[static_cast<size_t>(layer)];
  const int64_t num_tokens = static_cast<int64_t>(step.tokens.size()), hidden = config_.hidden_size;
  const int64_t head_dim = config_.head_dim, half = head_dim / 2;
  const int64_t num_heads = shard_.q_heads.size(), q_width = num_heads * head_dim, kv_width = this->kv_width();
  const bool sliding = config_.layer_is_sliding[static_cast<size_t>(layer)];
  const bool ring = sliding && ring_;

  // ---- norm + column-parallel projections: q [T, local q width], k/v [T, local kv width] ----
  std::vector<float> normed(x.size()), q(static_cast<size_t>(num_tokens * q_width)),
      k(static_cast<size_t>(num_tokens * kv_width)), v(k.size());
  kernels::rmsnorm_f32_cpu(x.data(), num_tokens, hidden, p.attn_norm.data(), config_.rms_norm_eps, normed.data());
  cpu::matmul_bias(normed.data(), num_tokens, p.q_proj, p.q_bias.data(), q.data());
  cpu::matmul_bias(normed.data(), num_tokens, p.k_proj, p.k_bias.data(), k.data());
  cpu::matmul_bias(normed.data(), num_tokens, p.v_proj, p.v_bias.data(), v.data());

  // ---- RoPE, then the local K/V heads into this rank's cache ----
  std::vector<float>& k_cache = k_cache_[static_cast<size_t>(layer)];
  std::vector<float>& v_cache = v_cache_[static_cast<size_t>(layer)];
  for (int64_t t = 0; t < num_tokens; ++t) {
    const float* c = step.cos.data() + t * half;
    const float* s = step.sin.data() + t * half;
    for (int64_t h = 0; h < num_heads; ++h) apply_rope(q.data() + t * q_width + h * head_dim, config_.head_dim, c, s);
    for (int64_t h = 0; h < shard_.kv_heads.size(); ++h)
      apply_rope(k.data() + t * kv_width + h * head_dim, config_.head_dim, c, s);
    const cpu::StepPlan::Token& token = step.tokens[static_cast<size_t>(t)];
    const int64_t slot = ring ? token.sliding_slot : token.slot;
    std::copy_n(k.data() + t * kv_width, kv_width, k_cache.data() + slot * kv_width);
    std::copy_n(v.data() + t * kv_width, kv_width, v_cache.data() + slot * kv_width);
  }

  // ---- attention with sinks over the local heads: out [T, local q width] ----
  std::vector<float> out(q.size());
  cpu::CacheAttention attention;
  attention.q = q.data();
  attention.sinks = p.sinks.data();
  attention.k_cache = k_cache.data();
  attention.v_cache = v_cache.data();
  attention.out = out.data();
  attention.num_heads = num_heads;
  attention.head_dim = head_dim;
  attention.kv_width = kv_width;
  attention.group = config_.num_q_heads / config_.num_kv_heads;
  attention.first_q_head = shard_.q_heads.begin;
  attention.first_kv_head = shard_.kv_heads.begin;
  attention.block_size = block_size_;
  attention.window = sliding ? config_.sliding_window : 0;
  attention.ring = ring;
  cpu::attention_with_sinks(attention, step, batch);

  // ---- row-parallel output projection: partial sums, one all-reduce, then the residual ----
  std::vector<float> projected(x.size());
  cpu::matmul_bias_f32(out.data(), num_tokens, p.o_proj.data(), hidden, q_width,
                       shard_.adds_replicated_bias ? p.o_bias.data() : nullptr, projected.data());
  comm.all_reduce(projected.data(), static_cast<int64_t>(projected.size()), DType::kF32);
  for (size_t i = 0; i < x.size(); ++i) x[i] += projected[i];
}

void CpuShardedRank::moe(int layer, int64_t num_tokens, comm::Communicator& comm, std::vector<float>& x) {
  const LayerWeights& w = weights_.layers[static_cast<size_t>(layer)];
  const LayerShard& p = layers_[static_cast<size_t>(layer)];
  const int64_t hidden = config_.hidden_size, inter = config_.intermediate_size, num_experts = config_.num_experts;
  const int64_t local_inter = shard_.intermediate.size(), i0 = shard_.intermediate.begin;
  const int top = config_.experts_per_token;

  // ---- norm + router (replicated: every rank picks the same top-k) ----
  std::vector<float> normed(x.size()), router(static_cast<size_t>(num_tokens * num_experts));
  kernels::rmsnorm_f32_cpu(x.data(), num_tokens, hidden, p.mlp_norm.data(), config_.rms_norm_eps, normed.data());
  cpu::matmul_bias(normed.data(), num_tokens, w.router, p.router_bias.data(), router.data());
  const auto tokens_of_expert = cpu::route_tokens(router.data(), num_tokens, num_experts, top);

  // ---- local experts on the local intermediate columns; partial outputs combined by one all-reduce ----
  std::vector<float> moe_out(x.size(), 0.0f);
  std::vector<float> gate_up_w(static_cast<size_t>(2 * local_inter * hidden)),
      down_full(static_cast<size_t>(hidden * inter)), down_w(static_cast<size_t>(hidden * local_inter));
  const bool add_down_bias = layout_.expert_parallel || shard_.adds_replicated_bias;
  for (int64_t e = shard_.experts.begin; e < shard_.experts.end; ++e) {
    const auto& assigned = tokens_of_expert[static_cast<size_t>(e)];
    if (assigned.empty()) continue;
    const int64_t n = static_cast<int64_t>(assigned.size()), local_e = e - shard_.experts.begin;
    // gate_up rows of the local columns (interleaved gate/up: rows [2·i0, 2·i1)); down's local columns.
    cpu::decode_mxfp4_expert(expert_rows(w.gate_up, e, 2 * i0, 2 * local_inter), 0, gate_up_w.data());
    cpu::decode_mxfp4_expert(w.down, e, down_full.data());
    for (int64_t row = 0; row < hidden; ++row) {
      std::copy_n(down_full.begin() + row * inter + i0, local_inter, down_w.begin() + row * local_inter);
    }
    const std::vector<float> rows = cpu::gather_rows(normed.data(), assigned, hidden);
    std::vector<float> gate_up(static_cast<size_t>(n * 2 * local_inter)),
        activation(static_cast<size_t>(n * local_inter)), y(static_cast<size_t>(n * hidden));
    cpu::matmul_bias_f32(rows.data(), n, gate_up_w.data(), 2 * local_inter, hidden,
                         p.gate_up_bias.data() + local_e * 2 * local_inter, gate_up.data());
    cpu::swiglu_interleaved(gate_up.data(), n, local_inter, config_.swiglu_limit, config_.swiglu_alpha,
                            activation.data());
    cpu::matmul_bias_f32(activation.data(), n, down_w.data(), hidden, local_inter,
                         add_down_bias ? p.down_bias.data() + local_e * hidden : nullptr, y.data());
    cpu::add_gated_rows(assigned, y.data(), hidden, moe_out);
  }
  comm.all_reduce(moe_out.data(), static_cast<int64_t>(moe_out.size()), DType::kF32);
  for (size_t i = 0; i < x.size(); ++i) x[i] += moe_out[i];
}

}  // namespace gossamer::model
