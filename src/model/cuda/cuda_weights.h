// gpt-oss weights on the GPU in a serving format:
//  - kMxfp4 (default, --weights mxfp4): attention linears and the unembedding as FP8 e4m3 with 128×128 fp32
//    block scales; the experts stay the checkpoint's MXFP4 (4.25 bits per weight), relaid tile-major
//    (kernels/mxfp4_tiled.h) for the MXFP4 decode GEMVs and the W4A16 / W4A8 grouped GEMMs; the router stays
//    bf16 (2880 × E: a negligible read, and FP8 router logits flip top-4 choices:
//    docs/model-checkpoints-and-backends.md).
//  - kFp8 (--weights fp8): dense linears, router and unembedding as in kMxfp4; the experts converted from MXFP4
//    to the dense linears' FP8 format on the GPU (1.9× kMxfp4's expert memory).
//  - kBf16 (the accuracy baseline): every linear and expert in bf16 (MXFP4 decoded exactly on the host).
// Norms and biases are bf16, sinks fp32, in every format.
//
// Contract: upload() reads host views (a mapped checkpoint or in-memory weights) and returns device
// buffers owned by CudaWeights; host memory may be released afterwards. Progress goes to the log.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/cuda/device_buffer.h"
#include "model/config.h"
#include "model/weights.h"

namespace gossamer::model::cuda {

using ::gossamer::cuda::DeviceBuffer;  // core/cuda/device_buffer.h
using ::gossamer::cuda::PinnedBuffer;

enum class WeightFormat { kFp8, kBf16, kMxfp4 };
// "fp8" | "bf16" | "mxfp4"; throws otherwise
WeightFormat parse_weight_format(const std::string& name);
const char* weight_format_name(WeightFormat format);

// FP8 weights are stored tile-major (kernels/fp8_tiled.h: 64 × 64 tiles of 4 KiB, N and K padded to 64),
// the layout the decode GEMVs stream fastest; bf16 weights are row-major.
struct DeviceLinear {
  DeviceBuffer weight;  // fp8: [pad64(N)/64, pad64(K)/64, 64, 64] e4m3 tile-major; bf16: [N, K] row-major
  DeviceBuffer scales;  // fp8: [ceil(N/128), ceil(K/128)] fp32; bf16: empty
  DeviceBuffer bias;    // [N] bf16, or empty
  // fp8 [N, K] e4m3 row-major: the copy cuBLASLt reads (gemm_fp8_cublaslt.h) for the dense linears the
  // model sends there (CudaOptions::cublaslt_dense); else empty.
  DeviceBuffer row_major;
  int n = 0;
  int k = 0;
  bool fp8 = true;
};

struct DeviceExperts {
  DeviceBuffer weight;         // fp8: [E] × tile-major [rows, cols] (fp8_tiled.h); bf16: [E, rows, cols] row-major;
                               // mxfp4: [E, mxfp4_tiled_group_bytes(rows, cols)] u8 (mxfp4_tiled.h, scales inside)
  DeviceBuffer scales;         // fp8: [E, ceil(rows/128), ceil(cols/128)] fp32; bf16 and mxfp4: empty
  DeviceBuffer bias;           // [E, rows] bf16
  DeviceBuffer row_exponents;  // mxfp4: [E, rows] u8, each row's largest MX exponent (the W4A8 GEMMs'); else empty
  bool fp8 = true;             // fp8 or mxfp4 (false: bf16)
  bool mxfp4 = false;
};

struct CudaLayer {
  DeviceBuffer attn_norm;  // [hidden] bf16
  DeviceLinear qkv;        // [q_width + 2·kv_width, hidden]
  DeviceLinear o;          // [hidden, q_width]
  DeviceBuffer sinks;      // [num_q_heads] fp32
  DeviceBuffer mlp_norm;   // [hidden] bf16
  DeviceLinear router;     // [num_experts, hidden], bf16 in both formats
  DeviceExperts gate_up;   // rows 2·inter (interleaved gate/up), cols hidden
  DeviceExperts down;      // rows hidden, cols inter
};

// mxfp4's row_exponents from its weight ([E] × rows × cols, mxfp4_tiled.h) on the GPU; adds their bytes to `counter`.
void add_row_exponents(DeviceExperts& mxfp4, int64_t num_experts, int64_t rows, int64_t cols, uint64_t& counter);

struct CudaWeights {
  // [embedding_rows, hidden] bf16: the whole vocabulary, or a vocab-parallel rank's rows of it
  // (CudaOptions::vocab_shard_rows; the uploaded view or the random slice decides which).
  DeviceBuffer embedding;
  int64_t embedding_rows = 0;
  DeviceBuffer final_norm;   // [hidden] bf16
  DeviceLinear unembedding;  // [vocab or the rank's vocab rows, hidden], no bias
  std::vector<CudaLayer> layers;
  uint64_t device_bytes = 0;
  WeightFormat format = WeightFormat::kMxfp4;

  static CudaWeights upload(const GptOssConfig& config, const GptOssWeights& host, WeightFormat format);
  // Random weights of the config's shapes made directly in GPU memory (benchmarks: no host copy, seconds
  // for 120b). Deterministic for a seed; the same scales as the host dummy checkpoint (std 1/√fan-in for
  // dense matrices, 3/√hidden and 0.5/√inter for the experts, biases 0.1, norms 1 ± 0.1, sinks in
  // [−2, 4)), but not the same values. FP8 matrices use one block scale of 4·std/448 throughout; FP8 experts
  // are random MXFP4 experts converted (as a checkpoint's are), so every format holds the same expert values.
  // num_local_experts > 0: only that many experts' weights (a rank of an expert-parallel group; the
  // router still scores all config.num_experts).
  // vocab_rows > 0: this rank holds vocabulary rows [vocab_begin, vocab_begin + vocab_rows) (vocab-parallel).
  // Its embedding is exactly those rows of the unsharded random embedding (the same seed, the fill started
  // at row vocab_begin: random_fill.h `first`); its unembedding is vocab_rows rows of its own draw, as every
  // other sliced matrix (q/k/v, o, experts) is drawn at the shard's shape. Each rank makes the same
  // sequence of fills whatever its shapes, so every tensor's seed, hence every replicated tensor (norms,
  // router and its bias), agrees across ranks. 0 = the whole vocabulary.
  static CudaWeights random(const GptOssConfig& config, uint64_t seed, WeightFormat format, int num_local_experts = 0,
                            int64_t vocab_begin = 0, int64_t vocab_rows = 0);
};

}  // namespace gossamer::model::cuda
