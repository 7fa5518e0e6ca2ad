// Views of every gpt-oss weight, independent of where the bytes live (a mapped checkpoint or buffers
// built in memory) and of the checkpoint's naming.
//
// Dense tensors are bf16, f16 or f32 (the CPU backend converts rows on use). Expert weights stay MXFP4:
// blocks u8 [E, rows, cols/32, 16] (low nibble = even element) and scales u8 (e8m0) [E, rows, cols/32].
#pragma once

#include <vector>

#include "core/tensor.h"

namespace gossamer::model {

struct MxFp4Tensor {
  TensorView blocks;  // [num_experts, rows, cols / 32, 16] u8
  TensorView scales;  // [num_experts, rows, cols / 32] u8 (e8m0, bias 127)
  int64_t num_experts() const { return blocks.shape[0]; }
  int64_t rows() const { return blocks.shape[1]; }
  int64_t cols() const { return blocks.shape[2] * 32; }
};

struct LayerWeights {
  TensorView attn_norm;               // [hidden]
  TensorView q_proj, k_proj, v_proj;  // [q_width, hidden], [kv_width, hidden], [kv_width, hidden]
  TensorView q_bias, k_bias, v_bias;  // [q_width], [kv_width], [kv_width]
  TensorView o_proj;                  // [hidden, q_width]
  TensorView o_bias;                  // [hidden]
  TensorView sinks;                   // [num_q_heads]
  TensorView mlp_norm;                // [hidden]
  TensorView router;                  // [num_experts, hidden]
  TensorView router_bias;             // [num_experts]
  MxFp4Tensor gate_up;                // rows 2·intermediate (interleaved gate/up), cols hidden
  TensorView gate_up_bias;            // [num_experts, 2·intermediate]
  MxFp4Tensor down;                   // rows hidden, cols intermediate
  TensorView down_bias;               // [num_experts, hidden]
};

struct GptOssWeights {
  TensorView embedding;    // [vocab, hidden]
  TensorView final_norm;   // [hidden]
  TensorView unembedding;  // [vocab, hidden]
  std::vector<LayerWeights> layers;
};

}  // namespace gossamer::model
