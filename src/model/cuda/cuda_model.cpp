#include "model/cuda/cuda_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/dtype.h"
#include "core/error.h"
#include "core/parallel.h"
#include "kernels/attention.h"
#include "kernels/embedding.h"
#include "kernels/gemm_fp8.h"
#include "kernels/moe.h"
#include "kernels/quantize_fp8.h"
#include "kernels/rmsnorm.h"
#include "kernels/rope.h"
#include "model/batch_check.h"

namespace gossamer::model::cuda {

namespace {

int round_up(int value, int multiple) { return (value + multiple - 1) / multiple * multiple; }

void check_supported(const GptOssConfig& c) {
  GOSSAMER_CHECK(c.head_dim == kernels::kHeadDim, "cuda backend: head_dim must be 64, got ", c.head_dim);
  GOSSAMER_CHECK(c.experts_per_token == kernels::kMoeTopK, "cuda backend: experts_per_token must be 4, got ",
                 c.experts_per_token);
  GOSSAMER_CHECK(c.num_experts <= kernels::kMoeMaxExperts && c.num_experts % 8 == 0,
                 "cuda backend: num_experts must be a multiple of 8 up to 256, got ", c.num_experts);
  GOSSAMER_CHECK(c.hidden_size % 16 == 0 && c.intermediate_size % 16 == 0 && c.q_width() % 16 == 0,
                 "cuda backend: hidden, intermediate and q widths must be multiples of 16");
}

}  // namespace

// Host-side plan of one step; offsets index into one pinned buffer of int32 words.
struct CudaModel::StepPlan {
  int num_tokens = 0, num_seqs = 0, num_pages = 0, num_rows = 0, max_q = 0, max_kv = 0;
  // word offsets of each array in the plan buffer (slots are int64: two words each)
  size_t ids = 0, positions = 0, slots = 0, cu_seqlens = 0, kv_lens = 0, page_indptr = 0, page_indices = 0, rows = 0,
         total_words = 0;
};

CudaModel::CudaModel(GptOssConfig config, const GptOssWeights& host_weights) : config_(std::move(config)) {
  check_supported(config_);
  int device_count = 0;
  GOSSAMER_CHECK(cudaGetDeviceCount(&device_count) == cudaSuccess && device_count > 0, "cuda backend: no CUDA GPU found");
  GOSSAMER_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  weights_ = CudaWeights::upload(config_, host_weights);
  rope_ = RopeTables::from_config(config_);
}

CudaModel::~CudaModel() {
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

void CudaModel::synchronize() const { GOSSAMER_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

int64_t CudaModel::kv_bytes_per_block() const {
  return int64_t{2} * config_.num_layers * config_.kv_width() * std::max(block_size_, 16) * 2;
}

void CudaModel::allocate_kv_cache(int32_t num_blocks, int32_t block_size) {
  GOSSAMER_CHECK(num_blocks > 0 && block_size > 0, "KV cache needs positive blocks and block size");
  k_cache_.clear();
  v_cache_.clear();
  const size_t bytes = static_cast<size_t>(num_blocks) * block_size * config_.kv_width() * 2;
  for (int layer = 0; layer < config_.num_layers; ++layer) {
    k_cache_.emplace_back(bytes);
    v_cache_.emplace_back(bytes);
    // Zeroed so that positions never written (e.g. a benchmark's synthetic context) are finite.
    GOSSAMER_CUDA_CHECK(cudaMemsetAsync(k_cache_.back().get(), 0, bytes, stream_));
    GOSSAMER_CUDA_CHECK(cudaMemsetAsync(v_cache_.back().get(), 0, bytes, stream_));
  }
  GOSSAMER_CUDA_CHECK(cudaStreamSynchronize(stream_));
  num_blocks_ = num_blocks;
  block_size_ = block_size;
}

void CudaModel::ensure_workspace(int num_tokens, int num_logit_rows) {
  const int64_t t = std::max(num_tokens, 1), h = config_.hidden_size, qkv = config_.qkv_width(), qw = config_.q_width();
  const int64_t kmax = round_up(std::max(config_.hidden_size, config_.q_width()), 16);
  residual_.ensure(t * h * 2);
  delta_.ensure(t * h * 2);
  normed_.ensure(t * h * 2);
  qkv_.ensure(t * qkv * 2);
  q_.ensure(t * qw * 2);
  attn_out_.ensure(t * qw * 2);
  act_.ensure(t * kmax);
  act_scales_.ensure(t * ((kmax + 127) / 128) * 4);
  router_logits_.ensure(t * config_.num_experts * 2);
  moe_workspace_.ensure(kernels::moe_workspace_bytes(static_cast<int>(t), config_.num_experts, config_.hidden_size,
                                                     config_.intermediate_size));
  final_rows_.ensure(std::max(num_logit_rows, 1) * h * 2);
  logits_.ensure(static_cast<size_t>(std::max(num_logit_rows, 1)) * config_.vocab_size * 2);
  host_logits_.ensure(static_cast<size_t>(std::max(num_logit_rows, 1)) * config_.vocab_size * 2);
}

void CudaModel::linear(const uint16_t* x, int m, const Fp8Linear& w, uint16_t* out) {
  const int ldq = round_up(w.k, 16);
  kernels::QuantizeFp8Params quant;
  quant.x = x;
  quant.ldx = w.k;
  quant.q = act_.get<uint8_t>();
  quant.ldq = ldq;
  quant.scales = act_scales_.get<float>();
  quant.M = m;
  quant.K = w.k;
  kernels::launch_quantize_fp8(quant, stream_);
  kernels::GemmFp8Params gemm;
  gemm.a = act_.get<uint8_t>();
  gemm.lda = ldq;
  gemm.a_scales = act_scales_.get<float>();
  gemm.b = w.weight.get<uint8_t>();
  gemm.b_scales = w.scales.get<float>();
  gemm.bias = w.bias.bytes() ? w.bias.get<uint16_t>() : nullptr;
  gemm.out = out;
  gemm.ldc = w.n;
  gemm.M = m;
  gemm.N = w.n;
  gemm.K = w.k;
  gemm.epilogue = kernels::GemmEpilogue::kBias;
  kernels::launch_gemm_fp8(gemm, m, stream_);
}

void CudaModel::forward(const ForwardBatch& batch, std::vector<float>& logits) {
  check_forward_batch(config_, num_blocks_, block_size_, batch);
  // ---- host plan (pinned), one upload ----
  StepPlan plan;
  plan.num_seqs = static_cast<int>(batch.sequences.size());
  for (const SequenceInput& seq : batch.sequences) {
    const int n = static_cast<int>(seq.tokens.size());
    plan.num_tokens += n;
    plan.max_q = std::max(plan.max_q, n);
    plan.max_kv = std::max(plan.max_kv, seq.num_cached + n);
    plan.num_pages += (seq.num_cached + n + block_size_ - 1) / block_size_;
    plan.num_rows += seq.logits == LogitsWanted::kAll ? n : (seq.logits == LogitsWanted::kLast && n > 0 ? 1 : 0);
  }
  logits.clear();
  if (plan.num_tokens == 0) return;
  size_t words = 0;
  auto reserve = [&](size_t count, size_t width) {
    words = (words + width - 1) / width * width;
    const size_t at = words;
    words += count * width;
    return at;
  };
  plan.ids = reserve(plan.num_tokens, 1);
  plan.positions = reserve(plan.num_tokens, 1);
  plan.slots = reserve(plan.num_tokens, 2);
  plan.cu_seqlens = reserve(plan.num_seqs + 1, 1);
  plan.kv_lens = reserve(plan.num_seqs, 1);
  plan.page_indptr = reserve(plan.num_seqs + 1, 1);
  plan.page_indices = reserve(std::max(plan.num_pages, 1), 1);
  plan.rows = reserve(std::max(plan.num_rows, 1), 1);
  plan.total_words = words;
  host_plan_.ensure(words * 4);
  plan_.ensure(words * 4);
  int32_t* host = host_plan_.get<int32_t>();
  int64_t* slots = reinterpret_cast<int64_t*>(host + plan.slots);
  int token = 0, page = 0, row = 0;
  host[plan.cu_seqlens] = 0;
  host[plan.page_indptr] = 0;
  for (int s = 0; s < plan.num_seqs; ++s) {
    const SequenceInput& seq = batch.sequences[static_cast<size_t>(s)];
    const int n = static_cast<int>(seq.tokens.size());
    for (int i = 0; i < n; ++i, ++token) {
      const int position = seq.num_cached + i;
      host[plan.ids + token] = seq.tokens[static_cast<size_t>(i)];
      host[plan.positions + token] = position;
      slots[token] = int64_t{seq.block_table[static_cast<size_t>(position / block_size_)]} * block_size_ + position % block_size_;
      if (seq.logits == LogitsWanted::kAll || (seq.logits == LogitsWanted::kLast && i + 1 == n)) host[plan.rows + row++] = token;
    }
    host[plan.cu_seqlens + s + 1] = token;
    host[plan.kv_lens + s] = seq.num_cached + n;
    const int pages = (seq.num_cached + n + block_size_ - 1) / block_size_;
    for (int p = 0; p < pages; ++p) host[plan.page_indices + page++] = seq.block_table[static_cast<size_t>(p)];
    host[plan.page_indptr + s + 1] = page;
  }
  GOSSAMER_CUDA_CHECK(cudaMemcpyAsync(plan_.get(), host, words * 4, cudaMemcpyHostToDevice, stream_));
  const int32_t* dev = plan_.get<int32_t>();
  ensure_workspace(plan.num_tokens, plan.num_rows);

  const int t = plan.num_tokens, hidden = config_.hidden_size;
  auto bf16 = [](const DeviceBuffer& buffer) { return buffer.get<uint16_t>(); };

  // ---- embedding: residual [T, hidden] bf16 ----
  kernels::EmbeddingParams embed;
  embed.table = bf16(weights_.embedding);
  embed.ids = dev + plan.ids;
  embed.out = bf16(residual_);
  embed.num_tokens = t;
  embed.hidden = hidden;
  embed.vocab = config_.vocab_size;
  kernels::launch_embedding(embed, stream_);

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
  const bool decode = plan.max_q <= kernels::kDecodeMaxQ;
  if (decode) {
    decode_workspace_.ensure(std::max<size_t>(kernels::attention_decode_workspace_bytes(attention), 16));
    attention.workspace = decode_workspace_.get();
  }

  kernels::RmsNormParams norm;
  norm.num_tokens = t;
  norm.hidden = hidden;
  norm.eps = config_.rms_norm_eps;
  for (int layer = 0; layer < config_.num_layers; ++layer) {
    const CudaLayer& w = weights_.layers[static_cast<size_t>(layer)];
    // ---- attention norm (fused with the residual add of the previous block) ----
    norm.x = layer == 0 ? bf16(residual_) : bf16(delta_);
    norm.residual = layer == 0 ? nullptr : bf16(residual_);
    norm.weight = bf16(w.attn_norm);
    norm.out = bf16(normed_);
    kernels::launch_rmsnorm(norm, stream_);
    // ---- qkv [T, qkv_width] → RoPE (q → q_, k/v → paged cache) → attention → o-proj into delta ----
    linear(bf16(normed_), t, w.qkv, bf16(qkv_));
    rope.qkv = bf16(qkv_);
    rope.q_out = bf16(q_);
    rope.k_cache = bf16(k_cache_[static_cast<size_t>(layer)]);
    rope.v_cache = bf16(v_cache_[static_cast<size_t>(layer)]);
    kernels::launch_rope(rope, stream_);
    attention.q = bf16(q_);
    attention.out = bf16(attn_out_);
    attention.k_cache = bf16(k_cache_[static_cast<size_t>(layer)]);
    attention.v_cache = bf16(v_cache_[static_cast<size_t>(layer)]);
    attention.sinks = w.sinks.get<float>();
    attention.window = config_.layer_is_sliding[static_cast<size_t>(layer)] ? config_.sliding_window : 0;
    if (decode) {
      kernels::launch_attention_decode(attention, stream_);
    } else {
      kernels::launch_attention_prefill(attention, stream_);
    }
    linear(bf16(attn_out_), t, w.o, bf16(delta_));
    // ---- MLP norm (residual += attention output) → router → experts into delta ----
    norm.x = bf16(delta_);
    norm.residual = bf16(residual_);
    norm.weight = bf16(w.mlp_norm);
    norm.out = bf16(normed_);
    kernels::launch_rmsnorm(norm, stream_);
    linear(bf16(normed_), t, w.router, bf16(router_logits_));
    kernels::MoeParams moe;
    moe.x = bf16(normed_);
    moe.logits = bf16(router_logits_);
    moe.out = bf16(delta_);
    moe.w1 = w.gate_up.weight.get<uint8_t>();
    moe.w1_scales = w.gate_up.scales.get<float>();
    moe.b1 = bf16(w.gate_up.bias);
    moe.w2 = w.down.weight.get<uint8_t>();
    moe.w2_scales = w.down.scales.get<float>();
    moe.b2 = bf16(w.down.bias);
    moe.num_tokens = t;
    moe.num_experts = config_.num_experts;
    moe.num_local_experts = config_.num_experts;
    moe.hidden = hidden;
    moe.inter = config_.intermediate_size;
    kernels::launch_moe(moe, moe_workspace_.get(), stream_);
  }
  // ---- final norm, gather the wanted rows, unembedding → logits [rows, vocab] ----
  norm.x = bf16(delta_);
  norm.residual = bf16(residual_);
  norm.weight = bf16(weights_.final_norm);
  norm.out = bf16(normed_);
  kernels::launch_rmsnorm(norm, stream_);
  if (plan.num_rows > 0) {
    kernels::EmbeddingParams gather;  // a row gather: the "table" is the normalised hidden states
    gather.table = bf16(normed_);
    gather.ids = dev + plan.rows;
    gather.out = bf16(final_rows_);
    gather.num_tokens = plan.num_rows;
    gather.hidden = hidden;
    gather.vocab = t;
    kernels::launch_embedding(gather, stream_);
    linear(bf16(final_rows_), plan.num_rows, weights_.unembedding, bf16(logits_));
    const size_t count = static_cast<size_t>(plan.num_rows) * config_.vocab_size;
    GOSSAMER_CUDA_CHECK(cudaMemcpyAsync(host_logits_.get(), logits_.get(), count * 2, cudaMemcpyDeviceToHost, stream_));
    GOSSAMER_CUDA_CHECK(cudaStreamSynchronize(stream_));
    logits.resize(count);
    const uint16_t* bits = host_logits_.get<uint16_t>();
    parallel_for(static_cast<int64_t>(count), int64_t{1} << 20, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) logits[static_cast<size_t>(i)] = bf16_to_float(bits[i]);
    });
  } else {
    GOSSAMER_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }
  GOSSAMER_CUDA_CHECK(cudaGetLastError());
}

}  // namespace gossamer::model::cuda
