// The decode QKV projection with RoPE and the K/V cache write fused into the FP8 GEMV's epilogue:
//
//   launch_gemv_fp8_rope(gemv, rope)  ≡  launch_gemv_fp8(gemv → qkv); launch_rope(rope over qkv)
//
// bit for bit in q_out, k_out, v_out and the cache slots (the same fp32 sums and bf16 rounding, the RoPE
// arithmetic of rope_math.h), except that the unrotated qkv is never written (rope.qkv and gemv.out unused).
// One launch instead of two, and no qkv round trip through memory (issue #15).
//
// How (gemv_fp8_sm90.cu): a 64-row GEMV tile is one head (q heads, then k, then v, as the QKV weight's
// rows), so cluster rank 0 holds all 64 outputs of a head for every token; the RoPE pair (i, i + 32) meets
// through one warp shuffle.
//
// Contract (gemv_fp8_rope_supported): gemv dense (no topk_ids), kBias epilogue, gemv.M = rope.num_tokens
// (1..kGemvMaxRows, x row m is token m at positions[m] / slots[m]), gemv.N = (num_q_heads + 2·num_kv_heads)
// · 64. All rope fields as in rope.h (device memory), q_out non-null, outputs and caches 4-byte aligned.
// PDL and graph capture as gemv_fp8.h (positions, slots and the caches are touched after the wait).
#pragma once

#include "core/cuda/cuda_types.h"  // cudaStream_t
#include "kernels/gemv_fp8.h"
#include "kernels/rope.h"

namespace gossamer::kernels {

// Whether (gemv, rope) is within the contract above (host only; no pointer checks).
inline bool gemv_fp8_rope_supported(const GemvFp8Params& gemv, const RopeParams& rope) {
  return gemv.topk_ids == nullptr && gemv.epilogue == GemmEpilogue::kBias && gemv.M >= 1 && gemv.M <= kGemvMaxRows &&
         gemv.M == rope.num_tokens && rope.num_q_heads >= 1 && rope.num_kv_heads >= 1 &&
         gemv.N == (rope.num_q_heads + 2 * rope.num_kv_heads) * kHeadDim;
}

// Validates the contract and launches (one kernel).
void launch_gemv_fp8_rope(const GemvFp8Params& gemv, const RopeParams& rope, cudaStream_t stream);

// Reference (host memory): gemv_fp8_cpu into a scratch qkv, then rope_cpu over it.
void gemv_fp8_rope_cpu(const GemvFp8Params& gemv, const RopeParams& rope);

}  // namespace gossamer::kernels
