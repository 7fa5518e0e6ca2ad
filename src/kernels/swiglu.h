// gpt-oss's clamped SwiGLU, the kSwiGlu epilogue of every GEMM/GEMV here:
//   gate = min(gate, limit), up = clamp(up, ±limit), out = gate · σ(alpha · gate) · (up + 1).
//
// The CUDA epilogues are compiled for the published constants (limit 7, alpha 1.702: kSwigluLimit,
// kSwigluAlpha); the cuda backend refuses a checkpoint with other values at load (model/cuda/cuda_model.cpp).
// The host version takes both from the model config (GptOssConfig::swiglu_limit, swiglu_alpha) and is the
// one formula of the CPU backend and of the kernels' CPU references.
#pragma once

#include <cmath>
#include <cstdint>

#include "core/dtype.h"
#include "kernels/gemm_fp8.h"  // GemmEpilogue

namespace gossamer::kernels {

inline constexpr float kSwigluLimit = 7.0f;
inline constexpr float kSwigluAlpha = 1.702f;

#ifdef __CUDACC__
// σ's exponential is one ex2.approx.ftz of gate · (−alpha · log2 e) (no range fix-ups: the exponent's
// subnormal results flush to 0 and its overflow to +inf, both exact enough for 1 + e) and the division is
// __fdividef (a reciprocal and a multiply, within 2 ulp; 0 where the denominator passes 2^126, i.e.
// gate < -51, where the exact quotient is below 1e-36). The IEEE division's range check and slow path and
// __expf's fix-ups were a third of the MoE gate_up GEMM's epilogue instructions (docs/PERF.md, fifteenth
// session). The CPU formula below divides exactly: the two differ by a few fp32 ulp before bf16 rounding.
__device__ __forceinline__ float swiglu_clamped(float gate, float up) {
  constexpr float kMinusAlphaLog2e = -kSwigluAlpha * 1.44269504088896341f;
  gate = fminf(gate, kSwigluLimit);
  up = fminf(fmaxf(up, -kSwigluLimit), kSwigluLimit);
  float e;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(e) : "f"(gate * kMinusAlphaLog2e));
  return __fdividef(gate, 1.0f + e) * (up + 1.0f);
}
#endif

inline float swiglu_clamped_cpu(float gate, float up, float limit = kSwigluLimit, float alpha = kSwigluAlpha) {
  gate = std::fmin(gate, limit);
  up = std::fmin(std::fmax(up, -limit), limit);
  return gate / (1.0f + std::exp(-alpha * gate)) * (up + 1.0f);
}

// The references' epilogue of one output row: kBias rounds acc[0, n) to bf16 into out[0, n); kSwiGlu
// writes out[j] = bf(swiglu(acc[2j], acc[2j + 1])) for j < n/2.   acc: [n] f32 (bias included) → out bf16
inline void gemm_epilogue_cpu(const float* acc, int n, GemmEpilogue epilogue, uint16_t* out) {
  if (epilogue == GemmEpilogue::kSwiGlu) {
    for (int c = 0; c < n; c += 2) out[c / 2] = float_to_bf16(swiglu_clamped_cpu(acc[c], acc[c + 1]));
  } else {
    for (int c = 0; c < n; ++c) out[c] = float_to_bf16(acc[c]);
  }
}

}  // namespace gossamer::kernels
