// Deterministic random fills made on the GPU: benchmark weights of the real shapes built in GPU memory
// (no host generation, no copy). Element i of a fill depends only on (seed, i):
//   u_j(i) = (splitmix64(seed + 4i + j) >> 40) / 2^24, j = 0..3 (exact in float)
//   normal:  v = a + b · (u_0 + u_1 + u_2 + u_3 − 2) · √3   (Irwin–Hall: mean a, std b, |v − a| < 2√3·b)
//   uniform: v = a + (b − a) · u_0
// then stored as fp32, bf16 (round to nearest even), fp8 e4m3 of v · inv_scale (saturating to ±448, so
// never NaN), or a byte: ⌊v⌋ clamped to 0..255 (uniform over [0, 256): every byte value equally likely, e.g.
// MXFP4 code pairs with zero-mean e2m1 values). Every step is exact or a single IEEE rounding, so the CPU reference
// gives the same bits.
#pragma once

#include <cstdint>

#include "core/cuda/cuda_types.h"  // cudaStream_t, GOSSAMER_HOST_DEVICE

namespace gossamer::kernels {

enum class RandomDist : int { kNormal = 0, kUniform = 1 };
enum class RandomFillType : int { kF32 = 0, kBf16 = 1, kFp8E4M3 = 2, kU8 = 3 };

// ⌊v⌋ clamped to a byte (kU8).
GOSSAMER_HOST_DEVICE inline uint8_t random_fill_byte(float v) {
  return static_cast<uint8_t>(v <= 0.0f ? 0.0f : v >= 255.0f ? 255.0f : v);
}

struct RandomFillParams {
  void* out = nullptr;  // [count] elements of `type`
  int64_t count = 0;
  RandomFillType type = RandomFillType::kBf16;
  RandomDist dist = RandomDist::kNormal;
  float a = 0.0f;          // normal: mean; uniform: low
  float b = 1.0f;          // normal: std;  uniform: high
  float inv_scale = 1.0f;  // fp8 only: the stored code is fp8(v · inv_scale)
  uint64_t seed = 0;
  // out[j] is element first + j of the fill: a slice of a larger fill (the same seed) has its exact bits.
  int64_t first = 0;
};

// Asynchronous on `stream`; graph capturable.
void launch_random_fill(const RandomFillParams& p, cudaStream_t stream);
void random_fill_cpu(const RandomFillParams& p);

// Multiply and add without contraction into an FMA (nvcc contracts by default), so both sides round alike.
GOSSAMER_HOST_DEVICE inline float random_fill_mul(float x, float y) {
#ifdef __CUDA_ARCH__
  return __fmul_rn(x, y);
#else
  return x * y;
#endif
}
GOSSAMER_HOST_DEVICE inline float random_fill_add(float x, float y) {
#ifdef __CUDA_ARCH__
  return __fadd_rn(x, y);
#else
  return x + y;
#endif
}

// The value of element i of the fill before storage (shared by both implementations; out[i − first]).
GOSSAMER_HOST_DEVICE inline float random_fill_value(const RandomFillParams& p, int64_t i) {
  float u[4];
  for (int j = 0; j < 4; ++j) {
    uint64_t z = p.seed + static_cast<uint64_t>(4 * i + j) * 0x9E3779B97F4A7C15ull + 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    u[j] = static_cast<float>(z >> 40) * (1.0f / 16777216.0f);
    if (p.dist == RandomDist::kUniform) break;
  }
  if (p.dist == RandomDist::kUniform) return random_fill_add(p.a, random_fill_mul(p.b - p.a, u[0]));
  const float sum = (u[0] + u[1]) + (u[2] + u[3]);  // exact: multiples of 2^-24 below 4
  return random_fill_add(p.a, random_fill_mul(p.b, random_fill_mul(sum - 2.0f, 1.7320508f)));
}

}  // namespace gossamer::kernels
