// gpt-oss's clamped SwiGLU (spec §2.6), the kSwiGlu epilogue of every GEMM/GEMV here:
//   gate = min(gate, 7), up = clamp(up, ±7), out = gate · σ(1.702 · gate) · (up + 1).
// One device version (fast exp) for the kernels and one host version for their CPU references.
#pragma once

#include <cmath>

namespace gossamer::kernels {

#ifdef __CUDACC__
__device__ __forceinline__ float swiglu_clamped(float gate, float up) {
  gate = fminf(gate, 7.0f);
  up = fminf(fmaxf(up, -7.0f), 7.0f);
  return gate / (1.0f + __expf(-1.702f * gate)) * (up + 1.0f);
}
#endif

inline float swiglu_clamped_cpu(float gate, float up) {
  gate = std::fmin(gate, 7.0f);
  up = std::fmin(std::fmax(up, -7.0f), 7.0f);
  return gate / (1.0f + std::exp(-1.702f * gate)) * (up + 1.0f);
}

}  // namespace gossamer::kernels
