// The pieces of a decoder step that both cpu backends run, the one-process model (model/cpu_model.h) and
// each rank of the tensor/expert-parallel one (model/cpu_sharded_rank.h): where each new token sits, attention
// with sinks over the paged f32 K/V cache, top-k routing, the interleaved SwiGLU and the gated combine.
//
// All activations are row-major float32; a rank passes its own slice (its query heads, its intermediate
// columns), so every function here is the whole-model computation when the slice is everything.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "model/model.h"
#include "model/rope.h"

namespace gossamer::model::cpu {

// Where each new token of a step sits; read-only during the step (shared by all ranks).
struct StepPlan {
  struct Token {
    int32_t sequence = 0;
    int32_t position = 0;
    int64_t slot = 0;          // KV row in the full pool (every layer without a ring)
    int64_t sliding_slot = 0;  // KV row in the sliding pool (sliding layers, with a ring)
  };
  std::vector<Token> tokens;        // the batch's new tokens in order
  std::vector<int64_t> logit_rows;  // indices into tokens whose logits are wanted, in output order
  std::vector<float> cos, sin;      // [T, head_dim / 2] rotary tables
};

// The plan of a batch that check_forward_batch accepted. num_sliding_blocks > 0: the sliding layers use
// the ring, read through the sequences' sliding block tables.
StepPlan plan_step(const ForwardBatch& batch, int32_t block_size, int32_t num_sliding_blocks, const RopeTables& rope,
                   int32_t head_dim);

// Attention with sinks for every token of a step over one layer's paged K/V cache:
//   out[t, h] = Σ_pos softmax_pos(q[t, h] · k[pos, kv(h)] / √head_dim, with the sink logit) · v[pos, kv(h)]
// over the positions [first, position] of the token's sequence (first = position − window + 1 on a
// sliding layer, else 0), kv(h) = (first_q_head + h) / group − first_kv_head. Parallel over (token, head).
struct CacheAttention {
  const float* q = nullptr;        // [T, num_heads · head_dim] f32, after RoPE
  const float* sinks = nullptr;    // [num_heads] f32
  const float* k_cache = nullptr;  // [rows, kv_width] f32 (this layer's pool)
  const float* v_cache = nullptr;  // [rows, kv_width] f32
  float* out = nullptr;            // [T, num_heads · head_dim] f32
  int64_t num_heads = 0;           // query heads held (a rank's slice or all)
  int64_t head_dim = 0;
  int64_t kv_width = 0;       // KV heads held × head_dim
  int64_t group = 1;          // query heads per KV head
  int64_t first_q_head = 0;   // the model's index of q head 0 here
  int64_t first_kv_head = 0;  // the model's index of KV head 0 here
  int32_t block_size = 0;
  int32_t window = 0;  // > 0: a sliding layer
  bool ring = false;   // this layer's K/V live in the sliding pool
};
void attention_with_sinks(const CacheAttention& a, const StepPlan& step, const ForwardBatch& batch);

// Top-k routing: per expert, the (token, gate weight) pairs routed to it (kernels::moe_topk_softmax_cpu).
// router: [num_tokens, num_experts] f32 logits.
std::vector<std::vector<std::pair<int64_t, float>>> route_tokens(const float* router, int64_t num_tokens,
                                                                 int64_t num_experts, int top);

// The rows of x [T, hidden] of the assigned tokens, in order: [assigned, hidden].
std::vector<float> gather_rows(const float* x, const std::vector<std::pair<int64_t, float>>& assigned, int64_t hidden);

// Clamped SwiGLU on interleaved (gate = even, up = odd) columns: gate_up [rows, 2 · cols] → out [rows, cols].
void swiglu_interleaved(const float* gate_up, int64_t rows, int64_t cols, float limit, float alpha, float* out);

// out[token] += weight · y[i] for each assigned (token, weight) pair i.   y: [assigned, hidden]; out: [T, hidden].
void add_gated_rows(const std::vector<std::pair<int64_t, float>>& assigned, const float* y, int64_t hidden,
                    std::vector<float>& out);

}  // namespace gossamer::model::cpu
