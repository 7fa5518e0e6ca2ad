#include "model/cpu_layers.h"

#include <algorithm>
#include <cmath>
#include <span>

#include "core/parallel.h"
#include "kernels/moe.h"
#include "kernels/swiglu.h"

namespace gossamer::model::cpu {

StepPlan plan_step(const ForwardBatch& batch, int32_t block_size, int32_t num_sliding_blocks, const RopeTables& rope,
                   int32_t head_dim) {
  StepPlan step;
  for (size_t s = 0; s < batch.sequences.size(); ++s) {
    const SequenceInput& seq = batch.sequences[s];
    for (size_t i = 0; i < seq.tokens.size(); ++i) {
      const int32_t position = seq.num_cached + static_cast<int32_t>(i);
      const int64_t block = seq.block_table[static_cast<size_t>(position / block_size)];
      const int64_t sliding_block =
          num_sliding_blocks > 0 ? seq.sliding_block_table[static_cast<size_t>(position / block_size)] : block;
      step.tokens.push_back({static_cast<int32_t>(s), position, block * block_size + position % block_size,
                             sliding_block * block_size + position % block_size});
      const bool last = i + 1 == seq.tokens.size();
      if (seq.logits == LogitsWanted::kAll || (seq.logits == LogitsWanted::kLast && last)) {
        step.logit_rows.push_back(static_cast<int64_t>(step.tokens.size()) - 1);
      }
    }
  }
  const int64_t half = head_dim / 2, num_tokens = static_cast<int64_t>(step.tokens.size());
  step.cos.resize(static_cast<size_t>(num_tokens * half));
  step.sin.resize(step.cos.size());
  for (int64_t t = 0; t < num_tokens; ++t) {
    rope.at(step.tokens[static_cast<size_t>(t)].position, step.cos.data() + t * half, step.sin.data() + t * half);
  }
  return step;
}

void attention_with_sinks(const CacheAttention& a, const StepPlan& step, const ForwardBatch& batch) {
  const int64_t num_tokens = static_cast<int64_t>(step.tokens.size()), head_dim = a.head_dim;
  const int64_t q_width = a.num_heads * head_dim;
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  parallel_for(num_tokens * a.num_heads, 8, [&](int64_t begin, int64_t end) {
    std::vector<float> scores;
    for (int64_t item = begin; item < end; ++item) {
      const int64_t t = item / a.num_heads, h = item % a.num_heads;
      const int64_t kv_head = (a.first_q_head + h) / a.group - a.first_kv_head;
      const StepPlan::Token& token = step.tokens[static_cast<size_t>(t)];
      const SequenceInput& seq = batch.sequences[static_cast<size_t>(token.sequence)];
      const std::span<const int32_t> table = a.ring ? seq.sliding_block_table : seq.block_table;
      const int32_t first = a.window > 0 ? std::max(0, token.position - a.window + 1) : 0;
      const float* qh = a.q + t * q_width + h * head_dim;
      const float sink = a.sinks[static_cast<size_t>(h)];
      scores.assign(static_cast<size_t>(token.position - first + 1), 0.0f);
      float max_score = sink;
      for (int32_t pos = first; pos <= token.position; ++pos) {
        const int64_t slot =
            int64_t{table[static_cast<size_t>(pos / a.block_size)]} * a.block_size + pos % a.block_size;
        const float* kh = a.k_cache + slot * a.kv_width + kv_head * head_dim;
        float dot = 0.0f;
        for (int64_t d = 0; d < head_dim; ++d) dot += qh[d] * kh[d];
        scores[static_cast<size_t>(pos - first)] = dot * scale;
        max_score = std::max(max_score, dot * scale);
      }
      float denominator = std::exp(sink - max_score);
      for (float& score : scores) {
        score = std::exp(score - max_score);
        denominator += score;
      }
      float* oh = a.out + t * q_width + h * head_dim;
      std::fill_n(oh, head_dim, 0.0f);
      for (int32_t pos = first; pos <= token.position; ++pos) {
        const int64_t slot =
            int64_t{table[static_cast<size_t>(pos / a.block_size)]} * a.block_size + pos % a.block_size;
        const float* vh = a.v_cache + slot * a.kv_width + kv_head * head_dim;
        const float weight = scores[static_cast<size_t>(pos - first)] / denominator;
        for (int64_t d = 0; d < head_dim; ++d) oh[d] += weight * vh[d];
      }
    }
  });
}

std::vector<std::vector<std::pair<int64_t, float>>> route_tokens(const float* router, int64_t num_tokens,
                                                                 int64_t num_experts, int top) {
  std::vector<std::vector<std::pair<int64_t, float>>> tokens_of_expert(static_cast<size_t>(num_experts));
  std::vector<int32_t> chosen(static_cast<size_t>(top));
  std::vector<float> gates(chosen.size());
  for (int64_t t = 0; t < num_tokens; ++t) {
    kernels::moe_topk_softmax_cpu(router + t * num_experts, static_cast<int>(num_experts), top, chosen.data(),
                                  gates.data());
    for (int k = 0; k < top; ++k) {
      tokens_of_expert[static_cast<size_t>(chosen[static_cast<size_t>(k)])].push_back(
          {t, gates[static_cast<size_t>(k)]});
    }
  }
  return tokens_of_expert;
}

std::vector<float> gather_rows(const float* x, const std::vector<std::pair<int64_t, float>>& assigned, int64_t hidden) {
  std::vector<float> rows(assigned.size() * static_cast<size_t>(hidden));
  for (size_t i = 0; i < assigned.size(); ++i) {
    std::copy_n(x + assigned[i].first * hidden, hidden, rows.data() + static_cast<int64_t>(i) * hidden);
  }
  return rows;
}

void swiglu_interleaved(const float* gate_up, int64_t rows, int64_t cols, float limit, float alpha, float* out) {
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) {
      out[i * cols + j] =
          kernels::swiglu_clamped_cpu(gate_up[i * 2 * cols + 2 * j], gate_up[i * 2 * cols + 2 * j + 1], limit, alpha);
    }
  }
}

void add_gated_rows(const std::vector<std::pair<int64_t, float>>& assigned, const float* y, int64_t hidden,
                    std::vector<float>& out) {
  for (size_t i = 0; i < assigned.size(); ++i) {
    const auto [token, weight] = assigned[i];
    const float* row = y + static_cast<int64_t>(i) * hidden;
    for (int64_t d = 0; d < hidden; ++d) out[static_cast<size_t>(token * hidden + d)] += weight * row[d];
  }
}

}  // namespace gossamer::model::cpu
