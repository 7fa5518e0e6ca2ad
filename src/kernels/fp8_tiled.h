// Tile-major layout of FP8 weights, the cuda backend's storage for every FP8 matrix [G, N, K]:
// 64 × 64 tiles of 4 KiB, row-major inside (row n % 64, column k % 64), ordered (g, n / 64, k / 64) with
// k / 64 fastest; N and K are padded up to multiples of 64 with zeros. The 128×128 block scales keep their
// [G, ceil(N/128), ceil(K/128)] layout.
//
// Why: the decode GEMV streams one 64 × 64 weight tile per warp step. Read row-major, that step is 64
// pieces of 64 bytes, 4 KiB apart in memory; tile-major it is one contiguous 4 KiB. On the H200 the same
// access pattern without arithmetic reads 81% of the copy figure row-major and 105% tile-major over the
// unembedding, 74% → 85% over four gate_up experts (bench group gemvx, docs/PERF.md). The prefill GEMMs
// read 16-byte chunks, which never straddle a tile row, so they read either layout at the same speed.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/cuda/cuda_types.h"  // cudaStream_t, GOSSAMER_HOST_DEVICE

namespace gossamer::kernels {

inline constexpr int kFp8TileDim = 64;

GOSSAMER_HOST_DEVICE constexpr int64_t fp8_tiled_pad(int64_t v) {
  return (v + 63) / 64 * 64;
}

// Byte offset of element (n, k) inside one group's tiled matrix of padded width k_padded = pad(K).
GOSSAMER_HOST_DEVICE constexpr int64_t fp8_tiled_offset(int64_t n, int64_t k, int64_t k_padded) {
  return (n >> 6) * (k_padded << 6) + ((k >> 6) << 12) + ((n & 63) << 6) + (k & 63);
}

// Bytes of one group: pad(N) · pad(K).
GOSSAMER_HOST_DEVICE constexpr int64_t fp8_tiled_group_bytes(int64_t n, int64_t k) {
  return fp8_tiled_pad(n) * fp8_tiled_pad(k);
}

// dst [G, pad(N)·pad(K)] tiled ← src [G, N, K] row-major (K a multiple of 16, pointers 16-byte aligned).
// Padding is written as zeros. Device pointers; asynchronous on `stream`.
void launch_fp8_to_tiled(const uint8_t* src, uint8_t* dst, int groups, int n, int k, cudaStream_t stream);

// The same on host memory (any K).
void fp8_to_tiled_cpu(const uint8_t* src, uint8_t* dst, int groups, int n, int k);

// The inverse: dst [G, N, K] row-major ← src tiled (padding dropped); K a multiple of 16, pointers 16-byte
// aligned. For the row-major copy cuBLASLt reads (gemm_fp8_cublaslt.h). Device pointers; asynchronous.
void launch_fp8_from_tiled(const uint8_t* src, uint8_t* dst, int groups, int n, int k, cudaStream_t stream);
void fp8_from_tiled_cpu(const uint8_t* src, uint8_t* dst, int groups, int n, int k);

}  // namespace gossamer::kernels
