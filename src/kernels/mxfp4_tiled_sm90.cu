// Checkpoint MXFP4 → tile-major MXFP4 (mxfp4_tiled.h): one thread per 32-bit word of a tile's code bytes
// (8 codes of one row, from one aligned 4-byte source load) or per 4 scale bytes; writes coalesced.
#include <algorithm>

#include "kernels/cuda_utils.h"
#include "kernels/fp8_tiled.h"
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
        const uint32_t src =
            *reinterpret_cast<const uint32_t*>(blocks + ((gr * n + r) * mx + kk / 32) * 16 + (kk % 32) / 2);
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

// One CTA (256 threads) per (group, 128-row block, 128-column block): the block's largest and smallest MX
// exponents over its real rows and columns, then 8 weights (one relaid word) at a time into 8 contiguous fp8
// bytes by bit arithmetic (mxfp4_tiled_word_to_e4m3: exact where the
// block's exponents span ≤ 14 binades, its rounding variant otherwise; ~23 instructions per 8 weights).
// One DRAM round trip per CTA: thread q reads 16-byte unit q of each of the block's two 64-row tiles (row
// 8·(q / 32) + (q / 4) % 8, columns 8·(q % 4) + 32j of MX blocks j = 0..3; 4 KiB per tile, coalesced) and its
// rows' 4 scale bytes (one word) before the exponent reduction needs them; the codes wait in registers. H100,
// 2026-12-06: 69–70% of copy (was 45–47% with its loads after the reduction; a block-walking variant with the next
// block's loads in flight ran at 63%: docs/PERF.md).
// Exponents are clamped to [e_max − 36, e_max]: padding (scale 127, code 0) never makes a non-finite
// multiplier, and real weights further below become ±0 either way (mxfp4_tiled.h).
constexpr int kToFp8Threads = 256;  // one per 16-byte unit of a tile's codes
static_assert(kToFp8Threads * 16 == 4096, "a thread per code unit of a 64-row tile");
__global__ void __launch_bounds__(kToFp8Threads)
    mxfp4_tiled_to_fp8_kernel(const uint8_t* __restrict__ src, uint8_t* __restrict__ dst,
                              float* __restrict__ dst_scales, int n, int k) {
  const int nb = (n + 127) / 128, kb = (k + 127) / 128;
  const int cb = static_cast<int>(blockIdx.x) % kb, rb = static_cast<int>(blockIdx.x) / kb % nb;
  const int64_t gr = blockIdx.x / (int64_t(kb) * nb);
  const uint8_t* group = src + gr * mxfp4_tiled_group_bytes(n, k);
  const int k_tiles = (k + 127) / 128;
  const int q = static_cast<int>(threadIdx.x);
  const int rr = 8 * (q / 32) + (q / 4) % 8, t = q % 4;  // row inside its 64-row tile, 8-column group
  const int64_t np = fp8_tiled_pad(n), kp = fp8_tiled_pad(k);
  // ---- loads: per tile h (rows 64h …) this thread's code unit and its row's scale word; none past pad(N) ----
  uint4 codes[2];
  uint32_t scale_word[2];
  bool tile_ok[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    tile_ok[h] = rb * 128 + 64 * h < np;
    if (tile_ok[h]) {
      const uint8_t* tile = group + (int64_t(2 * rb + h) * k_tiles + cb) * kMxfp4TileBytes;
      codes[h] = *reinterpret_cast<const uint4*>(tile + 16 * q);
      scale_word[h] = *reinterpret_cast<const uint32_t*>(tile + 4096 + 32 * (rr % 8) + 4 * (rr / 8));
    } else {
      codes[h] = make_uint4(0u, 0u, 0u, 0u);
      scale_word[h] = 0x7F7F7F7Fu;
    }
  }
  // ---- the block's exponent range over real rows (< n) and MX blocks (column < k) ----
  int e_max = 0, e_min = 255;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    if (rb * 128 + 64 * h + rr >= n) continue;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      if (cb * 128 + 32 * j >= k) continue;
      const int e = static_cast<int>((scale_word[h] >> (8 * j)) & 0xFFu);
      e_max = max(e_max, e);
      e_min = min(e_min, e);
    }
  }
  __shared__ int s_max[kToFp8Threads / 32], s_min[kToFp8Threads / 32];
  e_max = __reduce_max_sync(0xffffffffu, e_max);
  e_min = __reduce_min_sync(0xffffffffu, e_min);
  if (q % 32 == 0) s_max[q / 32] = e_max, s_min[q / 32] = e_min;
  __syncthreads();
  e_max = 0, e_min = 255;
#pragma unroll
  for (int w = 0; w < kToFp8Threads / 32; ++w) e_max = max(e_max, s_max[w]), e_min = min(e_min, s_min[w]);
  if (q == 0) dst_scales[(gr * nb + rb) * kb + cb] = ldexpf(1.0f, e_max - 127 - 6);
  const bool round = e_max - e_min > 14;  // CTA-uniform
  // ---- convert and store: 8 fp8 bytes per (row, MX block) ----
  uint8_t* out = dst + gr * fp8_tiled_group_bytes(n, k);
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    if (!tile_ok[h]) continue;
    const int64_t r = rb * 128 + 64 * h + rr;
    const uint32_t words[4] = {codes[h].x, codes[h].y, codes[h].z, codes[h].w};
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int64_t c = cb * 128 + 32 * j + 8 * t;
      if (c >= kp) continue;
      const int e = min(max(static_cast<int>((scale_word[h] >> (8 * j)) & 0xFFu), e_max - 36), e_max);
      const uint32_t m2 = mxfp4_f16x2_pow2(e - e_max + 12);
      uint32_t lo, hi;
      if (round) {
        mxfp4_tiled_word_to_e4m3<true>(words[j], m2, lo, hi);
      } else {
        mxfp4_tiled_word_to_e4m3<false>(words[j], m2, lo, hi);
      }
      *reinterpret_cast<uint2*>(out + fp8_tiled_offset(r, c, kp)) = make_uint2(lo, hi);
    }
  }
}

}  // namespace

void launch_mxfp4_tiled_to_fp8(const uint8_t* src, uint8_t* dst, float* dst_scales, int groups, int n, int k,
                               cudaStream_t stream) {
  GOSSAMER_CHECK(groups >= 0 && n >= 0 && k >= 0 && k % 32 == 0, "mxfp4_tiled_to_fp8: K (", k,
                 ") must be a multiple of 32");
  GOSSAMER_CHECK(reinterpret_cast<uintptr_t>(src) % 16 == 0 && reinterpret_cast<uintptr_t>(dst) % 16 == 0,
                 "mxfp4_tiled_to_fp8: src and dst must be 16-byte aligned");
  const int64_t blocks = int64_t(groups) * ((n + 127) / 128) * ((k + 127) / 128);
  if (blocks == 0) return;
  mxfp4_tiled_to_fp8_kernel<<<static_cast<unsigned>(blocks), kToFp8Threads, 0, stream>>>(src, dst, dst_scales, n, k);
  GOSSAMER_CUDA_CHECK_LAUNCH();
}

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
