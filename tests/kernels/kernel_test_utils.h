// Shared helpers for the GPU kernel tests: GPU presence check, device arrays with NaN poisoning,
// random inputs, and the relative-error metric ‖out − ref‖ / ‖ref‖ with per-dtype tolerances.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "core/cuda/device_buffer.h"
#include "core/dtype.h"
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

#define GOSSAMER_REQUIRE_GPU()                           \
  do {                                                   \
    std::string why_;                                    \
    if (!::gossamer::kernels::test::has_gpu(&why_)) {    \
      GTEST_SKIP() << "SKIPPED (needs a GPU): " << why_; \
    }                                                    \
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

// Random e4m3 bytes over the whole finite range (the NaN codes 0x7F/0xFF become ±448). Fast enough for
// the 579 MB unembedding.
inline std::vector<uint8_t> random_fp8_bytes(size_t n, std::mt19937& rng) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; i += 4) {
    uint32_t r = rng();
    for (size_t j = i; j < std::min(n, i + 4); ++j, r >>= 8) {
      const uint8_t b = static_cast<uint8_t>(r);
      v[j] = (b & 0x7F) == 0x7F ? static_cast<uint8_t>(b ^ 1) : b;
    }
  }
  return v;
}

// e4m3 of normal(0, 100) values (saturating at ±448).
inline std::vector<uint8_t> random_fp8_normal(size_t n, std::mt19937& rng) {
  std::normal_distribution<float> d(0.f, 100.f);
  std::vector<uint8_t> v(n);
  for (auto& x : v) x = float_to_fp8e4m3(d(rng));
  return v;
}

// Block scales uniform in [lo, hi).
inline std::vector<float> random_scales(size_t n, std::mt19937& rng, float lo, float hi) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// fp32 scales of `groups` [n, k] fp8 matrices with 128×128 blocks.
inline size_t scale_count(int groups, int n, int k) {
  return size_t(groups) * ((n + 127) / 128) * ((k + 127) / 128);
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
