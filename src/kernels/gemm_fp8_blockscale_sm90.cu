// FP8 block-scaled GEMM on Hopper: cp.async multi-stage pipeline into 128B-swizzled shared memory,
// wgmma m64nNk32 e4m3 per 128-wide K block into a temporary accumulator, then promotion into the fp32
// accumulator with a_scale[row]·b_scale (the block-scale recipe needs one promotion per K block). Every
// warp loads and computes, one __syncthreads per stage; tiles 64×64, 64×128 and 128×128 (the default for
// large M).
#include <algorithm>

#include "kernels/cuda_utils.h"
#include "kernels/fp8_tiled.h"
#include "kernels/gemm_fp8.h"
#include "kernels/gemm_fp8_common_sm90.cuh"
#include "kernels/gemm_fp8_tma_out_sm90.cuh"

namespace gossamer::kernels {
namespace {

using namespace gemm_fp8_detail;

template <int kBM, int kBN>
struct Tile {
  static constexpr int kThreads = kBM * 2;  // one warpgroup per 64 rows
  // 128×128: 1 CTA/SM (4 stages, 2 warpgroups); 64×128: 2 CTAs/SM (4 stages each) so one CTA's
  // barrier/promotion bubbles overlap the other's wgmma; 64×64: small M, deep prefetch.
  static constexpr int kStages = kBN == 64 ? 6 : 4;
  static constexpr int kMinBlocks = kBM == 64 && kBN == 128 ? 2 : 1;
  static constexpr int kABytes = kBM * kBK;
  static constexpr int kBBytes = kBN * kBK;
  static constexpr int kStageBytes = kABytes + kBBytes;
  static constexpr int kScaleFloats = kBM + 4;  // a scales, then the b scale
  static constexpr int kSmemBytes = 1024 + kStages * kStageBytes + kStages * kScaleFloats * 4;
  static constexpr int kAChunks = kBM * 8 / kThreads;  // 16-byte chunks per thread per stage
  static constexpr int kBChunks = kBN * 8 / kThreads;
};

template <int kBM, int kBN>
__global__ void __launch_bounds__(Tile<kBM, kBN>::kThreads, Tile<kBM, kBN>::kMinBlocks)
    gemm_fp8_kernel(const GemmFp8Params p) {
  using T = Tile<kBM, kBN>;
  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  float* smem_scales = reinterpret_cast<float*>(smem + T::kStages * T::kStageBytes);

  // ---- which tile ----
  int group = 0, m0, row_end = p.M;
  if (p.grouped.on()) {
    if (static_cast<int>(blockIdx.x) >= *p.grouped.num_tiles) return;
    group = p.grouped.tile_group[blockIdx.x];
    m0 = p.grouped.tile_m0[blockIdx.x];
    row_end = p.grouped.group_offsets[group + 1];
  } else {
    m0 = blockIdx.x * kBM;
  }
  const int n0 = blockIdx.y * kBN;
  const int num_kb = ceil_div(p.K, kBK);
  const int num_nb = ceil_div(p.N, 128);
  const int tid = threadIdx.x;
  const int chunk_col = tid % 8;
  const uint8_t* b_group =
      p.b + static_cast<int64_t>(group) * (p.b_tiled ? fp8_tiled_group_bytes(p.N, p.K) : int64_t(p.N) * p.K);
  // Tile-major B: K block kb starts 2·kb tiles (kb · 128 · 64 bytes) into each 64-row band.
  const int64_t b_k_step = p.b_tiled ? kFp8TileDim : 1;
  const float* b_scale_row = p.b_scales + (static_cast<int64_t>(group) * num_nb + n0 / 128) * num_kb;

  // ---- per-thread source rows (fixed across K blocks) ----
  const uint8_t* a_src[T::kAChunks];
  bool a_ok[T::kAChunks];
#pragma unroll
  for (int i = 0; i < T::kAChunks; ++i) {
    const int r = (tid + i * T::kThreads) / 8;
    const int row = m0 + r;
    a_ok[i] = row < row_end;
    const int src_row = a_ok[i] ? (p.a_row_index ? p.a_row_index[row] : row) : 0;
    a_src[i] = p.a + static_cast<int64_t>(src_row) * p.lda + chunk_col * 16;
  }
  const uint8_t* b_src[T::kBChunks];
  bool b_ok[T::kBChunks];
#pragma unroll
  for (int i = 0; i < T::kBChunks; ++i) {
    const int r = (tid + i * T::kThreads) / 8;
    b_ok[i] = n0 + r < p.N;
    const int64_t row = b_ok[i] ? n0 + r : 0;
    b_src[i] =
        b_group + (p.b_tiled ? fp8_tiled_offset(row, chunk_col * 16, fp8_tiled_pad(p.K)) : row * p.K + chunk_col * 16);
  }
  const float* a_scale_src = nullptr;
  bool a_scale_ok = false;
  if (tid < kBM && m0 + tid < row_end) {
    a_scale_ok = true;
    const int row = m0 + tid;
    a_scale_src = p.a_scales + static_cast<int64_t>(p.a_row_index ? p.a_row_index[row] : row) * num_kb;
  }

  auto load_stage = [&](int kb) {
    const int stage = kb % T::kStages;
    uint8_t* sa = smem + stage * T::kStageBytes;
    uint8_t* sb = sa + T::kABytes;
    const int k0 = kb * kBK;
    const bool k_ok = k0 + chunk_col * 16 < p.K;
#pragma unroll
    for (int i = 0; i < T::kAChunks; ++i) {
      const int r = (tid + i * T::kThreads) / 8;
      cp_async_16(sa + r * 128 + ((chunk_col ^ (r & 7)) << 4), a_src[i] + k0, a_ok[i] && k_ok);
    }
#pragma unroll
    for (int i = 0; i < T::kBChunks; ++i) {
      const int r = (tid + i * T::kThreads) / 8;
      cp_async_16(sb + r * 128 + ((chunk_col ^ (r & 7)) << 4), b_src[i] + k0 * b_k_step, b_ok[i] && k_ok);
    }
    float* sc = smem_scales + stage * T::kScaleFloats;
    if (tid < kBM) cp_async_4(sc + tid, a_scale_ok ? a_scale_src + kb : p.a_scales, a_scale_ok);
    if (tid == 0) cp_async_4(sc + kBM, b_scale_row + kb, true);
  };

  // ---- accumulators, initialised with the bias ----
  const int wg = tid / 128;
  const int warp = (tid % 128) / 32;
  const int lane = tid % 32;
  const int local_row = wg * 64 + warp * 16 + lane / 4;  // and local_row + 8
  float acc[kBN / 2];
  float tmp[kBN / 2];
  init_with_bias<kBN>(p, acc, group, n0, lane);

  // ---- pipeline prologue ----
#pragma unroll
  for (int s = 0; s < T::kStages - 1; ++s) {
    if (s < num_kb) load_stage(s);
    cp_async_commit();
  }

  // ---- main loop over K blocks ----
  for (int kb = 0; kb < num_kb; ++kb) {
    cp_async_wait<T::kStages - 2>();
    fence_proxy_async();
    __syncthreads();
    // NOTE: the stage refilled here was consumed in iteration kb − 1, whose wgmma all threads awaited
    // before the barrier above.
    if (kb + T::kStages - 1 < num_kb) load_stage(kb + T::kStages - 1);
    cp_async_commit();

    const int stage = kb % T::kStages;
    const uint8_t* sa = smem + stage * T::kStageBytes + wg * 64 * kBK;
    const uint8_t* sb = smem + stage * T::kStageBytes + T::kABytes;
    wgmma::fence();
#pragma unroll
    for (int kk = 0; kk < kBK / 32; ++kk) {
      wgmma_k32<kBN>(tmp, wgmma::desc_k128_sw128(sa + kk * 32), wgmma::desc_k128_sw128(sb + kk * 32), kk > 0);
    }
    wgmma::commit();
    wgmma::wait<0>();

    // ---- promote with the block scales ----
    promote<kBM, kBN>(acc, tmp, smem_scales + stage * T::kScaleFloats, local_row);
  }
  cp_async_wait<0>();
  write_out<kBN>(p, acc, m0, n0, row_end, local_row, lane);
}

template <int kBM, int kBN>
void launch_tile(const GemmFp8Params& p, cudaStream_t stream) {
  using T = Tile<kBM, kBN>;
  static bool configured = false;
  if (!configured) {
    GOSSAMER_CUDA_CHECK(
        cudaFuncSetAttribute(gemm_fp8_kernel<kBM, kBN>, cudaFuncAttributeMaxDynamicSharedMemorySize, T::kSmemBytes));
    configured = true;
  }
  const int tiles_m = p.grouped.on() ? p.grouped.max_tiles : ceil_div(p.M, kBM);
  const dim3 grid(tiles_m, ceil_div(p.N, kBN));
  if (grid.x == 0) return;
  gemm_fp8_kernel<kBM, kBN><<<grid, T::kThreads, T::kSmemBytes, stream>>>(p);
  GOSSAMER_CUDA_CHECK_LAUNCH();
}

}  // namespace

int gemm_fp8_tile_rows(int max_rows_per_tile) {
  return max_rows_per_tile <= 64 ? 64 : 128;
}

void launch_gemm_fp8(const GemmFp8Params& p, int rows_hint, cudaStream_t stream) {
  GOSSAMER_CHECK(p.K % 16 == 0 && p.lda % 16 == 0 && p.N % 8 == 0, "gemm_fp8: K (", p.K, ") and lda (", p.lda,
                 ") must be multiples of 16 and N (", p.N, ") of 8");
  GOSSAMER_CHECK(!p.grouped.on() || p.grouped.complete(), "gemm_fp8: incomplete grouped params");
  if (p.M == 0 || p.N == 0) return;
  const bool quantized_out = p.epilogue == GemmEpilogue::kSwiGluFp8;
  GOSSAMER_CHECK(!quantized_out || (p.out_q && reinterpret_cast<uintptr_t>(p.out_q) % 16 == 0 && p.out_scales &&
                                    p.ldq % 16 == 0 && p.ldq >= p.N / 2 && p.b_tiled && p.a_row_index == nullptr),
                 "gemm_fp8: the kSwiGluFp8 epilogue needs out_q (16-byte aligned, ldq a multiple of 16, ≥ N/2), "
                 "out_scales and the TMA kernel's operands (tile-major B, contiguous A)");
  GemmTile tile = quantized_out && p.tile == GemmTile::kAuto ? GemmTile::k128x256tma2 : p.tile;
  GOSSAMER_CHECK(!quantized_out || tile == GemmTile::k128x256tma2 || tile == GemmTile::k128x256tma2b,
                 "gemm_fp8: the kSwiGluFp8 epilogue is built for the 128×256 TMA tiles only");
  if (tile == GemmTile::kAuto) {
    // Measured on the H200 (docs/PERF.md, 105892e): 64×128 at 2 CTAs/SM wins for plain GEMMs of 65–256
    // rows (e.g. 21.1 vs 23.7 µs at M=128, N=5120, K=2880); 128×128 wins from M≈1024 up.
    if (gemm_fp8_tile_rows(rows_hint) == 64) {
      tile = GemmTile::k64x64;
    } else {
      // 128-row tiles: the persistent TMA kernel wherever its operand and output rules hold (tile-major B,
      // contiguous A, 16-byte output rows), else the cp.async kernel. Measured on an H100 (2026-12-06, twentieth
      // session; µs, 128×192 / 128×256 sharing A / 128×256 sharing B, clusters of 2): plain GEMMs from M = 4096
      // 128×256 sharing B (qkv M = 8192: 261.6 / 236.7 / 221.0; gate_up N = 5760: 284.3 / 278.8 / 274.4; o M =
      // 8192: 208.5 / 196.1 / 204.5, the one shape where sharing A wins, by 4%), below 128×192 (qkv M = 1024:
      // 41.1 / 50.2 / 47.9; o: 32.4 / 33.2 / 33.3). The grouped MoE 128×256 sharing A (8,192 tokens, E = 32: 2,092.4
      // µs, 2,154.3 sharing B, 2,112.8 with down on 128×192; E = 128 2,707.4 vs 3,063.2 / 2,719.8: pairs of row tiles
      // across experts cannot share B).
      const bool tma_ok = p.b_tiled && p.a_row_index == nullptr && tma_output_ok(p);
      const bool grouped = p.grouped.on();
      tile = (!grouped && p.M <= 256) ? GemmTile::k64x128
             : !tma_ok                ? GemmTile::k128x128
             : grouped                ? GemmTile::k128x256tma2
             : p.M >= 4096            ? GemmTile::k128x256tma2b
                                      : GemmTile::k128x192tma2;
    }
  }
  switch (tile) {
    case GemmTile::k64x64: launch_tile<64, 64>(p, stream); break;
    case GemmTile::k64x128: launch_tile<64, 128>(p, stream); break;
    case GemmTile::k128x192tma2: launch_tma(p, 192, false, stream); break;
    case GemmTile::k128x256tma2: launch_tma(p, 256, false, stream); break;
    case GemmTile::k128x256tma2b: launch_tma(p, 256, true, stream); break;
    default: launch_tile<128, 128>(p, stream); break;
  }
}

}  // namespace gossamer::kernels
