#include "model/loader.h"

#include <algorithm>
#include <initializer_list>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "core/error.h"
#include "model/checkpoint.h"
#include "model/cpu_model.h"
#include "model/cpu_sharded_model.h"
#include "model/dummy_checkpoint.h"
#include "model/shard_weights.h"
#ifdef GOSSAMER_HAVE_CUDA
#include <cuda_runtime.h>

#include "comm/cuda/cuda_communicator.h"
#include "core/cuda/current_device.h"
#include "model/cuda/cuda_model.h"
#endif

namespace gossamer::model {

std::string resolve_device(const std::string& device) {
  if (device != "auto") return device;
#ifdef GOSSAMER_HAVE_CUDA
  int count = 0;
  if (cudaGetDeviceCount(&count) == cudaSuccess && count > 0) return "cuda";
#endif
  return "cpu";
}

int visible_gpu_count() {
#ifdef GOSSAMER_HAVE_CUDA
  int count = 0;
  if (cudaGetDeviceCount(&count) == cudaSuccess) return count;
#endif
  return 0;
}

int32_t gpu_of(const ModelOptions& options) {
  return options.colocate_on_gpu0 ? 0 : options.replica * options.layout.tensor_parallel + options.rank;
}

#ifdef GOSSAMER_HAVE_CUDA
namespace {
// Bytes held by limit_gpu_memory per GPU (never freed: the process's smaller GPUs).
std::mutex g_reserved_mutex;
std::map<int, int64_t> g_reserved_bytes;

int64_t reserved_bytes(int device) {
  const std::lock_guard lock(g_reserved_mutex);
  const auto found = g_reserved_bytes.find(device);
  return found == g_reserved_bytes.end() ? 0 : found->second;
}
}  // namespace
#endif

void limit_gpu_memory(int64_t limit_bytes, int device) {
  if (limit_bytes <= 0) return;
#ifdef GOSSAMER_HAVE_CUDA
  const std::lock_guard lock(g_reserved_mutex);
  if (g_reserved_bytes.count(device) > 0) return;  // this GPU is limited already (replicas sharing it)
  gossamer::cuda::use_device(device);
  size_t free_bytes = 0, total_bytes = 0;
  GOSSAMER_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess, "GPU memory limit: GPU ", device,
                 " is not usable");
  const auto limit = static_cast<size_t>(limit_bytes);
  GOSSAMER_CHECK(limit <= total_bytes, "GPU memory limit ", limit_bytes / double(1 << 30), " GiB exceeds GPU ", device,
                 "'s ", total_bytes / double(1 << 30), " GiB");
  const size_t reserve = total_bytes - limit;
  GOSSAMER_CHECK(reserve <= free_bytes, "GPU memory limit: ", (total_bytes - free_bytes) / double(1 << 30),
                 " GiB of GPU ", device, " are already in use, more than the limit allows");
  if (reserve > 0) {
    void* ballast = nullptr;
    GOSSAMER_CHECK(cudaMalloc(&ballast, reserve) == cudaSuccess, "GPU memory limit: cannot reserve ",
                   reserve / double(1 << 30), " GiB of GPU ", device);
  }
  g_reserved_bytes[device] = static_cast<int64_t>(reserve);
#else
  (void)device;
  GOSSAMER_THROW("a GPU memory limit needs the cuda backend (this gossamer was built without CUDA)");
#endif
}

int64_t gpu_kv_cache_budget_bytes(double utilization, int device, int64_t headroom_bytes) {
#ifdef GOSSAMER_HAVE_CUDA
  size_t free_bytes = 0, total_bytes = 0;
  if (cudaSetDevice(device) != cudaSuccess || cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) return 0;
  // With a limit the reserved rest is neither capacity nor use.
  const double reserved = static_cast<double>(reserved_bytes(device));
  const double capacity = static_cast<double>(total_bytes) - reserved;
  const double allowed = utilization * capacity;
  const double used = static_cast<double>(total_bytes - free_bytes) - reserved;
  return std::max<int64_t>(0, static_cast<int64_t>(allowed - used) - headroom_bytes);
#else
  (void)utilization;
  (void)device;
  (void)headroom_bytes;
  return 0;
#endif
}

#ifdef GOSSAMER_HAVE_CUDA
namespace {
// The value of a string option among its choices (in order), or a clear error naming them all:
// "--flag must be a, b or c, got 'x'".
template <typename T>
T choose(const char* flag, const std::string& value, std::initializer_list<std::pair<const char*, T>> choices) {
  std::string names;
  size_t i = 0;
  for (const auto& [name, choice] : choices) {
    if (value == name) return choice;
    names += (i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ") + std::string(name);
    ++i;
  }
  GOSSAMER_CHECK(false, flag, " must be ", names, ", got '", value, "'");
  return choices.begin()->second;
}

cuda::CudaOptions cuda_options(const ModelOptions& options) {
  cuda::CudaOptions out;
  out.device = gpu_of(options);
  out.weights = cuda::parse_weight_format(options.weights);
  out.cuda_graphs = options.cuda_graphs;
  out.cublaslt_dense = choose<bool>("--dense-gemm", options.dense_gemm, {{"cublaslt", true}, {"gossamer", false}});
  out.prefill_kernel = choose<kernels::PrefillKernel>("--prefill-attention", options.prefill_attention,
                                                      {{"auto", kernels::PrefillKernel::kAuto},
                                                       {"mma", kernels::PrefillKernel::kMmaSync},
                                                       {"wgmma", kernels::PrefillKernel::kWgmma}});
  GOSSAMER_CHECK(options.prefill_attention_warpgroups == 0 || options.prefill_attention_warpgroups == 2 ||
                     options.prefill_attention_warpgroups == 3,
                 "--prefill-attention-warpgroups must be 0 (auto), 2 or 3, got ", options.prefill_attention_warpgroups);
  out.prefill_attention_warpgroups = options.prefill_attention_warpgroups;
  out.prefill_attention_fixed_max = options.prefill_attention_fixed_max;
  out.moe_decode = choose<cuda::MoeDecodePath>("--moe-decode", options.moe_decode,
                                               {{"auto", cuda::MoeDecodePath::kAuto},
                                                {"gemv", cuda::MoeDecodePath::kGemv},
                                                {"stream", cuda::MoeDecodePath::kStream},
                                                {"gemm", cuda::MoeDecodePath::kGemm}});
  out.kv_cache_fp8 = kv_cache_dtype_is_fp8(options.kv_cache_dtype);
  out.split_mixed_attention = options.split_mixed_attention;
  out.moe_gemv_shape = choose<kernels::GemvMxfp4Shape>("--moe-gemv-shape", options.moe_gemv_shape,
                                                       {{"rule", kernels::GemvMxfp4Shape::kRule},
                                                        {"warps4", kernels::GemvMxfp4Shape::kWarps4},
                                                        {"warps4-stages4", kernels::GemvMxfp4Shape::kWarps4Stages4}});
  GOSSAMER_CHECK(options.decode_attention_min_tiles_per_split >= 1,
                 "--decode-attention-min-tiles-per-split must be ≥ 1, got ",
                 options.decode_attention_min_tiles_per_split);
  out.decode_attention_min_tiles_per_split = options.decode_attention_min_tiles_per_split;
  out.decode_attention_prefetch_kv = options.decode_attention_prefetch_kv;
  out.decode_qkv_rope = options.decode_qkv_rope;
  out.prefill_norm_fp8 = options.prefill_norm_fp8;
  out.prefill_moe_combine_deferred = options.prefill_moe_combine_deferred;
  out.moe_gemv_single_row = options.moe_gemv_single_row;
  out.moe_gemv_x_shared = options.moe_gemv_x_shared;
  out.moe_quantize_tokens_once = options.moe_quantize_tokens_once;
  out.moe_mxfp4_w4a8 = options.moe_mxfp4_w4a8;
  GOSSAMER_CHECK(options.moe_w4a16_narrow_max_rows >= -1, "--moe-w4a16-narrow-max-rows must be ≥ 0, not ",
                 options.moe_w4a16_narrow_max_rows);
  if (options.moe_w4a16_narrow_max_rows >= 0) out.moe_w4a16_narrow_max_rows = options.moe_w4a16_narrow_max_rows;
  out.moe_gemm_tile = choose<kernels::GemmTile>("--moe-gemm-tile", options.moe_gemm_tile,
                                                {{"auto", kernels::GemmTile::kAuto},
                                                 {"128x192tma2", kernels::GemmTile::k128x192tma2},
                                                 {"128x256tma2", kernels::GemmTile::k128x256tma2},
                                                 {"128x256tma2b", kernels::GemmTile::k128x256tma2b}});
  return out;
}
}  // namespace
#endif

namespace {

// The cpu backend over `weights`: one CpuModel, or the layout's simulated ranks.
std::unique_ptr<Model> make_cpu_model(const GptOssConfig& config, GptOssWeights weights,
                                      std::shared_ptr<const void> storage, const ModelOptions& options) {
  validate_layout(options.layout, config, -1);
  const bool kv_fp8 = kv_cache_dtype_is_fp8(options.kv_cache_dtype);
  if (!options.layout.sharded()) {
    auto model = std::make_unique<CpuModel>(config, std::move(weights), std::move(storage));
    CpuNumerics numerics;
    numerics.fp8_kv_cache = kv_fp8;
    model->set_numerics(numerics);
    return model;
  }
  GOSSAMER_CHECK(!kv_fp8, "--kv-cache-dtype ", options.kv_cache_dtype,
                 " on the cpu backend needs one rank (TP1 EP1; its ", options.layout.describe(),
                 " ranks keep a float32 cache): drop -tp/-ep or use --device cuda");
  ParallelLayout replica = options.layout;
  replica.data_parallel = 1;
  return std::make_unique<CpuShardedModel>(config, std::move(weights), std::move(storage), replica);
}

#ifdef GOSSAMER_HAVE_CUDA
// The communicator of this process's rank (on GPU gpu_of(options), which becomes the current device).
std::shared_ptr<comm::Communicator> connect_rank(const ModelOptions& options) {
  GOSSAMER_CHECK(options.dist_port > 0, "cuda ", options.layout.describe(), ": rank ", options.rank,
                 " needs the group's bootstrap port (started by the command's rank launcher)");
  comm::CudaCommOptions comm;
  comm.bootstrap.host = options.dist_host;
  comm.bootstrap.port = options.dist_port;
  comm.bootstrap.rank = options.rank;
  comm.bootstrap.world_size = options.layout.tensor_parallel;
  comm.device = gpu_of(options);
  if (options.colocate_on_gpu0) {
    comm.use_nccl = false;  // NCCL refuses two ranks on one GPU: every sum takes the IPC path
    // Every sum then fits one IPC message: a step's [tokens, hidden] bf16 rows (23,301 tokens of 20b's 2,880
    // per 128 MiB), and forward()'s vocab-parallel logits as zero-padded slots (rows × V × 2 bytes: ~330 rows
    // of 201,088). Each rank holds 2 × this in device memory.
    comm.ipc_max_bytes = int64_t{128} << 20;
  }
  return std::make_shared<comm::CudaCommunicator>(comm);
}

// GPUs the loader checks the layout against (-1 = any: colocated ranks share GPU 0).
int gpus_for_layout(const ModelOptions& options) {
  return options.colocate_on_gpu0 ? -1 : visible_gpu_count();
}

// The cuda backend runs one rank per process (docs/scaling.md): this process holds rank options.rank's
// shard on GPU gpu_of(options) and reduces through a CudaCommunicator (NCCL + the IPC all-reduce).
std::unique_ptr<Model> make_cuda_rank(const GptOssConfig& config, const GptOssWeights& weights,
                                      std::shared_ptr<const void> storage, const ModelOptions& options) {
  validate_layout(options.layout, config, gpus_for_layout(options));
  cuda::CudaOptions cuda = cuda_options(options);
  if (!options.layout.sharded()) return std::make_unique<cuda::CudaModel>(config, weights, cuda);
  ParallelLayout replica = options.layout;
  replica.data_parallel = 1;
  const RankWeights shard = shard_weights(config, weights, std::move(storage), replica, options.rank);
  cuda.comm = connect_rank(options);
  cuda.expert_begin = static_cast<int>(shard.shard.experts.begin);
  cuda.num_local_experts = static_cast<int>(shard.shard.experts.size());
  cuda.vocab_shard_rows = vocab_shard_rows(replica, config);
  cuda.vocab_rows = shard.shard.vocab.size();
  return std::make_unique<cuda::CudaModel>(shard.config, shard.weights, cuda);
}

// `--load-format dummy` on a rank: random weights of the rank's shapes made on its GPU. Every rank draws
// the same stream, so the replicated tensors (norms, router) agree across ranks, and its embedding rows are
// the unsharded dummy embedding's (CudaWeights::random).
std::unique_ptr<Model> make_cuda_dummy_rank(const GptOssConfig& config, uint64_t seed, const ModelOptions& options) {
  validate_layout(options.layout, config, gpus_for_layout(options));
  cuda::CudaOptions cuda = cuda_options(options);
  if (!options.layout.sharded()) return std::make_unique<cuda::CudaModel>(config, cuda::RandomWeights{seed}, cuda);
  ParallelLayout replica = options.layout;
  replica.data_parallel = 1;
  const RankShard shard = shard_for(replica, config, options.rank);
  cuda.comm = connect_rank(options);
  cuda.expert_begin = static_cast<int>(shard.experts.begin);
  cuda.num_local_experts = static_cast<int>(shard.experts.size());
  cuda.vocab_shard_rows = vocab_shard_rows(replica, config);
  cuda.vocab_rows = shard.vocab.size();
  return std::make_unique<cuda::CudaModel>(shard_config(config, shard), cuda::RandomWeights{seed}, cuda);
}
#endif

}  // namespace

bool kv_cache_dtype_is_fp8(const std::string& kv_cache_dtype) {
  GOSSAMER_CHECK(kv_cache_dtype != "fp8_e5m2",
                 "--kv-cache-dtype fp8_e5m2 is not supported: gossamer's FP8 KV cache is e4m3 (use fp8 or fp8_e4m3)");
  GOSSAMER_CHECK(kv_cache_dtype == "auto" || kv_cache_dtype == "fp8" || kv_cache_dtype == "fp8_e4m3",
                 "--kv-cache-dtype must be auto, fp8 or fp8_e4m3, got '", kv_cache_dtype, "'");
  return kv_cache_dtype != "auto";
}

std::unique_ptr<Model> load_model(const std::string& dir, const std::string& device, const ModelOptions& options) {
  GOSSAMER_CHECK(options.weights == "fp8" || options.weights == "bf16" || options.weights == "mxfp4",
                 "unknown weight format '", options.weights, "' (expected fp8, bf16 or mxfp4)");
  if (device == "cpu") {
    std::shared_ptr<Checkpoint> checkpoint = Checkpoint::open(dir);
    const GptOssConfig config = checkpoint->config();
    GptOssWeights weights = checkpoint->weights();
    return make_cpu_model(config, std::move(weights), std::move(checkpoint), options);
  }
  GOSSAMER_CHECK(device == "cuda", "unknown device '", device, "' (expected cpu or cuda)");
#ifdef GOSSAMER_HAVE_CUDA
  std::shared_ptr<Checkpoint> checkpoint = Checkpoint::open(dir);
  const GptOssConfig config = checkpoint->config();
  const GptOssWeights weights = checkpoint->weights();
  return make_cuda_rank(config, weights, std::move(checkpoint), options);
#else
  (void)options;
  GOSSAMER_THROW("this gossamer was built without CUDA (nvcc not found at build time); use --device cpu");
#endif
}

std::unique_ptr<Model> load_dummy_model(const std::string& preset, uint64_t seed, const std::string& device,
                                        const ModelOptions& options) {
  const GptOssConfig config = preset_config(preset);
  if (device == "cpu") {
    GptOssConfig hf = config;  // the dummy's tensors carry the Hugging Face layout's names
    hf.layout = CheckpointLayout::kHuggingFace;
    DummyWeights dummy = make_dummy_weights(hf, seed);
    return make_cpu_model(hf, std::move(dummy.weights), std::move(dummy.storage), options);
  }
  GOSSAMER_CHECK(device == "cuda", "unknown device '", device, "' (expected cpu or cuda)");
#ifdef GOSSAMER_HAVE_CUDA
  // Made directly in GPU memory (seconds even for 120b); not the host dummy's values.
  return make_cuda_dummy_rank(config, seed, options);
#else
  (void)options;
  GOSSAMER_THROW("this gossamer was built without CUDA (nvcc not found at build time); use --device cpu");
#endif
}

}  // namespace gossamer::model
