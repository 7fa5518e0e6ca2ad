// YaRN rotary embedding (NeoX half split) applied to q and k of the fused QKV output, with the K/V
// write into the paged cache fused in (keys are cached after RoPE, as in src/model/cpu_model.cpp).
//
// For pair i ∈ [0,32) at position p: c = bf(C·cos(p·ω_i)), s = bf(C·sin(p·ω_i)) (fp32 math, cos/sin
// rounded to bf16 as in the reference tables), x'[i] = bf(a·c − b·s), x'[i+32] = bf(b·c + a·s).
// With kv_fp8 the cache write stores the rotated bf16 k and the bf16 v as e4m3 codes under the per-KV-head
// scales (kv_cache_fp8.h: RNE(x / scale), saturated to ±448); q_out, k_out and v_out stay bf16.
// The per-pair arithmetic lives in rope_math.h, shared by rope_kernel and rope_cpu.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "core/cuda/cuda_types.h"  // cudaStream_t, GOSSAMER_HOST_DEVICE

namespace gossamer::kernels {

inline constexpr int kHeadDim = 64;
inline constexpr int kNumQHeads = 64;
inline constexpr int kNumKvHeads = 8;

// The rotary parameters of a checkpoint (GptOssConfig's rope_* fields); the defaults are gpt-oss's.
// YaRN applies when factor > 1 and original_context > 0, otherwise plain RoPE (ω_i = θ^(−2i/d), C = 1).
struct RopeScaling {
  double theta = 150000.0;
  double factor = 32.0;
  int original_context = 4096;
  double beta_fast = 32.0;
  double beta_slow = 1.0;
  bool truncate = false;  // round the correction range to integers (transformers' `truncate`)
};

// ω_i for i ∈ [0, head_dim/2) as transformers' `_compute_yarn_parameters` computes them (fp32 pow and
// ramp, fractional correction range unless `truncate`): the one table of the CPU and cuda backends.
std::vector<float> rope_inv_freq(const RopeScaling& scaling, int head_dim);
// C = 0.1·ln(factor) + 1 rounded to fp32 under YaRN (1.3465735912322998 for factor 32), else 1.
float rope_concentration(const RopeScaling& scaling);

struct RopeParams {
  const uint16_t* qkv = nullptr;  // [num_tokens, qkv_stride] bf16: q (64×64) | k (8×64) | v (8×64)
  int64_t qkv_stride = (kNumQHeads + 2 * kNumKvHeads) * kHeadDim;
  const int32_t* positions = nullptr;  // [num_tokens]
  uint16_t* q_out = nullptr;           // [num_tokens, 64, 64] bf16, rotated
  uint16_t* k_out = nullptr;           // [num_tokens, 8, 64] bf16, rotated, or null
  uint16_t* v_out = nullptr;           // [num_tokens, 8, 64] bf16, or null
  // Paged cache write (both null to skip): cache[slot] is [8, 64] bf16, slot = page·page_size + offset.
  void* k_cache = nullptr;  // [num_pages·page_size, 8, 64] bf16, or e4m3 bytes when kv_fp8
  void* v_cache = nullptr;
  bool kv_fp8 = false;
  const float* k_scale = nullptr;  // [num_kv_heads] fp32 (kv_fp8 only; device memory on cuda); null = 1
  const float* v_scale = nullptr;
  const int64_t* slots = nullptr;  // [num_tokens]; a negative slot skips the write (padding)
  int num_tokens = 0;
  int num_q_heads = kNumQHeads;  // per rank (TP shards heads); k/v heads likewise
  int num_kv_heads = kNumKvHeads;
  std::array<float, kHeadDim / 2> inv_freq{};
  float concentration = 1.0f;
};

void launch_rope(const RopeParams& p, cudaStream_t stream);
void rope_cpu(const RopeParams& p);

}  // namespace gossamer::kernels
