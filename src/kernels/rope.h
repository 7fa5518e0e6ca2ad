// YaRN rotary embedding (NeoX half split) applied to q and k of the fused QKV output, with the K/V
// write into the paged cache fused in (spec §2.3 items 3–4, §2.7: keys are cached after RoPE).
//
// For pair i ∈ [0,32) at position p: c = bf(C·cos(p·ω_i)), s = bf(C·sin(p·ω_i)) (fp32 math, cos/sin
// rounded to bf16 as in the reference tables), x'[i] = bf(a·c − b·s), x'[i+32] = bf(b·c + a·s).
#pragma once

#include <cuda_runtime.h>

#include <array>
#include <cstdint>

namespace gossamer::kernels {

inline constexpr int kHeadDim = 64;
inline constexpr int kNumQHeads = 64;
inline constexpr int kNumKvHeads = 8;

struct YarnConfig {
  double theta = 150000.0;
  double factor = 32.0;
  double original_context = 4096.0;
  double beta_fast = 32.0;
  double beta_slow = 1.0;
};

// ω_i for i ∈ [0,32) computed in fp32 as the reference does (fractional bounds, no truncation).
std::array<float, kHeadDim / 2> yarn_inv_freq(const YarnConfig& config);
// 0.1·ln(factor) + 1 rounded to fp32 (1.3465735912322998 for factor 32).
float yarn_concentration(const YarnConfig& config);

struct RopeParams {
  const uint16_t* qkv = nullptr;  // [num_tokens, qkv_stride] bf16: q (64×64) | k (8×64) | v (8×64)
  int64_t qkv_stride = (kNumQHeads + 2 * kNumKvHeads) * kHeadDim;
  const int32_t* positions = nullptr;  // [num_tokens]
  uint16_t* q_out = nullptr;           // [num_tokens, 64, 64] bf16, rotated
  uint16_t* k_out = nullptr;           // [num_tokens, 8, 64] bf16, rotated, or null
  uint16_t* v_out = nullptr;           // [num_tokens, 8, 64] bf16, or null
  // Paged cache write (both null to skip): cache[slot] is [8, 64] bf16, slot = page·page_size + offset.
  uint16_t* k_cache = nullptr;  // [num_pages·page_size, 8, 64] bf16
  uint16_t* v_cache = nullptr;
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
