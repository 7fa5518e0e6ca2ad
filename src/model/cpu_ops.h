// The CPU backend's glue between checkpoint tensors and the float32 references: dtype conversion, the
// dense matmul over TensorViews, MXFP4 decoding and the cuda path's FP8 quantization points. The ops
// themselves (RMSNorm, router top-k, SwiGLU, RoPE tables, FP8 rounding rules) are the kernels' CPU
// references (src/kernels/*_cpu.cpp, library gossamer_kernels_ref), shared with the kernel tests.
//
// All activations are row-major float32. Weights are TensorViews of bf16/f16/f32 (converted per row on
// use) or MXFP4 (decoded per expert on use), so a checkpoint is never expanded in RAM.
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "model/weights.h"

namespace gossamer::model::cpu {

// Converts row `row` of a dense 2-D view ([rows, cols]) — or a whole 1-D view when row == 0 — to f32.
void load_row(const TensorView& tensor, int64_t row, float* out);
std::vector<float> to_f32(const TensorView& tensor);  // whole tensor, any dense dtype

// out[t, n] = bias[n] + Σ_k x[t, k] · W[n, k].   x: [T, K] f32; W: [N, K] dense; bias: [N] or null; out: [T, N]
void matmul_bias(const float* x, int64_t num_rows, const TensorView& weight, const float* bias, float* out);
// Same with an f32 weight already in memory ([N, K] row-major).
void matmul_bias_f32(const float* x, int64_t num_rows, const float* weight, int64_t n, int64_t k, const float* bias,
                     float* out);

// The cuda backend's FP8 quantization points, emulated in float (the CPU model's fp8 numerics mode):
// activations are rounded to bf16, then per row and per 1×128 column group q = fp8(x / s) with
// s = max(amax, 1e-4) / 448, and replaced by q · s (kernels::quantize_fp8_group_cpu).   x: [rows, k] f32, in place.
void fake_quantize_fp8_activations(float* x, int64_t num_rows, int64_t k);
// Weights → FP8 e4m3 with one scale per 128×128 block (kernels::quantize_fp8_weight_block_cpu, the cuda
// backend's load-time conversion), returned dequantized (w ≈ q · s).   w: [n, k] f32 → [n, k] f32.
std::vector<float> fake_quantize_fp8_blocks(const float* w, int64_t n, int64_t k);
// Rounds every element to bf16 and back (the cuda backend stores activations in bf16).
void round_to_bf16(float* x, int64_t count);

// Decodes expert `expert` of an MXFP4 tensor to f32: out [rows, cols] (element 32g+2j = low nibble of byte j).
void decode_mxfp4_expert(const MxFp4Tensor& tensor, int64_t expert, float* out);

}  // namespace gossamer::model::cpu
