// gpt-oss weights on the GPU in the serving format: dense linears as FP8 e4m3 with 128×128 fp32 block
// scales, experts converted from MXFP4 to the same format on the GPU, norms/biases bf16, sinks fp32.
//
// Contract: upload() reads host views (a mapped checkpoint or in-memory weights) and returns device
// buffers owned by CudaWeights; host memory may be released afterwards. Progress goes to the log.
#pragma once

#include <cstdint>
#include <vector>

#include "model/config.h"
#include "model/cuda/device_buffer.h"
#include "model/weights.h"

namespace gossamer::model::cuda {

struct Fp8Linear {
  DeviceBuffer weight;  // [N, K] fp8 e4m3 (K contiguous)
  DeviceBuffer scales;  // [ceil(N/128), ceil(K/128)] fp32
  DeviceBuffer bias;    // [N] bf16, or empty
  int n = 0;
  int k = 0;
};

struct Fp8Experts {
  DeviceBuffer weight;  // [E, rows, cols] fp8
  DeviceBuffer scales;  // [E, ceil(rows/128), ceil(cols/128)] fp32
  DeviceBuffer bias;    // [E, rows] bf16
};

struct CudaLayer {
  DeviceBuffer attn_norm;  // [hidden] bf16
  Fp8Linear qkv;           // [q_width + 2·kv_width, hidden]
  Fp8Linear o;             // [hidden, q_width]
  DeviceBuffer sinks;      // [num_q_heads] fp32
  DeviceBuffer mlp_norm;   // [hidden] bf16
  Fp8Linear router;        // [num_experts, hidden]
  Fp8Experts gate_up;      // rows 2·inter (interleaved gate/up), cols hidden
  Fp8Experts down;         // rows hidden, cols inter
};

struct CudaWeights {
  DeviceBuffer embedding;   // [vocab, hidden] bf16
  DeviceBuffer final_norm;  // [hidden] bf16
  Fp8Linear unembedding;    // [vocab, hidden], no bias
  std::vector<CudaLayer> layers;
  uint64_t device_bytes = 0;

  static CudaWeights upload(const GptOssConfig& config, const GptOssWeights& host);
};

}  // namespace gossamer::model::cuda
