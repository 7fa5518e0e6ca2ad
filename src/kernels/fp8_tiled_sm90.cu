// Row-major ↔ tile-major FP8 relayouts (fp8_tiled.h): one thread per 16-byte chunk of the tiled side, so
// its accesses are fully coalesced; the row-major side moves in 16-byte pieces of rows.
#include <algorithm>

#include "kernels/cuda_utils.h"
#include "kernels/fp8_tiled.h"

namespace gossamer::kernels {
namespace {

// Where the 16-byte chunk at `byte` of the tiled side lies on the row-major side: group g, row r, column c
// (the inverse of fp8_tiled_offset: tile (tn, tk), then row and column inside it). r ≥ n or c ≥ k: padding.
struct TiledChunk {
  int64_t g, r, c;
};
__device__ __forceinline__ TiledChunk tiled_chunk(int64_t byte, int64_t group_bytes, int64_t kp) {
  const int64_t g = byte / group_bytes, off = byte - g * group_bytes;
  const int64_t tile = off >> 12, tn = tile / (kp >> 6), tk = tile - tn * (kp >> 6);
  return {g, tn * 64 + ((off >> 6) & 63), tk * 64 + (off & 63)};
}

__global__ void fp8_to_tiled_kernel(const uint8_t* __restrict__ src, uint8_t* __restrict__ dst, int64_t chunks, int n,
                                    int k) {
  const int64_t kp = fp8_tiled_pad(k), group_bytes = fp8_tiled_group_bytes(n, k);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < chunks; i += int64_t(gridDim.x) * blockDim.x) {
    const TiledChunk at = tiled_chunk(i * 16, group_bytes, kp);
    uint4 v = make_uint4(0u, 0u, 0u, 0u);
    if (at.r < n && at.c < k) v = *reinterpret_cast<const uint4*>(src + (at.g * n + at.r) * k + at.c);
    *reinterpret_cast<uint4*>(dst + i * 16) = v;
  }
}

__global__ void fp8_from_tiled_kernel(const uint8_t* __restrict__ src, uint8_t* __restrict__ dst, int64_t chunks, int n,
                                      int k) {
  const int64_t kp = fp8_tiled_pad(k), group_bytes = fp8_tiled_group_bytes(n, k);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < chunks; i += int64_t(gridDim.x) * blockDim.x) {
    const TiledChunk at = tiled_chunk(i * 16, group_bytes, kp);
    if (at.r < n && at.c < k)
      *reinterpret_cast<uint4*>(dst + (at.g * n + at.r) * k + at.c) = *reinterpret_cast<const uint4*>(src + i * 16);
  }
}

void check_relayout(const uint8_t* src, uint8_t* dst, int groups, int n, int k, const char* name) {
  GOSSAMER_CHECK(groups >= 0 && n >= 0 && k >= 0 && k % 16 == 0, name, ": K (", k, ") must be a multiple of 16");
  GOSSAMER_CHECK(reinterpret_cast<uintptr_t>(src) % 16 == 0 && reinterpret_cast<uintptr_t>(dst) % 16 == 0, name,
                 ": pointers must be 16-byte aligned");
}

int relayout_blocks(int64_t chunks) {
  return static_cast<int>(std::min<int64_t>(ceil_div<int64_t>(chunks, 256), 132 * 16));
}

}  // namespace

void launch_fp8_from_tiled(const uint8_t* src, uint8_t* dst, int groups, int n, int k, cudaStream_t stream) {
  check_relayout(src, dst, groups, n, k, "fp8_from_tiled");
  const int64_t chunks = int64_t(groups) * fp8_tiled_group_bytes(n, k) / 16;
  if (chunks == 0) return;
  fp8_from_tiled_kernel<<<relayout_blocks(chunks), 256, 0, stream>>>(src, dst, chunks, n, k);
  GOSSAMER_CUDA_CHECK_LAUNCH();
}

void launch_fp8_to_tiled(const uint8_t* src, uint8_t* dst, int groups, int n, int k, cudaStream_t stream) {
  check_relayout(src, dst, groups, n, k, "fp8_to_tiled");
  const int64_t chunks = int64_t(groups) * fp8_tiled_group_bytes(n, k) / 16;
  if (chunks == 0) return;
  fp8_to_tiled_kernel<<<relayout_blocks(chunks), 256, 0, stream>>>(src, dst, chunks, n, k);
  GOSSAMER_CUDA_CHECK_LAUNCH();
}

}  // namespace gossamer::kernels
