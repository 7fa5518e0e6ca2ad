// The cuda backend's step: every kernel launch of one forward pass, in order, on one stream. Nothing here
// synchronises or allocates, so the same code runs eagerly and under CUDA-graph capture.
#include <algorithm>
#include <cmath>

#include "kernels/attention.h"
#include "kernels/embedding.h"
#include "kernels/gemm_bf16.h"
#include "kernels/gemm_fp8.h"
#include "kernels/gemv_bf16.h"
#include "kernels/gemv_fp8.h"
#include "kernels/moe.h"
#include "kernels/mxfp4_tiled.h"
#include "kernels/quantize_fp8.h"
#include "kernels/rmsnorm.h"
#include "kernels/rope.h"
#include "kernels/vocab_shards.h"
#include "model/cuda/cuda_model.h"

namespace gossamer::model::cuda {

namespace {

int round_up(int value, int multiple) {
  return (value + multiple - 1) / multiple * multiple;
}
const uint16_t* bias_of(const DeviceLinear& w) {
  return w.bias.bytes() ? w.bias.get<uint16_t>() : nullptr;
}

// The bf16 GEMV of out [m, w.n] = x [m, w.k] · wᵀ + bias for bf16 weights (linear's, and the fused decode router's).
kernels::GemvBf16Params bf16_gemv(const uint16_t* x, int m, const DeviceLinear& w, uint16_t* out) {
  kernels::GemvBf16Params gemv;
  gemv.x = x;
  gemv.ldx = w.k;
  gemv.w = w.weight.get<uint16_t>();
  gemv.bias = bias_of(w);
  gemv.out = out;
  gemv.ldc = w.n;
  gemv.M = m;
  gemv.N = w.n;
  gemv.K = w.k;
  return gemv;
}

}  // namespace

void CudaModel::linear(const uint16_t* x, int m, const DeviceLinear& w, uint16_t* out, bool x_quantized) {
  if (m <= 0) return;
  GOSSAMER_CHECK(!x_quantized || linear_quantizes(m, w), "linear: a quantized input only where the FP8 GEMM runs");
  if (!w.fp8) {
    if (kernels::gemv_bf16_preferred(m, w.n, w.k)) return kernels::launch_gemv_bf16(bf16_gemv(x, m, w, out), stream_);
    kernels::GemmBf16Params gemm;
    gemm.a = x;
    gemm.lda = w.k;
    gemm.b = w.weight.get<uint16_t>();
    gemm.bias = bias_of(w);
    gemm.out = out;
    gemm.ldc = w.n;
    gemm.M = m;
    gemm.N = w.n;
    gemm.K = w.k;
    return kernels::launch_gemm_bf16(gemm, stream_);
  }
  if (m <= kernels::kGemvMaxRows) {  // decode: weight-only FP8, activations stay bf16
    return kernels::launch_gemv_fp8(decode_gemv(x, m, w, out), stream_);
  }
  const int ldq = round_up(w.k, 16);
  if (!x_quantized) {
    kernels::QuantizeFp8Params quant;
    quant.x = x;
    quant.ldx = w.k;
    quant.q = act_.get<uint8_t>();
    quant.ldq = ldq;
    quant.scales = act_scales_.get<float>();
    quant.M = m;
    quant.K = w.k;
    kernels::launch_quantize_fp8(quant, stream_);
  }
  kernels::GemmFp8Params gemm;
  gemm.a = act_.get<uint8_t>();
  gemm.lda = ldq;
  gemm.a_scales = act_scales_.get<float>();
  gemm.b = w.weight.get<uint8_t>();
  gemm.b_tiled = true;
  gemm.b_scales = w.scales.get<float>();
  gemm.bias = bias_of(w);
  gemm.out = out;
  gemm.ldc = w.n;
  gemm.M = m;
  gemm.N = w.n;
  gemm.K = w.k;
  gemm.epilogue = kernels::GemmEpilogue::kBias;
  if (cublaslt_ && w.row_major.bytes() && kernels::gemm_fp8_cublaslt_preferred(m, w.n, w.k)) {
    kernels::GemmFp8Params lt = gemm;  // the same product from the row-major copy
    lt.b = w.row_major.get<uint8_t>();
    lt.b_tiled = false;
    if (cublaslt_->launch(lt, stream_)) return;
  }
  kernels::launch_gemm_fp8(gemm, m, stream_);
}

kernels::GemvFp8Params CudaModel::decode_gemv(const uint16_t* x, int m, const DeviceLinear& w, uint16_t* out) const {
  kernels::GemvFp8Params gemv;
  gemv.x = x;
  gemv.ldx = w.k;
  gemv.w = w.weight.get<uint8_t>();
  gemv.w_tiled = true;
  gemv.w_scales = w.scales.get<float>();
  gemv.bias = bias_of(w);
  gemv.out = out;
  gemv.ldc = w.n;
  gemv.M = m;
  gemv.N = w.n;
  gemv.K = w.k;
  return gemv;
}

void CudaModel::qkv_rope(const uint16_t* x, int m, const DeviceLinear& w, uint16_t* qkv, kernels::RopeParams rope,
                         bool x_quantized) {
  if (options_.decode_qkv_rope && w.fp8 && m <= kernels::kGemvMaxRows) {
    kernels::GemvFp8Params gemv = decode_gemv(x, m, w, nullptr);
    gemv.rope_epilogue = true;
    gemv.rope = rope;
    return kernels::launch_gemv_fp8(gemv, stream_);
  }
  linear(x, m, w, qkv, x_quantized);
  rope.qkv = qkv;
  mark(StepPhase::kRope);
  kernels::launch_rope(rope, stream_);
}

bool CudaModel::streams_experts(int num_tokens) const {
  if (weights_.format == WeightFormat::kBf16 || num_tokens > kMoeStreamMaxTokens) return false;
  switch (options_.moe_decode) {
    case MoeDecodePath::kStream: return true;
    case MoeDecodePath::kGemv:
    case MoeDecodePath::kGemm: return false;
    case MoeDecodePath::kAuto: break;
  }
  if (num_tokens <= kernels::kGemvMaxRows || reads_mxfp4_experts()) return false;
  return num_tokens <= kMoeStreamAutoMaxTokensFp8;
}

bool CudaModel::experts_on_gemvs(int num_tokens) const {
  const bool mxfp4_chunks = reads_mxfp4_experts() && options_.moe_decode == MoeDecodePath::kGemv;
  return weights_.format != WeightFormat::kBf16 && !streams_experts(num_tokens) &&
         num_tokens <= (mxfp4_chunks ? kMxfp4GemvMaxTokens : kernels::kGemvMaxRows);
}

bool CudaModel::experts_gemm_w4a8(int num_tokens) const {
  return options_.moe_mxfp4_w4a8 && reads_mxfp4_experts() &&
         int64_t{num_tokens} * kernels::kMoeTopK >= int64_t{kMxfp4W4A8MinRowsPerExpert} * config_.num_experts;
}

bool CudaModel::defers_moe_combine(int num_tokens) const {
  if (options_.comm != nullptr || weights_.format == WeightFormat::kBf16 || streams_experts(num_tokens)) return false;
  if (experts_on_gemvs(num_tokens)) return num_tokens <= kernels::kGemvMaxRows;  // one decode chunk
  return options_.prefill_moe_combine_deferred;                                  // launch_moe
}

kernels::MoeCombineParams CudaModel::deferred_moe_pieces(int num_tokens) const {
  if (!defers_moe_combine(num_tokens)) return {};
  const int hidden = config_.hidden_size, inter = config_.intermediate_size;
  if (experts_on_gemvs(num_tokens)) {
    return kernels::moe_decode_deferred_combine(moe_workspace_.get(), num_tokens, hidden, inter);
  }
  const int local = options_.num_local_experts > 0 ? options_.num_local_experts : config_.num_experts;
  return kernels::moe_deferred_combine(moe_workspace_.get(), num_tokens, local, hidden, inter, reads_mxfp4_experts(),
                                       experts_gemm_w4a8(num_tokens));
}

// Experts of one layer: normed_ [T, hidden] and router_logits_ [T, E] → delta_ [T, hidden], or with
// defers_moe_combine the pieces in moe_workspace_ that the next norm sums.
void CudaModel::experts(int layer, int num_tokens) {
  const CudaLayer& layer_weights = weights_.layers[static_cast<size_t>(layer)];
  const DeviceExperts& gate_up = layer_weights.gate_up;
  const DeviceExperts& down = layer_weights.down;
  // The fields both weight formats' parameter structs share.
  auto common = [&](auto& moe) {
    moe.x = normed_.get<uint16_t>();
    moe.logits = router_logits_.get<uint16_t>();
    moe.out = delta_.get<uint16_t>();
    moe.b1 = gate_up.bias.get<uint16_t>();
    moe.b2 = down.bias.get<uint16_t>();
    moe.num_tokens = num_tokens;
    moe.num_experts = config_.num_experts;
    moe.expert_begin = options_.expert_begin;
    moe.num_local_experts = options_.num_local_experts > 0 ? options_.num_local_experts : config_.num_experts;
    moe.hidden = config_.hidden_size;
    moe.inter = config_.intermediate_size;
  };
  if (!gate_up.fp8) {
    GOSSAMER_CHECK(!defers_moe_combine(num_tokens), "cuda experts: bf16 experts cannot defer the combine");
    kernels::MoeBf16Params moe;
    common(moe);
    moe.w1 = gate_up.weight.get<uint16_t>();
    moe.w2 = down.weight.get<uint16_t>();
    return kernels::launch_moe_bf16(moe, moe_workspace_.get(), stream_);
  }
  kernels::MoeParams moe;
  common(moe);
  moe.combine_deferred = defers_moe_combine(num_tokens);
  moe.gemv_mxfp4_shape = options_.moe_gemv_shape;
  moe.gemv_single_row = options_.moe_gemv_single_row;
  moe.gemv_x_shared = options_.moe_gemv_x_shared;
  moe.gemm_tile = options_.moe_gemm_tile;
  moe.quantize_tokens_once = options_.moe_quantize_tokens_once;
  if (streams_experts(num_tokens)) {  // both formats, weights as stored
    moe.weights_mxfp4 = gate_up.mxfp4;
    moe.weights_tiled = !gate_up.mxfp4;
    moe.w1 = gate_up.weight.get<uint8_t>();
    moe.w2 = down.weight.get<uint8_t>();
    if (!gate_up.mxfp4) {
      moe.w1_scales = gate_up.scales.get<float>();
      moe.w2_scales = down.scales.get<float>();
    }
    return kernels::launch_moe_stream(moe, moe_workspace_.get(), stream_);
  }
  if (gate_up.mxfp4) {
    const int e = config_.num_experts, h = config_.hidden_size;
    if (experts_on_gemvs(num_tokens)) {
      // The MXFP4 decode block over chunks of ≤ 8 tokens (each reads its routed experts once): one chunk by
      // default, up to kMxfp4GemvMaxTokens with --moe-decode gemv (cuda_model.h).
      moe.weights_mxfp4 = true;
      moe.w1 = gate_up.weight.get<uint8_t>();
      moe.w2 = down.weight.get<uint8_t>();
      for (int t0 = 0; t0 < num_tokens; t0 += kernels::kGemvMaxRows) {
        kernels::MoeParams chunk = moe;
        chunk.num_tokens = std::min(kernels::kGemvMaxRows, num_tokens - t0);
        chunk.x = moe.x + static_cast<int64_t>(t0) * h;
        chunk.logits = moe.logits + static_cast<int64_t>(t0) * e;
        chunk.out = moe.out + static_cast<int64_t>(t0) * h;
        kernels::launch_moe_decode(chunk, moe_workspace_.get(), stream_);
      }
      return;
    }
    // The grouped GEMMs on the experts as stored (no conversion pass): W4A8 (kernels/gemm_w4a8.h) from
    // kMxfp4W4A8MinRowsPerExpert rows per expert, else W4A16 (kernels/gemm_w4a16.h).
    moe.weights_mxfp4 = true;
    moe.w4a16_narrow_max_rows = options_.moe_w4a16_narrow_max_rows;
    moe.w1 = gate_up.weight.get<uint8_t>();
    moe.w2 = down.weight.get<uint8_t>();
    if (experts_gemm_w4a8(num_tokens)) {
      moe.mxfp4_w4a8 = true;
      moe.w1_row_exponents = gate_up.row_exponents.get<uint8_t>();
      moe.w2_row_exponents = down.row_exponents.get<uint8_t>();
    }
    return kernels::launch_moe(moe, moe_workspace_.get(), stream_);
  }
  moe.weights_tiled = true;
  moe.w1 = gate_up.weight.get<uint8_t>();
  moe.w1_scales = gate_up.scales.get<float>();
  moe.w2 = down.weight.get<uint8_t>();
  moe.w2_scales = down.scales.get<float>();
  if (experts_on_gemvs(num_tokens)) return kernels::launch_moe_decode(moe, moe_workspace_.get(), stream_);
  kernels::launch_moe(moe, moe_workspace_.get(), stream_);
}

void CudaModel::reduce_partial_outputs(int num_tokens) {
  if (options_.comm == nullptr) return;
  options_.comm->all_reduce(delta_.get(), int64_t{num_tokens} * config_.hidden_size, DType::kBF16, comm::ReduceOp::kSum,
                            stream_);
}

void CudaModel::enqueue_step(const StepPlan& plan, const int32_t* dev) {
  const int t = plan.num_tokens, hidden = config_.hidden_size;
  auto bf16 = [](const DeviceBuffer& buffer) { return buffer.get<uint16_t>(); };

  // ---- embedding: residual [T, hidden] bf16; vocab-parallel: this rank's rows of its own tokens, zeros for
  //      the others', summed over the group (exact: each row comes from one rank, the others add zeros) ----
  mark(StepPhase::kEmbedding);
  kernels::EmbeddingParams embed;
  embed.table = bf16(weights_.embedding);  // [embedding_rows, hidden] bf16: vocabulary rows from vocab_begin()
  embed.ids = dev + plan.ids;
  embed.out = bf16(residual_);
  embed.num_tokens = t;
  embed.hidden = hidden;
  embed.vocab = static_cast<int>(weights_.embedding_rows);
  embed.vocab_begin = static_cast<int>(vocab_begin());
  kernels::launch_embedding(embed, stream_);
  if (vocab_parallel()) {
    options_.comm->all_reduce(residual_.get(), int64_t{t} * hidden, DType::kBF16, comm::ReduceOp::kSum, stream_);
  }

  kernels::RopeParams rope;
  rope.qkv_stride = config_.qkv_width();
  rope.positions = dev + plan.positions;
  rope.slots = reinterpret_cast<const int64_t*>(dev + plan.slots);
  rope.num_tokens = t;
  rope.num_q_heads = config_.num_q_heads;
  rope.num_kv_heads = config_.num_kv_heads;
  std::copy(rope_.inv_freq.begin(), rope_.inv_freq.end(), rope.inv_freq.begin());
  rope.concentration = rope_.concentration;

  kernels::AttentionParams attention;
  attention.page_indptr = dev + plan.page_indptr;
  attention.page_indices = dev + plan.page_indices;
  attention.cu_seqlens_q = dev + plan.cu_seqlens;
  attention.kv_lens = dev + plan.kv_lens;
  attention.num_seqs = plan.num_seqs;
  attention.num_tokens = t;
  attention.num_q_heads = config_.num_q_heads;
  attention.num_kv_heads = config_.num_kv_heads;
  attention.page_size = block_size_;
  attention.scale = 1.0f / std::sqrt(static_cast<float>(config_.head_dim));
  attention.max_kv_len = plan.max_kv;
  attention.prefill_kernel = options_.prefill_kernel;
  attention.prefill_consumer_warpgroups = options_.prefill_attention_warpgroups;
  attention.prefill_fixed_max = options_.prefill_attention_fixed_max;
  attention.decode_min_tiles_per_split = options_.decode_attention_min_tiles_per_split;
  attention.decode_prefetch_kv = options_.decode_attention_prefetch_kv;
  const bool decode = plan.max_q <= kernels::kDecodeMaxQ;
  attention.decode_rows_apart = mixed_step_attention_split(plan);
  attention.q_tiles_64 = dev + plan.q_tiles_64;  // [num_q_tiles_64] (sequence << 16) | tile
  attention.q_tiles_128 = dev + plan.q_tiles_128;
  attention.num_q_tiles_64 = plan.num_q_tiles_64;
  attention.num_q_tiles_128 = plan.num_q_tiles_128;
  attention.q_tiles_192 = dev + plan.q_tiles_192;
  attention.num_q_tiles_192 = plan.num_q_tiles_192;
  attention.workspace = decode_workspace_.get();

  kernels::RmsNormParams norm;
  norm.num_tokens = t;
  norm.hidden = hidden;
  norm.eps = config_.rms_norm_eps;
  // A norm after a block: residual_ += the block's output, delta_ [T, hidden] bf16, or after a decode MoE
  // on one GPU (defers_moe_combine) its unsummed pieces in moe_workspace_ (y [T·4, hidden] bf16, pair_row,
  // topk_weights), which the norm combines itself: one launch fewer per layer.
  const bool moe_deferred = defers_moe_combine(t);
  const kernels::MoeCombineParams moe_pieces = deferred_moe_pieces(t);
  auto add_block_output = [&](bool after_moe) {
    const bool pieces = after_moe && moe_deferred;
    norm.x = pieces ? nullptr : bf16(delta_);
    norm.moe_y = pieces ? moe_pieces.y : nullptr;
    norm.moe_pair_row = pieces ? moe_pieces.pair_row : nullptr;
    norm.moe_topk_weights = pieces ? moe_pieces.topk_weights : nullptr;
    norm.residual = bf16(residual_);
  };
  if (routing_trace_) routing_trace_->begin_step();
  for (int layer = 0; layer < config_.num_layers; ++layer) {
    const CudaLayer& w = weights_.layers[static_cast<size_t>(layer)];
    // ---- attention norm (fused with the residual add of the previous block) ----
    mark(StepPhase::kAttnNorm);
    if (layer == 0) {
      norm.x = bf16(residual_);
      norm.residual = nullptr;
    } else {
      add_block_output(true);
    }
    norm.weight = bf16(w.attn_norm);
    // A prefill step's FP8 QKV GEMM takes the norm's quantized rows (RmsNormParams::out_q) in place of its input pass.
    const bool norm_fp8 = options_.prefill_norm_fp8 && linear_quantizes(t, w.qkv);
    norm.out = norm_fp8 ? nullptr : bf16(normed_);
    norm.out_q = norm_fp8 ? act_.get<uint8_t>() : nullptr;
    norm.ldq = round_up(hidden, 16);
    norm.out_scales = norm_fp8 ? act_scales_.get<float>() : nullptr;
    kernels::launch_rmsnorm(norm, stream_);
    norm.out_q = nullptr;  // the other norms write bf16 rows
    norm.out_scales = nullptr;
    // ---- qkv [T, qkv_width] → RoPE (q → q_, k/v → paged cache) → attention → o-proj into delta ----
    const bool ring = num_sliding_blocks_ > 0 && config_.layer_is_sliding[static_cast<size_t>(layer)];
    rope.slots = reinterpret_cast<const int64_t*>(dev + (ring ? plan.sliding_slots : plan.slots));
    attention.page_indptr = dev + (ring ? plan.sliding_page_indptr : plan.page_indptr);
    attention.page_indices = dev + (ring ? plan.sliding_page_indices : plan.page_indices);
    rope.q_out = bf16(q_);
    // [blocks·block_size, kv_heads, 64] bf16, or e4m3 on full-attention layers with --kv-cache-dtype fp8
    // (scales: kv_scales_ [layer][k, v][kv_heads] fp32)
    const bool kv_fp8 = layer_kv_fp8(layer);
    const float* k_scale = kv_fp8 ? kv_scales_.get<float>() + int64_t{2} * layer * config_.num_kv_heads : nullptr;
    const float* v_scale = kv_fp8 ? k_scale + config_.num_kv_heads : nullptr;
    rope.k_cache = k_cache_[static_cast<size_t>(layer)].get();
    rope.v_cache = v_cache_[static_cast<size_t>(layer)].get();
    rope.kv_fp8 = attention.kv_fp8 = kv_fp8;
    rope.k_scale = attention.k_scale = k_scale;
    rope.v_scale = attention.v_scale = v_scale;
    mark(StepPhase::kQkv);
    qkv_rope(bf16(normed_), t, w.qkv, bf16(qkv_), rope, norm_fp8);  // marks kRope where RoPE is its own launch
    attention.q = bf16(q_);
    attention.out = bf16(attn_out_);
    attention.k_cache = k_cache_[static_cast<size_t>(layer)].get();
    attention.v_cache = v_cache_[static_cast<size_t>(layer)].get();
    attention.sinks = w.sinks.get<float>();
    attention.window = config_.layer_is_sliding[static_cast<size_t>(layer)] ? config_.sliding_window : 0;
    mark(StepPhase::kAttention);
    if (decode || attention.decode_rows_apart) kernels::launch_attention_decode(attention, stream_);
    if (!decode) kernels::launch_attention_prefill(attention, stream_);  // with decode_rows_apart: the chunks only
    mark(StepPhase::kOProj);
    linear(bf16(attn_out_), t, w.o, bf16(delta_));
    reduce_partial_outputs(t);  // tensor parallel: each rank's heads' share of the O-projection
    // ---- MLP norm (residual += attention output) → router → experts into delta ----
    mark(StepPhase::kMlpNorm);
    add_block_output(false);
    norm.weight = bf16(w.mlp_norm);
    norm.out = bf16(normed_);
    kernels::launch_rmsnorm(norm, stream_);
    mark(StepPhase::kRouter);
    linear(bf16(normed_), t, w.router, bf16(router_logits_));
    if (routing_trace_) trace_routing(t);
    mark(StepPhase::kExperts);
    experts(layer, t);
    reduce_partial_outputs(t);  // TP: each rank's intermediate columns; EP: each rank's experts
  }
  // ---- final norm, gather the wanted rows, unembedding → logits_ [rows, vocab] bf16, or with a
  //      vocab-parallel unembedding vocab_local_ [rows, local vocab] bf16 (gathered by the consumer) ----
  mark(StepPhase::kFinalNorm);
  add_block_output(true);
  norm.weight = bf16(weights_.final_norm);
  norm.out = bf16(normed_);
  kernels::launch_rmsnorm(norm, stream_);
  if (plan.num_rows > 0) {
    // The wanted rows [rows, hidden] bf16: normed_ itself where row i is token i, else gathered into final_rows_.
    const uint16_t* rows = bf16(normed_);
    if (!plan.rows_are_tokens) {
      kernels::EmbeddingParams gather;  // a row gather: the "table" is the normalised hidden states
      gather.table = bf16(normed_);
      gather.ids = dev + plan.rows;
      gather.out = bf16(final_rows_);
      gather.num_tokens = plan.num_rows;
      gather.hidden = hidden;
      gather.vocab = t;
      kernels::launch_embedding(gather, stream_);
      rows = bf16(final_rows_);
    }
    mark(StepPhase::kUnembedding);
    linear(rows, plan.num_rows, weights_.unembedding, bf16(vocab_parallel() ? vocab_local_ : logits_));
  }
}

// vocab_local_ [rows, n_rank] of every rank → logits_ [rows, vocab] (kernels/vocab_shards.h); the first
// num_rows rows (a decode graph computes padded ones behind them). Each slot of
// vocab_slots_ is rows · vocab_shard_rows elements; rank q's logits fill the start of slot q. With an
// all-gather (NCCL) the slots arrive as sent; without one (ranks sharing a GPU: IPC sums only) every rank
// zeroes the other slots and the group sums them, which is exact (x + 0 = x; −0 becomes +0).
void CudaModel::gather_vocab_shards(int num_rows) {
  comm::Communicator& comm = *options_.comm;
  const int64_t slot = int64_t{num_rows} * options_.vocab_shard_rows;
  auto* slots = vocab_slots_.get<uint16_t>();
  if (comm.supports_all_gather()) {
    comm.all_gather(vocab_local_.get(), slots, slot * 2, stream_);
  } else {
    GOSSAMER_CUDA_CHECK(cudaMemsetAsync(slots, 0, static_cast<size_t>(slot * comm.world_size() * 2), stream_));
    GOSSAMER_CUDA_CHECK(cudaMemcpyAsync(slots + slot * comm.rank(), vocab_local_.get(),
                                        static_cast<size_t>(int64_t{num_rows} * weights_.unembedding.n * 2),
                                        cudaMemcpyDeviceToDevice, stream_));
    comm.all_reduce(slots, slot * comm.world_size(), DType::kBF16, comm::ReduceOp::kSum, stream_);
  }
  kernels::VocabShardsParams gather;
  gather.shards = slots;
  gather.out = logits_.get<uint16_t>();
  gather.rows = num_rows;
  gather.shard_rows = options_.vocab_shard_rows;
  gather.vocab = config_.vocab_size;
  kernels::launch_vocab_shards(gather, stream_);
}

}  // namespace gossamer::model::cuda
