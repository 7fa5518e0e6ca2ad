// The FP8 e4m3 KV cache's number format (--kv-cache-dtype fp8; docs/kv-cache-fp8.md): the one rule that
// the KV write (rope.h, on the GPU and in rope_cpu), the attention reference (attention_cpu) and the CPU
// model's cache emulation share.
//
// A bf16 (or fp32) K or V element x of KV head h is stored as code = e4m3_rn_satfinite(x / scale[h]) (fp32
// division, IEEE rounding; then round to nearest, ties to even, to e4m3 "fn"). Magnitudes beyond 448 and
// ±inf saturate to ±448 (never NaN; only a NaN input gives the NaN code 0x7F). It is read back as
// fp8e4m3_to_float(code) · scale[h], exactly. The cuda conversion (cvt.rn.satfinite.e4m3x2.f32 after
// __fdiv_rn) gives the same bits.
//
// Scales are static per (layer, KV head), independent of requests: 1.0 (vLLM's default without
// checkpoint scales; kKvFp8DefaultScale).
#pragma once

#include <cstdint>

#include "core/dtype.h"

namespace gossamer::kernels {

inline constexpr float kKvFp8DefaultScale = 1.0f;

inline uint8_t kv_fp8_quantize(float x, float scale) {
  return float_to_fp8e4m3(x / scale);
}
inline float kv_fp8_dequantize(uint8_t code, float scale) {
  return fp8e4m3_to_float(code) * scale;
}
// x rounded through the cache: kv_fp8_dequantize(kv_fp8_quantize(x, scale), scale).
inline float kv_fp8_round_trip(float x, float scale) {
  return kv_fp8_dequantize(kv_fp8_quantize(x, scale), scale);
}

// rows [num_rows, num_kv_heads, head_dim] bf16 → codes [num_rows, num_kv_heads, head_dim] e4m3, scale per
// KV head (scales: [num_kv_heads] fp32, null = 1).
void kv_fp8_quantize_rows_cpu(const uint16_t* rows, int64_t num_rows, int num_kv_heads, int head_dim,
                              const float* scales, uint8_t* codes);

}  // namespace gossamer::kernels
