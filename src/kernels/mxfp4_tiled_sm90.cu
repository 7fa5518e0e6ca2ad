// Checkpoint MXFP4 → tile-major MXFP4 (mxfp4_tiled.h): one thread per 32-bit word of a tile's code bytes
// (8 codes of one row, from one aligned 4-byte source load) or per 4 scale bytes; writes coalesced.
#include <algorithm>

#include "kernels/cuda_utils.h"
#include "kernels/mxfp4_tiled.h"

namespace gossamer::kernels {
namespace {

constexpr int kWordsPerTile = kMxfp4TileBytes / 4;  // 1024 code words + 64 scale words

__global__ void mxfp4_to_tiled_kernel(const uint8_t* __restrict__ blocks, const uint8_t* __restrict__ scales,
                                      uint32_t* __restrict__ dst, int64_t words, int n, int k) {
  const int64_t k_tiles = (k + 127) / 128, tiles_per_group = (n + 63) / 64 * k_tiles, mx = k / 32;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < words; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t tile = i / kWordsPerTile, gr = tile / tiles_per_group, tin = tile - gr * tiles_per_group;
    const int64_t n0 = tin / k_tiles * 64, k0 = tin % k_tiles * 128;
    const int w = static_cast<int>(i % kWordsPerTile);
    uint32_t out = 0;
    if (w < 1024) {  // code word: unit u = 32c + 4g + t, word j
      const int u = w / 4, j = w % 4, c = u / 32, g = (u / 4) % 8, t = u % 4;
      const int64_t r = n0 + 8 * c + g, kk = k0 + 32 * j + 8 * t;
      if (r < n && kk < k) {
        const uint32_t src = *reinterpret_cast<const uint32_t*>(blocks + ((gr * n + r) * mx + kk / 32) * 16 + (kk % 32) / 2);
#pragma unroll
        for (int v = 0; v < 8; ++v) {
          const uint32_t code = (src >> (4 * v)) & 0xFu;
          out |= (code >> 3) << mxfp4_tiled_sign_bit(v) | (code & 7u) << mxfp4_tiled_mag_bit(v);
        }
      }
    } else {  // scale word: bytes 4096 + 32g + 4c + j, j = 0..3
      const int s = w - 1024, g = s / 8, c = s % 8;
      const int64_t r = n0 + 8 * c + g;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int64_t kk = k0 + 32 * j;
        const uint32_t e = r < n && kk < k ? scales[(gr * n + r) * mx + kk / 32] : 127u;
        out |= e << (8 * j);
      }
    }
    dst[i] = out;
  }
}

}  // namespace

void launch_mxfp4_to_tiled(const uint8_t* blocks, const uint8_t* scales, uint8_t* dst, int groups, int n, int k,
                           cudaStream_t stream) {
  GOSSAMER_CHECK(groups >= 0 && n >= 0 && k >= 0 && k % 32 == 0, "mxfp4_to_tiled: K (", k,
                 ") must be a multiple of 32");
  GOSSAMER_CHECK(reinterpret_cast<uintptr_t>(blocks) % 4 == 0 && reinterpret_cast<uintptr_t>(dst) % 16 == 0,
                 "mxfp4_to_tiled: blocks must be 4-byte and dst 16-byte aligned");
  const int64_t words = int64_t(groups) * mxfp4_tiled_group_bytes(n, k) / 4;
  if (words == 0) return;
  const int grid = static_cast<int>(std::min<int64_t>(ceil_div<int64_t>(words, 256), 132 * 16));
  mxfp4_to_tiled_kernel<<<grid, 256, 0, stream>>>(blocks, scales, reinterpret_cast<uint32_t*>(dst), words, n, k);
  GOSSAMER_CUDA_CHECK_LAUNCH();
}

}  // namespace gossamer::kernels
