// Shared helpers for the GPU kernel tests: GPU presence check, device arrays with NaN poisoning,
// random inputs, and the relative-error metric ‖out − ref‖ / ‖ref‖ with per-dtype tolerances.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/cuda/device_buffer.h"
#include "kernels/fp8_tiled.h"

namespace gossamer::kernels::test {

// Tolerances on ‖out − ref‖/‖ref‖, per output dtype and path.
inline constexpr double kTolBf16 = 1e-2;         // bf16 output of fp32 math (one rounding, different order)
inline constexpr double kTolBf16Requant = 3e-2;  // pipelines that re-quantize an intermediate to fp8

inline bool has_gpu(std::string* why) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    *why = std::string("no usable CUDA device (") + cudaGetErrorString(e) + ")";
    return false;
  }
  if (n == 0) {
    *why = "no CUDA device";
    return false;
  }
  return true;
}

#define GOSSAMER_REQUIRE_GPU()                                   \
  do {                                                           \
    std::string why_;                                            \
    if (!::gossamer::kernels::test::has_gpu(&why_)) {            \
      GTEST_SKIP() << "SKIPPED (needs a GPU): " << why_;         \
    }                                                            \
  } while (0)

// Typed device arrays with host copies and NaN poisoning (core/cuda/device_buffer.h).
template <typename T>
using DeviceBuffer = ::gossamer::cuda::DeviceArray<T>;

// [groups, n, k] row-major fp8 → the tile-major layout of kernels/fp8_tiled.h (the model's layout).
inline std::vector<uint8_t> tiled(const std::vector<uint8_t>& w, int groups, int n, int k) {
  std::vector<uint8_t> t(size_t(groups) * fp8_tiled_group_bytes(n, k));
  fp8_to_tiled_cpu(w.data(), t.data(), groups, n, k);
  return t;
}

inline std::vector<uint16_t> random_bf16(size_t n, std::mt19937& rng, float stddev = 1.0f, float mean = 0.0f) {
  std::normal_distribution<float> dist(mean, stddev);
  std::vector<uint16_t> v(n);
  for (auto& x : v) x = float_to_bf16(dist(rng));
  return v;
}

inline std::vector<float> bf16_to_floats(const std::vector<uint16_t>& v) {
  std::vector<float> f(v.size());
  for (size_t i = 0; i < v.size(); ++i) f[i] = bf16_to_float(v[i]);
  return f;
}

// ‖out − ref‖/‖ref‖; any non-finite output makes it infinite.
inline double rel_error(const std::vector<float>& out, const std::vector<float>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    if (!std::isfinite(out[i])) return INFINITY;
    const double d = static_cast<double>(out[i]) - ref[i];
    num += d * d;
    den += static_cast<double>(ref[i]) * ref[i];
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

inline double rel_error_bf16(const std::vector<uint16_t>& out, const std::vector<uint16_t>& ref) {
  return rel_error(bf16_to_floats(out), bf16_to_floats(ref));
}

// One machine-readable line per checked case; bench/run_gpu_suite.sh collects the maxima.
inline void report(const char* kernel, const std::string& shape, double err, double tol) {
  std::printf("[relerr] %s %s %.3e (tol %.1e)\n", kernel, shape.c_str(), err, tol);
}

}  // namespace gossamer::kernels::test
