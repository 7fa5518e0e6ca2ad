// Shared helpers for the GPU kernel tests: GPU presence check, device arrays with NaN poisoning,
// random inputs, and the relative-error metric ‖out − ref‖ / ‖ref‖ with per-dtype tolerances.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/cuda/device_buffer.h"
#include "core/dtype.h"
#include "kernels/fp8_tiled.h"
#include "kernels/grouped_tiles.h"
#include "kernels/mxfp4_tiled.h"

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

inline uint64_t splitmix64(uint64_t& s) {
  uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Random bytes fast enough for GB-sized experts.
inline void fill_random(std::vector<uint8_t>& v, uint64_t seed) {
  for (size_t i = 0; i < v.size(); i += 8) {
    const uint64_t r = splitmix64(seed);
    std::memcpy(v.data() + i, &r, std::min<size_t>(8, v.size() - i));
  }
}

// MXFP4 weights [G, N, K] directly in the tiled layout of mxfp4_tiled.h: random codes, E8M0 exponents in
// [e_lo, e_hi]; rows ≥ N and columns ≥ K padded with code 0 and exponent 127 as the layout prescribes.
inline std::vector<uint8_t> random_mxfp4_tiled(int groups, int n, int k, uint64_t seed, int e_lo, int e_hi) {
  const int64_t row_tiles = (n + 63) / 64, k_tiles = (k + 127) / 128;
  std::vector<uint8_t> w(size_t(groups) * mxfp4_tiled_group_bytes(n, k));
  fill_random(w, seed);
  for (int64_t tile = 0; tile < groups * row_tiles * k_tiles; ++tile) {
    uint8_t* p = w.data() + tile * kMxfp4TileBytes;
    const int64_t rt = tile / k_tiles % row_tiles, kt = tile % k_tiles;
    for (int r = 0; r < 64; ++r) {
      const int c = r / 8, g = r % 8;
      for (int j = 0; j < 4; ++j) {
        uint8_t& scale = p[4096 + 32 * g + 4 * c + j];
        scale = static_cast<uint8_t>(e_lo + scale % (e_hi - e_lo + 1));
        if (rt * 64 + r < n && kt * 128 + 32 * j < k) continue;
        scale = 127;
        for (int t = 0; t < 4; ++t) std::fill_n(p + (32 * c + 4 * g + t) * 16 + 4 * j, 4, uint8_t{0});
      }
    }
  }
  return w;
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

// A grouped launch's lists for `rows` rows per group (0 allowed) at tile_rows rows a tile, on the host and the device:
// group offsets [G + 1], and per tile its group and first row, followed by 3 spare slots (units past num_tiles must
// do nothing); params() names the device copies (GroupedTiles).
struct GroupedTileLists {
  GroupedTileLists(const std::vector<int>& rows, int tile_rows) {
    for (const int r : rows) offsets.push_back(offsets.back() + r);
    for (size_t g = 0; g < rows.size(); ++g) {
      for (int m0 = offsets[g]; m0 < offsets[g + 1]; m0 += tile_rows) {
        tile_group.push_back(static_cast<int32_t>(g));
        tile_m0.push_back(m0);
      }
    }
    num_tiles = static_cast<int>(tile_group.size());
    tile_group.resize(tile_group.size() + 3, 0);
    tile_m0.resize(tile_m0.size() + 3, 0);
    d_offsets = DeviceBuffer<int32_t>(offsets);
    d_tile_group = DeviceBuffer<int32_t>(tile_group);
    d_tile_m0 = DeviceBuffer<int32_t>(tile_m0);
    d_num_tiles = DeviceBuffer<int32_t>(std::vector<int32_t>{num_tiles});
  }
  int M() const { return offsets.back(); }
  GroupedTiles params() const {
    return {d_offsets.get(),
            d_tile_group.get(),
            d_tile_m0.get(),
            d_num_tiles.get(),
            static_cast<int>(tile_group.size()),
            static_cast<int>(offsets.size()) - 1};
  }
  std::vector<int32_t> offsets = {0}, tile_group, tile_m0;
  int num_tiles = 0;
  DeviceBuffer<int32_t> d_offsets, d_tile_group, d_tile_m0, d_num_tiles;
};

// One machine-readable line per checked case; bench/run_gpu_suite.sh collects the maxima.
inline void report(const char* kernel, const std::string& shape, double err, double tol) {
  std::printf("[relerr] %s %s %.3e (tol %.1e)\n", kernel, shape.c_str(), err, tol);
}

}  // namespace gossamer::kernels::test
