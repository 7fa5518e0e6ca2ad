#include "model/cuda/cuda_model.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <utility>

#include "core/cuda/current_device.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/log.h"
#include "core/parallel.h"
#include "kernels/attention.h"
#include "kernels/feed_tokens.h"
#include "kernels/fp8_tiled.h"
#include "kernels/gemm_bf16.h"
#include "kernels/gemv_fp8.h"
#include "kernels/kv_cache_fp8.h"
#include "kernels/moe.h"
#include "kernels/rope.h"
#include "kernels/sampling.h"
#include "kernels/swiglu.h"
#include "kernels/token_mask.h"
#include "model/batch_check.h"

namespace gossamer::model::cuda {

namespace {

int round_up(int value, int multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

void check_supported(const GptOssConfig& c) {
  GOSSAMER_CHECK(c.head_dim == kernels::kHeadDim, "cuda backend: head_dim must be 64, got ", c.head_dim);
  GOSSAMER_CHECK(c.experts_per_token == kernels::kMoeTopK, "cuda backend: experts_per_token must be 4, got ",
                 c.experts_per_token);
  GOSSAMER_CHECK(c.num_experts <= kernels::kMoeMaxExperts && c.num_experts % 8 == 0,
                 "cuda backend: num_experts must be a multiple of 8 up to 256, got ", c.num_experts);
  GOSSAMER_CHECK(c.hidden_size % 16 == 0 && c.intermediate_size % 16 == 0 && c.q_width() % 16 == 0,
                 "cuda backend: hidden, intermediate and q widths must be multiples of 16");
  GOSSAMER_CHECK(c.num_kv_heads > 0 && c.num_q_heads % c.num_kv_heads == 0 &&
                     c.num_q_heads / c.num_kv_heads <= kernels::kAttentionMaxGroup,
                 "cuda backend: at most ", kernels::kAttentionMaxGroup, " query heads per KV head, got ", c.num_q_heads,
                 " query and ", c.num_kv_heads, " KV heads");
  // The SwiGLU epilogues are compiled for the published constants (kernels/swiglu.h); the window, the rope
  // tables and the attention scale are passed from the config at run time.
  GOSSAMER_CHECK(c.swiglu_limit == kernels::kSwigluLimit && c.swiglu_alpha == kernels::kSwigluAlpha,
                 "cuda backend: the SwiGLU kernels are built for swiglu_limit ", kernels::kSwigluLimit, " and alpha ",
                 kernels::kSwigluAlpha, ", the checkpoint has ", c.swiglu_limit, " and ", c.swiglu_alpha,
                 " (use --device cpu)");
}

// Padded batch sizes that get a decode graph; a step uses the smallest one that fits. Steps of 32 up to 256
// and of 64 beyond: padding rows cost GEMM and MoE work at these sizes, so a bucket wastes ≤ 1/8 of it there.
constexpr std::array<int, 27> kGraphBatches = {1,   2,   4,   8,   16,  24,  32,  48,  64,  96,  128, 160, 192, 224,
                                               256, 320, 384, 448, 512, 576, 640, 704, 768, 832, 896, 960, 1024};
static_assert(kGraphBatches.back() == CudaModel::kMaxGraphBatch);

// A per-step buffer (device or pinned) grows to at least `bytes` and by a quarter at least, so a batch that
// grows step by step (serving ramping up to 1,024 sequences) reallocates a few dozen times, not at every step:
// cudaFree and cudaFreeHost wait for the device, and pinning a [rows, vocab] buffer of hundreds of MB took
// ~250 ms per step at 1,024 clients (docs/PERF.md, Serving). Returns whether the buffer moved.
template <typename Buffer>
bool grow(Buffer& buffer, size_t bytes) {
  if (bytes <= buffer.bytes()) return false;
  buffer.ensure(std::max(bytes, buffer.bytes() + buffer.bytes() / 4));
  return true;
}

// The T array at byte `offset` of a staging buffer.
template <typename T>
T* typed(uint8_t* base, size_t offset) {
  return reinterpret_cast<T*>(base + offset);
}

}  // namespace

CudaModel::CudaModel(GptOssConfig config, const GptOssWeights& host_weights, CudaOptions options)
    : CudaModel(std::move(config), options,
                [&](const GptOssConfig& c) { return CudaWeights::upload(c, host_weights, options.weights); }) {}

CudaModel::CudaModel(GptOssConfig config, RandomWeights random, CudaOptions options)
    : CudaModel(std::move(config), options, [&](const GptOssConfig& c) {
        // NOTE: called by the target constructor once options_ is set, so vocab_begin() is valid here.
        return CudaWeights::random(c, random.seed, options.weights, options.num_local_experts, vocab_begin(),
                                   vocab_parallel() ? options.vocab_rows : 0);
      }) {}

CudaModel::CudaModel(GptOssConfig config, CudaOptions options,
                     const std::function<CudaWeights(const GptOssConfig&)>& make)
    : config_(std::move(config)), options_(options) {
  check_supported(config_);
  int device_count = 0;
  GOSSAMER_CHECK(cudaGetDeviceCount(&device_count) == cudaSuccess && device_count > 0,
                 "cuda backend: no CUDA GPU found");
  GOSSAMER_CHECK(options_.device >= 0 && options_.device < device_count, "cuda backend: GPU ", options_.device,
                 " asked for, but ", device_count, " are visible");
  bind_device();
  GOSSAMER_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  for (StepSlot& slot : slots_) GOSSAMER_CUDA_CHECK(cudaEventCreateWithFlags(&slot.done, cudaEventDisableTiming));
  weights_ = make(config_);
  const int64_t vocab_rows = vocab_parallel() ? options_.vocab_rows : config_.vocab_size;
  GOSSAMER_CHECK(weights_.embedding_rows == vocab_rows && weights_.unembedding.n == vocab_rows &&
                     vocab_begin() + vocab_rows <= config_.vocab_size &&
                     (!vocab_parallel() || vocab_rows <= options_.vocab_shard_rows),
                 "cuda backend: the embedding has ", weights_.embedding_rows, " rows and the unembedding ",
                 weights_.unembedding.n, ", this ", vocab_parallel() ? "vocab-parallel rank" : "model", " needs ",
                 vocab_rows, " (vocabulary rows [", vocab_begin(), ", ", vocab_begin() + vocab_rows, ") of ",
                 config_.vocab_size, ")");
  if (options_.cublaslt_dense) add_row_major_copies();
  rope_ = RopeTables::from_config(config_);
}

// The row-major copies of the FP8 qkv and o linears that cuBLASLt reads (CudaOptions::cublaslt_dense).
void CudaModel::add_row_major_copies() {
  bool any = false;
  for (CudaLayer& layer : weights_.layers) {
    for (DeviceLinear* linear : {&layer.qkv, &layer.o}) {
      if (!linear->fp8 || linear->k % 16 != 0) continue;
      const size_t bytes = static_cast<size_t>(linear->n) * static_cast<size_t>(linear->k);
      linear->row_major.ensure(bytes);
      kernels::launch_fp8_from_tiled(linear->weight.get<uint8_t>(), linear->row_major.get<uint8_t>(), 1, linear->n,
                                     linear->k, stream_);
      weights_.device_bytes += bytes;
      any = true;
    }
  }
  if (any) cublaslt_ = std::make_unique<kernels::CublasLtFp8Gemm>();
  synchronize();
}

CudaModel::~CudaModel() {
  // NOTE: never throws; the members' cudaFree after this body needs no current device (unified addressing).
  (void)cudaSetDevice(options_.device);
  for (DecodeGraph& graph : graphs_) {
    if (graph.exec != nullptr) cudaGraphExecDestroy(graph.exec);
  }
  for (StepSlot& slot : slots_) {
    if (slot.done != nullptr) cudaEventDestroy(slot.done);
  }
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

bool CudaModel::set_phase_timing(bool on) {
  bind_device();
  if (!on) phase_timer_.reset();
  if (on && !phase_timer_) phase_timer_ = std::make_unique<CudaPhaseTimer>();
  return true;
}

bool CudaModel::set_routing_trace(bool on) {
  if (!on) routing_trace_.reset();
  if (on && !routing_trace_) routing_trace_ = std::make_unique<RoutingTrace>();
  return true;
}

void CudaModel::trace_routing(int num_tokens) {
  const int experts = config_.num_experts;
  std::vector<uint16_t> bits(static_cast<size_t>(num_tokens) * static_cast<size_t>(experts));
  GOSSAMER_CUDA_CHECK(
      cudaMemcpyAsync(bits.data(), router_logits_.get(), bits.size() * 2, cudaMemcpyDeviceToHost, stream_));
  GOSSAMER_CUDA_CHECK(cudaStreamSynchronize(stream_));
  std::vector<float> logits(bits.size());
  std::transform(bits.begin(), bits.end(), logits.begin(), [](uint16_t b) { return bf16_to_float(b); });
  routing_trace_->add_layer(logits, num_tokens, experts, config_.experts_per_token);
}

void CudaModel::bind_device() const {
  gossamer::cuda::use_device(options_.device);
}

PhaseSeconds CudaModel::last_phase_seconds() {
  if (!phase_timer_) return {};
  bind_device();
  return phase_timer_->collect();
}

void CudaModel::synchronize() const {
  bind_device();
  GOSSAMER_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

int64_t CudaModel::kv_layer_bytes_per_token(bool sliding) const {
  return int64_t{2} * config_.kv_width() * (options_.kv_cache_fp8 && !sliding ? 1 : 2);
}

int64_t CudaModel::kv_bytes_per_token() const {
  int64_t bytes = 0;
  for (int layer = 0; layer < config_.num_layers; ++layer) {
    bytes += kv_layer_bytes_per_token(layer_has_window(layer));
  }
  return bytes;
}

std::string CudaModel::kv_cache_dtype_name() const {
  return options_.kv_cache_fp8 ? "fp8_e4m3 on full-attention layers, bf16 on sliding-window layers" : "bf16";
}

int64_t CudaModel::kv_bytes_per_block() const {
  return kv_bytes_per_token() * std::max(block_size_, 16);
}

void CudaModel::allocate_kv_cache_impl(int32_t num_blocks, int32_t block_size, int32_t num_sliding_blocks) {
  bind_device();
  GOSSAMER_CHECK(num_blocks > 0 && block_size > 0 && (block_size & (block_size - 1)) == 0 && num_sliding_blocks >= 0,
                 "KV cache needs positive blocks and a power-of-two block size");
  k_cache_.clear();
  v_cache_.clear();
  num_sliding_blocks_ = num_sliding_layers() > 0 ? num_sliding_blocks : 0;
  for (DecodeGraph& graph : graphs_) {  // their plan layouts and cache pointers are stale
    if (graph.exec != nullptr) cudaGraphExecDestroy(graph.exec);
  }
  graphs_.clear();
  for (int layer = 0; layer < config_.num_layers; ++layer) {
    // One extra block past the caller's range in each pool: the scratch block of graph padding sequences.
    const bool ring = num_sliding_blocks_ > 0 && config_.layer_is_sliding[static_cast<size_t>(layer)];
    const size_t bytes = static_cast<size_t>((ring ? num_sliding_blocks_ : num_blocks) + 1) * block_size *
                         config_.kv_width() * (layer_kv_fp8(layer) ? 1 : 2);
    k_cache_.emplace_back(bytes);
    v_cache_.emplace_back(bytes);
    // Zeroed so that positions never written (e.g. a benchmark's synthetic context) are finite.
    GOSSAMER_CUDA_CHECK(cudaMemsetAsync(k_cache_.back().get(), 0, bytes, stream_));
    GOSSAMER_CUDA_CHECK(cudaMemsetAsync(v_cache_.back().get(), 0, bytes, stream_));
  }
  if (options_.kv_cache_fp8 && kv_scales_.bytes() == 0) {
    const std::vector<float> scales(static_cast<size_t>(config_.num_layers) * 2 * config_.num_kv_heads,
                                    kernels::kKvFp8DefaultScale);
    kv_scales_.ensure(scales.size() * sizeof(float));
    GOSSAMER_CUDA_CHECK(cudaMemcpyAsync(kv_scales_.get(), scales.data(), scales.size() * sizeof(float),
                                        cudaMemcpyHostToDevice, stream_));
  }
  GOSSAMER_CUDA_CHECK(cudaStreamSynchronize(stream_));
  num_blocks_ = num_blocks;
  block_size_ = block_size;
  ++workspace_generation_;  // graphs hold cache pointers
}

CudaModel::StepPlan CudaModel::layout_plan(int tokens, int seqs, int pages, int rows, bool prefill) const {
  const bool ring = num_sliding_blocks_ > 0;
  StepPlan plan;
  size_t words = 0;
  auto reserve = [&](size_t count, size_t width) {
    words = (words + width - 1) / width * width;
    const size_t at = words;
    words += count * width;
    return at;
  };
  plan.ids = reserve(tokens, 1);
  plan.positions = reserve(tokens, 1);
  plan.slots = reserve(tokens, 2);  // int64
  plan.sliding_slots = ring ? reserve(tokens, 2) : plan.slots;
  plan.cu_seqlens = reserve(seqs + 1, 1);
  plan.kv_lens = reserve(seqs, 1);
  plan.page_indptr = reserve(seqs + 1, 1);
  plan.sliding_page_indptr = ring ? reserve(seqs + 1, 1) : plan.page_indptr;
  plan.rows = reserve(std::max(rows, 1), 1);
  plan.feeds = reserve(static_cast<size_t>(seqs) * 2, 1);
  // Room for every tile of every sequence (attention.h: Σ ceil(q_len / R) ≤ tokens / R + seqs).
  plan.q_tiles_64 = reserve(prefill ? tokens / 64 + seqs : 0, 1);
  plan.q_tiles_128 = reserve(prefill ? tokens / 128 + seqs : 0, 1);
  plan.q_tiles_192 = reserve(prefill ? tokens / 192 + seqs : 0, 1);
  // Page tables last: a step uploads only the pages it uses.
  plan.page_indices = reserve(std::max(pages, 1), 1);
  plan.sliding_page_indices = ring ? reserve(std::max(pages, 1), 1) : plan.page_indices;
  plan.total_words = words;
  return plan;
}

void CudaModel::fill_and_upload_plan(const ForwardBatch& batch, StepPlan& plan, DeviceBuffer& device) {
  PinnedBuffer& host_plan = launching_slot().plan;  // NOTE: a step in flight may still upload from the other
  grow(host_plan, plan.total_words * 4);
  int32_t* host = host_plan.get<int32_t>();
  int64_t* slots = reinterpret_cast<int64_t*>(host + plan.slots);
  int64_t* sliding_slots = reinterpret_cast<int64_t*>(host + plan.sliding_slots);
  const bool ring = num_sliding_blocks_ > 0;
  int token = 0, page = 0, row = 0, feeds = 0;
  bool rows_are_tokens = true;
  host[plan.cu_seqlens] = 0;
  host[plan.page_indptr] = 0;
  host[plan.sliding_page_indptr] = 0;
  const int real = static_cast<int>(batch.sequences.size());
  for (int s = 0; s < plan.num_seqs; ++s) {
    if (s >= real) {  // padding: one token at position 0 of the scratch block
      host[plan.ids + token] = 0;
      host[plan.positions + token] = 0;
      slots[token] = int64_t{num_blocks_} * block_size_;
      if (ring) sliding_slots[token] = int64_t{num_sliding_blocks_} * block_size_;
      rows_are_tokens &= row == token;
      host[plan.rows + row++] = token;
      ++token;
      host[plan.cu_seqlens + s + 1] = token;
      host[plan.kv_lens + s] = 1;
      if (ring) host[plan.sliding_page_indices + page] = num_sliding_blocks_;
      host[plan.page_indices + page++] = num_blocks_;
      host[plan.page_indptr + s + 1] = page;
      host[plan.sliding_page_indptr + s + 1] = page;
      continue;
    }
    const SequenceInput& seq = batch.sequences[static_cast<size_t>(s)];
    const int n = static_cast<int>(seq.tokens.size());
    for (int i = 0; i < n; ++i, ++token) {
      const int position = seq.num_cached + i;
      host[plan.ids + token] = seq.tokens[static_cast<size_t>(i)];
      if (i + 1 == n && seq.pending_from_row >= 0) {  // its id comes from the step in flight, on the device
        host[plan.ids + token] = 0;
        host[plan.feeds + 2 * feeds] = token;
        host[plan.feeds + 2 * feeds + 1] = seq.pending_from_row;
        ++feeds;
      }
      host[plan.positions + token] = position;
      slots[token] =
          int64_t{seq.block_table[static_cast<size_t>(position / block_size_)]} * block_size_ + position % block_size_;
      if (ring) {
        sliding_slots[token] =
            int64_t{seq.sliding_block_table[static_cast<size_t>(position / block_size_)]} * block_size_ +
            position % block_size_;
      }
      if (seq.logits == LogitsWanted::kAll || (seq.logits == LogitsWanted::kLast && i + 1 == n)) {
        rows_are_tokens &= row == token;
        host[plan.rows + row++] = token;
      }
    }
    host[plan.cu_seqlens + s + 1] = token;
    host[plan.kv_lens + s] = seq.num_cached + n;
    const int pages = (seq.num_cached + n + block_size_ - 1) / block_size_;
    for (int p = 0; p < pages; ++p) {
      // Ring entries below the window may be stale ids (still in range: batch_check); never read.
      if (ring) host[plan.sliding_page_indices + page] = seq.sliding_block_table[static_cast<size_t>(p)];
      host[plan.page_indices + page++] = seq.block_table[static_cast<size_t>(p)];
    }
    host[plan.page_indptr + s + 1] = page;
    host[plan.sliding_page_indptr + s + 1] = page;
  }
  plan.rows_are_tokens = rows_are_tokens && row == token && row == plan.num_rows;
  if (plan.max_q > kernels::kDecodeMaxQ) {  // the prefill launch's tiles (cu_seqlens is complete)
    const bool apart = mixed_step_attention_split(plan);
    plan.num_q_tiles_64 =
        kernels::attention_prefill_tiles(host + plan.cu_seqlens, plan.num_seqs, 64, apart, host + plan.q_tiles_64);
    plan.num_q_tiles_128 =
        kernels::attention_prefill_tiles(host + plan.cu_seqlens, plan.num_seqs, 128, apart, host + plan.q_tiles_128);
    plan.num_q_tiles_192 =
        kernels::attention_prefill_tiles(host + plan.cu_seqlens, plan.num_seqs, 192, apart, host + plan.q_tiles_192);
  }
  const size_t used = std::max(page, 1);
  GOSSAMER_CUDA_CHECK(
      cudaMemcpyAsync(device.get(), host, (plan.page_indices + used) * 4, cudaMemcpyHostToDevice, stream_));
  if (ring) {
    GOSSAMER_CUDA_CHECK(cudaMemcpyAsync(device.get<int32_t>() + plan.sliding_page_indices,
                                        host + plan.sliding_page_indices, used * 4, cudaMemcpyHostToDevice, stream_));
  }
  if (feeds > 0) {  // NOTE: before the step's graph or first kernel; the step before drew them into sampling_
    kernels::FeedTokensParams feed;
    feed.ids = device.get<int32_t>() + plan.ids;
    feed.drawn = reinterpret_cast<const int32_t*>(sampling_.get<uint8_t>() + newest_in_flight().layout.at_tokens);
    feed.feeds = device.get<int32_t>() + plan.feeds;
    feed.num_feeds = feeds;
    kernels::launch_feed_tokens(feed, stream_);
  }
}

void CudaModel::check_pending_rows(const ForwardBatch& batch) const {
  for (size_t s = 0; s < batch.sequences.size(); ++s) {
    const int32_t row = batch.sequences[s].pending_from_row;
    if (row < 0) continue;
    GOSSAMER_CHECK(num_in_flight_ == 1 && forward_rows_ < 0 && row < newest_in_flight().layout.num_rows,
                   "cuda backend: sequence ", s, " reads pending row ", row, ", which no sampled step in flight drew");
  }
}

bool CudaModel::grow_shared(DeviceBuffer& buffer, size_t bytes) {
  if (bytes <= buffer.bytes()) return false;
  if (any_in_flight()) synchronize();  // NOTE: the steps in flight may read it (a pending feed: sampling_)
  return grow(buffer, bytes);
}

void CudaModel::prepare_workspace(const StepPlan& plan) {
  const int64_t t = std::max(plan.num_tokens, 1), h = config_.hidden_size, qkv = config_.qkv_width(),
                qw = config_.q_width();
  const int64_t rows = std::max(plan.num_rows, 1);
  const int64_t kmax = round_up(std::max(config_.hidden_size, config_.q_width()), 16);
  const int e = config_.num_experts, inter = config_.intermediate_size;
  size_t moe_bytes = kernels::moe_workspace_bytes(static_cast<int>(t), e, config_.hidden_size, inter);
  if (weights_.format == WeightFormat::kBf16) {
    moe_bytes = kernels::moe_bf16_workspace_bytes(static_cast<int>(t), e, config_.hidden_size, inter);
  } else if (t <= kernels::kGemvMaxRows) {
    moe_bytes =
        std::max(moe_bytes, kernels::moe_decode_workspace_bytes(static_cast<int>(t), config_.hidden_size, inter));
  } else if (reads_mxfp4_experts() && t <= kMxfp4GemvMaxTokens) {  // chunks of 8 tokens
    moe_bytes =
        std::max(moe_bytes, kernels::moe_decode_workspace_bytes(kernels::kGemvMaxRows, config_.hidden_size, inter));
  }
  if (streams_experts(static_cast<int>(t))) {
    moe_bytes =
        std::max(moe_bytes, kernels::moe_stream_workspace_bytes(static_cast<int>(t), e, config_.hidden_size, inter));
  }
  kernels::AttentionParams attention;
  attention.num_seqs = plan.num_seqs;
  attention.num_tokens = plan.num_tokens;
  attention.num_q_heads = config_.num_q_heads;
  attention.num_kv_heads = config_.num_kv_heads;
  attention.max_kv_len = plan.max_kv;
  // Split-KV scratch for decode steps and for the decode sequences of a split mixed step (prefill needs none).
  attention.decode_rows_apart = mixed_step_attention_split(plan);
  size_t decode_bytes = 16;
  for (int window : {0, config_.sliding_window}) {
    if (plan.max_q > kernels::kDecodeMaxQ && !attention.decode_rows_apart) break;
    attention.window = window;
    decode_bytes = std::max(decode_bytes, kernels::attention_decode_workspace_bytes(attention));
  }
  bool moved = false;
  moved |= grow_shared(residual_, t * h * 2);
  moved |= grow_shared(delta_, t * h * 2);
  moved |= grow_shared(normed_, t * h * 2);
  moved |= grow_shared(qkv_, t * qkv * 2);
  moved |= grow_shared(q_, t * qw * 2);
  moved |= grow_shared(attn_out_, t * qw * 2);
  moved |= grow_shared(act_, t * kmax);
  moved |= grow_shared(act_scales_, t * ((kmax + 127) / 128) * 4);
  moved |= grow_shared(router_logits_, t * e * 2);
  moved |= grow_shared(moe_workspace_, moe_bytes);
  if (grow_shared(decode_workspace_, decode_bytes)) {
    kernels::attention_decode_workspace_init(decode_workspace_.get(), decode_workspace_.bytes(), stream_);
    moved = true;
  }
  moved |= grow_shared(final_rows_, rows * h * 2);
  moved |= grow_shared(logits_, static_cast<size_t>(rows) * config_.vocab_size * 2);
  if (vocab_parallel()) {
    const int64_t slot = rows * options_.vocab_shard_rows * 2;
    moved |= grow_shared(vocab_local_, slot);
    moved |= grow_shared(vocab_slots_, slot * options_.comm->world_size());
  }
  if (moved) ++workspace_generation_;
}

void CudaModel::copy_logits_out(int num_rows, std::vector<float>& logits) {
  const size_t count = static_cast<size_t>(num_rows) * config_.vocab_size;
  mark(StepPhase::kOutput);
  grow(host_logits_, count * 2);  // NOTE: only the logits path pins [rows, vocab]: device-sampled steps never do
  if (count > 0) {
    GOSSAMER_CUDA_CHECK(cudaMemcpyAsync(host_logits_.get(), logits_.get(), count * 2, cudaMemcpyDeviceToHost, stream_));
  }
  if (options_.comm != nullptr) options_.comm->synchronize(stream_);  // a dead peer: CommError, not garbage
  if (phase_timer_) phase_timer_->end(stream_);
  GOSSAMER_CUDA_CHECK(cudaStreamSynchronize(stream_));
  GOSSAMER_CUDA_CHECK(cudaGetLastError());
  logits.resize(count);
  const uint16_t* bits = host_logits_.get<uint16_t>();
  parallel_for(static_cast<int64_t>(count), int64_t{1} << 20, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) logits[static_cast<size_t>(i)] = bf16_to_float(bits[i]);
  });
}

bool CudaModel::run_decode_graph(const ForwardBatch& batch) {
  const int n = static_cast<int>(batch.sequences.size());
  if (!options_.cuda_graphs || phase_timer_ || routing_trace_ || n == 0 || n > kMaxGraphBatch) return false;
  for (const SequenceInput& seq : batch.sequences) {
    if (seq.tokens.size() != 1 || seq.logits == LogitsWanted::kNone) return false;
  }
  const int padded = *std::lower_bound(kGraphBatches.begin(), kGraphBatches.end(), n);
  auto found = std::find_if(graphs_.begin(), graphs_.end(), [&](const DecodeGraph& g) { return g.batch == padded; });
  if (found == graphs_.end()) {
    DecodeGraph graph;
    graph.batch = padded;
    const int max_pages = (config_.max_position_embeddings + block_size_ - 1) / block_size_;
    graph.plan = layout_plan(padded, padded, padded * max_pages, padded);
    graph.plan.num_tokens = graph.plan.num_seqs = graph.plan.num_rows = padded;
    graph.plan.max_q = 1;
    graph.plan.max_kv = config_.max_position_embeddings;  // sizes the split-KV grid for any context
    graph.device_plan.ensure(graph.plan.total_words * 4);
    graphs_.push_back(std::move(graph));
    found = graphs_.end() - 1;
  }
  DecodeGraph& graph = *found;
  prepare_workspace(graph.plan);
  fill_and_upload_plan(batch, graph.plan, graph.device_plan);
  const int32_t* device_plan = graph.device_plan.get<int32_t>();
  if (!graph.warmed_up) {
    enqueue_step(graph.plan, device_plan);
    graph.warmed_up = true;
  } else {
    if (graph.exec == nullptr || graph.generation != workspace_generation_) {
      if (graph.exec != nullptr) GOSSAMER_CUDA_CHECK(cudaGraphExecDestroy(graph.exec));
      graph.exec = nullptr;
      cudaGraph_t captured = nullptr;
      GOSSAMER_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
      try {
        enqueue_step(graph.plan, device_plan);
      } catch (...) {
        cudaStreamEndCapture(stream_, &captured);
        if (captured != nullptr) cudaGraphDestroy(captured);
        throw;
      }
      GOSSAMER_CUDA_CHECK(cudaStreamEndCapture(stream_, &captured));
      const cudaError_t status = cudaGraphInstantiate(&graph.exec, captured, 0);
      cudaGraphDestroy(captured);
      GOSSAMER_CHECK(status == cudaSuccess,
                     "cuda backend: decode graph instantiation failed: ", cudaGetErrorString(status));
      graph.generation = workspace_generation_;
      GOSSAMER_LOG_INFO("cuda backend: captured the decode graph for batch ", padded);
    }
    GOSSAMER_CUDA_CHECK(cudaGraphLaunch(graph.exec, stream_));
    ++graph_replays_;
  }
  return true;  // the real sequences' rows come first in logits_
}

void CudaModel::forward(const ForwardBatch& batch, std::vector<float>& logits) {
  bind_device();
  GOSSAMER_CHECK(!any_in_flight() && forward_rows_ < 0, "forward: a step is in flight");
  logits.clear();
  const int rows = enqueue_forward(batch);
  if (vocab_parallel() && rows > 0) gather_vocab_shards(rows);
  copy_logits_out(rows, logits);
}

void CudaModel::forward_sample(const ForwardBatch& batch, std::span<const RowSampling> rows,
                               std::vector<int32_t>& tokens, std::vector<RowLogprobs>& logprobs) {
  bind_device();
  GOSSAMER_CHECK(!any_in_flight() && forward_rows_ < 0, "forward_sample: a step is in flight");
  enqueue_sampled_step(batch, rows);
  collect_sampled_step(slots_[static_cast<size_t>(first_in_flight_)], tokens, logprobs);  // nothing in flight
}

void CudaModel::launch_step(const ForwardBatch& batch, std::optional<std::span<const RowSampling>> rows) {
  bind_device();
  GOSSAMER_CHECK(forward_rows_ < 0 && num_in_flight_ < 2 && (num_in_flight_ == 0 || rows), "launch_step: ",
                 num_in_flight_ > 0 ? "only a sampled step goes on top of one in flight"
                                    : "a forward waits for its sampling rows");
  if (!rows) return Model::launch_step(batch, rows);  // logits: the synchronous default (forward at the wait)
  enqueue_sampled_step(batch, *rows);
  ++num_in_flight_;
}

void CudaModel::wait_step(StepResult& result) {
  bind_device();
  if (num_in_flight_ == 0) return Model::wait_step(result);
  // NOTE: the step is over even when the wait throws (a step on top of it still has to be waited for).
  const int slot = std::exchange(first_in_flight_, (first_in_flight_ + 1) % 2);
  --num_in_flight_;
  collect_sampled_step(slots_[static_cast<size_t>(slot)], result.tokens, result.logprobs);
}

void CudaModel::launch_forward(const ForwardBatch& batch) {
  bind_device();
  GOSSAMER_CHECK(!any_in_flight() && forward_rows_ < 0, "launch_forward: a step is already in flight");
  forward_rows_ = enqueue_forward(batch);
}

void CudaModel::launch_sampling(std::span<const RowSampling> rows) {
  bind_device();
  GOSSAMER_CHECK(forward_rows_ >= 0, "launch_sampling without launch_forward");
  const int n = std::exchange(forward_rows_, -1);
  enqueue_sampling_after_forward(n, rows);
  ++num_in_flight_;
}

void CudaModel::enqueue_sampled_step(const ForwardBatch& batch, std::span<const RowSampling> rows) {
  enqueue_sampling_after_forward(enqueue_forward(batch), rows);
}

void CudaModel::enqueue_sampling_after_forward(int n, std::span<const RowSampling> rows) {
  GOSSAMER_CHECK(static_cast<size_t>(n) == rows.size(), "forward_sample: ", rows.size(), " sampling rows for ", n,
                 " logits rows");
  StepSlot& slot = launching_slot();
  SampledLayout& layout = slot.layout;
  layout.num_rows = n;
  layout.any_logprobs = false;
  layout.num_top.clear();
  if (n > 0) enqueue_sampling(rows);
  // NOTE: also after a step without rows: a later step refills the slot's plan, whose upload must be done by then.
  GOSSAMER_CUDA_CHECK(cudaEventRecord(slot.done, stream_));
}

void CudaModel::enqueue_sampling(std::span<const RowSampling> rows) {
  StepSlot& slot = launching_slot();
  SampledLayout& layout = slot.layout;
  const int n = layout.num_rows;
  bool any_penalties = false, any_logprobs = false;
  size_t num_entries = 0;
  for (const RowSampling& row : rows) {
    GOSSAMER_CHECK(row.penalty_tokens.size() == row.penalty_counts.size(),
                   "forward_sample: penalty tokens and counts differ");
    any_penalties |= !row.penalty_tokens.empty();
    any_logprobs |= row.num_top_logprobs >= 0;
    num_entries += row.penalty_tokens.size();
  }
  // One upload of the settings, one download of the results, in one buffer laid out by `place` (8-aligned):
  // inputs [temperature f32 | top_k i32 | top_p f32 | seed u64 | (penalties) presence, frequency,
  // repetition f32 | offsets i32 n+1 | tokens, counts i32 | scratch rows i32 | (logprobs) num_top i32 | (masks)
  // mask rows i32, masks u32], then outputs
  // [tokens i32 | (logprobs) logprob f32, top tokens i32 n·20, top logprobs f32 n·20].
  size_t bytes = 0;
  const auto place = [&](size_t size) {
    const size_t offset = bytes;
    bytes = (bytes + size + 7) / 8 * 8;
    return offset;
  };
  const size_t rows_n = static_cast<size_t>(n), top_n = rows_n * kernels::kMaxTopLogprobs;
  const size_t at_temperature = place(rows_n * 4), at_top_k = place(rows_n * 4), at_top_p = place(rows_n * 4),
               at_seed = place(rows_n * 8);
  const size_t at_presence = any_penalties ? place(rows_n * 4) : 0,
               at_frequency = any_penalties ? place(rows_n * 4) : 0,
               at_repetition = any_penalties ? place(rows_n * 4) : 0,
               at_offsets = any_penalties ? place((rows_n + 1) * 4) : 0,
               at_entries = any_penalties ? place(num_entries * 4) : 0,
               at_counts = any_penalties ? place(num_entries * 4) : 0,
               at_scratch = any_penalties ? place(rows_n * 4) : 0;
  const size_t at_num_top = any_logprobs ? place(rows_n * 4) : 0;
  // Structured output: [mask index per row i32 | masks u32 [num_masked, words]].
  const size_t words = (static_cast<size_t>(config_.vocab_size) + 31) / 32;
  size_t num_masked = 0;
  for (const RowSampling& row : rows) num_masked += row.token_mask != nullptr;
  const size_t at_mask_rows = num_masked > 0 ? place(rows_n * 4) : 0,
               at_masks = num_masked > 0 ? place(num_masked * words * 4) : 0;
  // Vocab-parallel steps sample on the slices (sample_vocab_slices; token masks applied to each rank's slice,
  // penalties to its f32 slice copies, logprobs from per-row records): [sampled rows i32 | top-k rows i32 |
  // top-p rows i32].
  const bool on_slices = vocab_parallel();
  std::vector<int32_t>& s_rows = slice_rows_.sampled;
  std::vector<int32_t>& k_rows = slice_rows_.top_k;
  std::vector<int32_t>& p_rows = slice_rows_.top_p;
  s_rows.clear();
  k_rows.clear();
  p_rows.clear();
  for (int r = 0; on_slices && r < n; ++r) {
    const RowSampling& row = rows[static_cast<size_t>(r)];
    if (row.temperature <= 0.0f) continue;
    s_rows.push_back(r);
    if (row.top_k > 0 && row.top_k < config_.vocab_size) k_rows.push_back(r);
    if (row.top_p < 1.0f) p_rows.push_back(r);
  }
  const size_t at_s_rows = on_slices ? place(s_rows.size() * 4) : 0,
               at_k_rows = on_slices ? place(k_rows.size() * 4) : 0,
               at_p_rows = on_slices ? place(p_rows.size() * 4) : 0;
  const size_t inputs = bytes;
  const size_t at_tokens = place(rows_n * 4);
  const size_t at_logprob = any_logprobs ? place(rows_n * 4) : 0, at_top_tokens = any_logprobs ? place(top_n * 4) : 0,
               at_top_logprobs = any_logprobs ? place(top_n * 4) : 0;
  grow(slot.sampling, bytes);
  grow_shared(sampling_, bytes);  // NOTE: after this step's pending feed read the step before's tokens from it
  auto* host = slot.sampling.get<uint8_t>();
  int32_t entry = 0, num_penalized = 0;
  for (int r = 0; r < n; ++r) {
    const RowSampling& row = rows[static_cast<size_t>(r)];
    typed<float>(host, at_temperature)[r] = row.temperature;
    typed<int32_t>(host, at_top_k)[r] = row.top_k;
    typed<float>(host, at_top_p)[r] = row.top_p;
    typed<uint64_t>(host, at_seed)[r] = row.seed;
    if (any_penalties) {
      typed<float>(host, at_presence)[r] = row.presence;
      typed<float>(host, at_frequency)[r] = row.frequency;
      typed<float>(host, at_repetition)[r] = row.repetition;
      typed<int32_t>(host, at_offsets)[r] = entry;
      // NOTE: only penalized rows get a scratch row (a full batch of fp32 rows would be ~200 MB); −1: none.
      typed<int32_t>(host, at_scratch)[r] = row.penalty_tokens.empty() ? -1 : num_penalized++;
      for (size_t e = 0; e < row.penalty_tokens.size(); ++e, ++entry) {
        typed<int32_t>(host, at_entries)[entry] = row.penalty_tokens[e];
        typed<int32_t>(host, at_counts)[entry] = row.penalty_counts[e];
      }
    }
    if (any_logprobs) typed<int32_t>(host, at_num_top)[r] = row.num_top_logprobs;
  }
  if (any_penalties) typed<int32_t>(host, at_offsets)[n] = entry;
  std::copy(s_rows.begin(), s_rows.end(), typed<int32_t>(host, at_s_rows));
  std::copy(k_rows.begin(), k_rows.end(), typed<int32_t>(host, at_k_rows));
  std::copy(p_rows.begin(), p_rows.end(), typed<int32_t>(host, at_p_rows));
  auto* device = sampling_.get<uint8_t>();
  mark(StepPhase::kSampling);
  if (num_masked > 0) {
    int32_t next = 0;
    for (int r = 0; r < n; ++r) {
      const uint32_t* mask = rows[static_cast<size_t>(r)].token_mask;
      typed<int32_t>(host, at_mask_rows)[r] = mask != nullptr ? next : -1;
      if (mask != nullptr)
        std::memcpy(typed<uint32_t>(host, at_masks) + static_cast<size_t>(next++) * words, mask, words * 4);
    }
  }
  // [penalized rows, vocab] f32, or [penalized rows, local vocab] f32 on the slices
  const int64_t penalized_cols = on_slices ? weights_.unembedding.n : config_.vocab_size;
  if (num_penalized > 0) grow_shared(penalized_, static_cast<size_t>(num_penalized) * penalized_cols * 4);
  GOSSAMER_CUDA_CHECK(cudaMemcpyAsync(device, host, inputs, cudaMemcpyHostToDevice, stream_));
  // The staged penalty and logprob arrays, into the slices' rows or the single-device params (same field names).
  const auto point_at_penalties_and_logprobs = [&](auto& into) {
    if (any_penalties) {
      into.penalty_offsets = reinterpret_cast<const int32_t*>(device + at_offsets);
      into.penalty_tokens = reinterpret_cast<const int32_t*>(device + at_entries);
      into.penalty_counts = reinterpret_cast<const int32_t*>(device + at_counts);
      into.presence = reinterpret_cast<const float*>(device + at_presence);
      into.frequency = reinterpret_cast<const float*>(device + at_frequency);
      into.repetition = reinterpret_cast<const float*>(device + at_repetition);
    }
    if (any_logprobs) {
      into.num_top = reinterpret_cast<const int32_t*>(device + at_num_top);
      into.out_logprobs = reinterpret_cast<float*>(device + at_logprob);
      into.out_top_tokens = reinterpret_cast<int32_t*>(device + at_top_tokens);
      into.out_top_logprobs = reinterpret_cast<float*>(device + at_top_logprobs);
    }
  };
  if (num_masked > 0) {  // refused tokens are -inf before everything else: on this rank's slice, or whole rows
    kernels::TokenMaskParams mask_params;
    mask_params.logits_bf16 = on_slices ? vocab_local_.get<uint16_t>()  // [n, local vocab] bf16, masked in place
                                        : logits_.get<uint16_t>();      // [n, vocab] bf16, masked in place
    mask_params.masks = reinterpret_cast<const uint32_t*>(device + at_masks);
    mask_params.mask_rows = reinterpret_cast<const int32_t*>(device + at_mask_rows);
    mask_params.num_rows = n;
    mask_params.vocab = on_slices ? static_cast<int32_t>(weights_.unembedding.n) : config_.vocab_size;
    mask_params.vocab_begin = on_slices ? static_cast<int32_t>(vocab_begin()) : 0;
    mask_params.words = static_cast<int32_t>(words);
    kernels::launch_token_mask(mask_params, stream_);
  }
  if (on_slices) {
    VocabSampledRows slices;
    slices.temperature = reinterpret_cast<const float*>(device + at_temperature);
    slices.top_k = reinterpret_cast<const int32_t*>(device + at_top_k);
    slices.top_p = reinterpret_cast<const float*>(device + at_top_p);
    slices.seeds = reinterpret_cast<const uint64_t*>(device + at_seed);
    slices.s_rows = reinterpret_cast<const int32_t*>(device + at_s_rows);
    slices.k_rows = reinterpret_cast<const int32_t*>(device + at_k_rows);
    slices.p_rows = reinterpret_cast<const int32_t*>(device + at_p_rows);
    slices.num_s = s_rows.size();
    slices.num_k = k_rows.size();
    slices.num_p = p_rows.size();
    slices.tokens = reinterpret_cast<int32_t*>(device + at_tokens);
    point_at_penalties_and_logprobs(slices);
    if (any_penalties) {
      slices.penalized_rows = reinterpret_cast<const int32_t*>(device + at_scratch);
      slices.num_penalized = num_penalized;
    }
    sample_vocab_slices(n, slices);
  } else {
    kernels::SamplingParams params;
    params.logits_bf16 = logits_.get<uint16_t>();
    params.out_tokens = reinterpret_cast<int32_t*>(device + at_tokens);
    params.temperature = reinterpret_cast<const float*>(device + at_temperature);
    params.top_k = reinterpret_cast<const int32_t*>(device + at_top_k);
    params.top_p = reinterpret_cast<const float*>(device + at_top_p);
    params.seeds = reinterpret_cast<const uint64_t*>(device + at_seed);
    params.num_rows = n;
    params.vocab = config_.vocab_size;
    point_at_penalties_and_logprobs(params);
    if (any_penalties) {
      params.scratch_rows = reinterpret_cast<const int32_t*>(device + at_scratch);
      params.penalized = penalized_.get<float>();
    }
    kernels::launch_sampling(params, stream_);
  }
  mark(StepPhase::kOutput);
  // The results land in pinned memory: collect_sampled_step reads them once the stream got past this copy.
  GOSSAMER_CUDA_CHECK(
      cudaMemcpyAsync(host + at_tokens, device + at_tokens, bytes - at_tokens, cudaMemcpyDeviceToHost, stream_));
  if (phase_timer_) phase_timer_->end(stream_);
  layout.at_tokens = at_tokens;
  layout.any_logprobs = any_logprobs;
  layout.at_logprob = at_logprob;
  layout.at_top_tokens = at_top_tokens;
  layout.at_top_logprobs = at_top_logprobs;
  if (any_logprobs) {
    for (const RowSampling& row : rows) layout.num_top.push_back(row.num_top_logprobs);
  }
}

void CudaModel::collect_sampled_step(const StepSlot& slot, std::vector<int32_t>& tokens,
                                     std::vector<RowLogprobs>& logprobs) {
  const SampledLayout& layout = slot.layout;
  const int n = layout.num_rows;
  if (options_.comm != nullptr) options_.comm->synchronize(stream_);  // a dead peer: CommError, not garbage
  GOSSAMER_CUDA_CHECK(cudaEventSynchronize(slot.done));
  GOSSAMER_CUDA_CHECK(cudaGetLastError());
  tokens.assign(static_cast<size_t>(n), 0);
  logprobs.assign(static_cast<size_t>(n), {});
  if (n == 0) return;
  auto* host = slot.sampling.get<uint8_t>();
  std::memcpy(tokens.data(), host + layout.at_tokens, static_cast<size_t>(n) * 4);
  for (int r = 0; layout.any_logprobs && r < n; ++r) {
    const int32_t num_top = layout.num_top[static_cast<size_t>(r)];
    if (num_top < 0) continue;
    RowLogprobs& out = logprobs[static_cast<size_t>(r)];
    out.logprob = typed<float>(host, layout.at_logprob)[r];
    const int top = std::min({num_top, kernels::kMaxTopLogprobs, config_.vocab_size});
    for (int j = 0; j < top; ++j) {
      const size_t k = static_cast<size_t>(r) * kernels::kMaxTopLogprobs + static_cast<size_t>(j);
      out.top.emplace_back(typed<int32_t>(host, layout.at_top_tokens)[k],
                           typed<float>(host, layout.at_top_logprobs)[k]);
    }
  }
}

int CudaModel::enqueue_forward(const ForwardBatch& batch) {
  check_forward_batch(config_, num_blocks_, block_size_, batch, num_sliding_blocks_, /*feeds_pending_tokens=*/true);
  check_pending_rows(batch);
  if (run_decode_graph(batch)) return static_cast<int>(batch.sequences.size());
  int tokens = 0, pages = 0, rows = 0, max_q = 0, max_kv = 0, decode_seqs = 0;
  for (const SequenceInput& seq : batch.sequences) {
    const int n = static_cast<int>(seq.tokens.size());
    tokens += n;
    max_q = std::max(max_q, n);
    if (n <= kernels::kDecodeMaxQ) ++decode_seqs;
    max_kv = std::max(max_kv, seq.num_cached + n);
    pages += (seq.num_cached + n + block_size_ - 1) / block_size_;
    rows += seq.logits == LogitsWanted::kAll ? n : (seq.logits == LogitsWanted::kLast && n > 0 ? 1 : 0);
  }
  if (tokens == 0) return 0;
  StepPlan plan =
      layout_plan(tokens, static_cast<int>(batch.sequences.size()), pages, rows, max_q > kernels::kDecodeMaxQ);
  plan.num_tokens = tokens;
  plan.num_seqs = static_cast<int>(batch.sequences.size());
  plan.num_rows = rows;
  plan.max_q = max_q;
  plan.max_kv = max_kv;
  plan.num_decode_seqs = decode_seqs;
  prepare_workspace(plan);
  grow_shared(plan_, plan.total_words * 4);
  fill_and_upload_plan(batch, plan, plan_);
  enqueue_step(plan, plan_.get<int32_t>());
  return rows;
}

}  // namespace gossamer::model::cuda
