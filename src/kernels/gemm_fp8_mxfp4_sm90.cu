// FP8 block-scaled GEMM with MXFP4 weights on Hopper (gemm_fp8.h, b_mxfp4): the prefill MoE GEMMs read
// the experts as stored (tiled MXFP4, mxfp4_tiled.h, 4.25 bits per weight) and dequantize them on chip
// into the e4m3 operand wgmma reads; there is no conversion pass.
//
// A CTA computes a 128×128 output tile with 256 threads, two warpgroups (rows 0–63 and 64–127), one CTA
// per SM. Per 128-wide K block kb:
//   load (cp.async, a ring of kStages stages issued kStages − 1 ahead): A, 128 rows × 128 bytes, into the
//     128B-swizzled layout of the cp.async FP8 kernel (gemm_fp8_blockscale_sm90.cu) with the tile's a
//     scales; the weight block as stored: the two mxfp4 tiles (64 rows × 128 columns, 4,352 bytes with
//     their E8M0 scales) of the tile's 128 rows, the second absent (zero-filled) where N ends first;
//   dequantize (all 8 warps): the block's e_max and e_min over its real rows and columns (each thread its
//     row's 4 exponents, a warp reduction, the 8 warps' partials through shared memory and a barrier), the
//     block scale 2^(e_max − 133) (launch_mxfp4_tiled_to_fp8's, into the stage's scale slot after the a
//     scales), then each thread turns two 16-byte code units (one row, 8 columns of each MX block) into
//     four 16-byte e4m3 chunks of the 128B-swizzled B tile (mxfp4_tiled_word_to_e4m3: decode to f16, one
//     f16x2 multiply, byte selects; the rounding variant only for blocks whose exponents span more than 14
//     binades);
//   MMA: four wgmma m64n128k32 into a temporary accumulator, promoted into the fp32 accumulator with
//     a_scale[row] · b_scale (gemm_fp8_common_sm90.cuh): the FP8 kernels' exact arithmetic.
// Software pipeline: the e4m3 B tile is double-buffered; iteration kb issues the wgmma of block kb
// (asynchronous), refills the ring, waits for the loads of block kb + 1 and dequantizes it while the tensor
// cores run, then waits for its wgmma, promotes and meets the other warps. Three barriers per K block.
// NOTE: both warpgroups always run their MMAs, also where a tile's rows end before row 64: skipping them
// behind a (warpgroup-uniform) branch makes ptxas serialize every wgmma (C7518).
//
// Thread → code units (conflict-free 16-byte loads and stores): warp w handles mxfp4 tile w / 4, row
// groups c = 2(w % 4) + q / 2 (q = lane / 8), row r = 8c + g (g = lane % 8) and units t = 2tp, 2tp + 1
// with tp = bit 1 of g XOR (q % 2); the unit pair is the 16 columns 32j + 16tp … of MX block j, one
// swizzled 16-byte chunk 2j + tp of B row r; lanes with bit 2 of g load the pair's second unit first.
#include <algorithm>

#include "kernels/gemm_fp8_common_sm90.cuh"
#include "kernels/mxfp4_tiled.h"

namespace gossamer::kernels::gemm_fp8_detail {
namespace {

constexpr int kThreads = 256;
constexpr int kStages = 5;
constexpr int kABytes = 128 * kBK;              // [128 rows][128 bytes] e4m3, 128B-swizzled
constexpr int kBBytes = 128 * kBK;              // the dequantized B tile, same layout
constexpr int kRawBytes = 2 * kMxfp4TileBytes;  // the block's two mxfp4 tiles as stored
constexpr int kRawChunks = kRawBytes / 16;      // 544
constexpr int kScaleFloats = 132;               // [128 a scales, b scale, pad]
constexpr int kSmemBytes = 1024 + kStages * kABytes + 2 * kBBytes + kStages * kRawBytes + kStages * kScaleFloats * 4;
static_assert(kRawBytes % 16 == 0 && (kStages * kABytes + 2 * kBBytes) % 1024 == 0, "alignment of the pieces");
static_assert(kSmemBytes <= 227 * 1024, "shared memory");

// One thread's two code units (uw0: t = 2tp, uw1: t = 2tp + 1) and its row's scale word sw (the 4 MX
// exponents) → four swizzled e4m3 chunks of B row `dst_row`. Each exponent is clamped to [e_lo, e_max]
// (e_lo = e_max − 14 on the fast path, e_max − 36 on the rounding one) so that padding (exponent 127 or a
// zero-filled tile, code 0) never makes a non-finite multiplier; real exponents below e_max − 36 give ±0
// either way.
template <bool kRound>
__device__ __forceinline__ void dequantize_units(const uint4& uw0, const uint4& uw1, uint32_t sw, int e_lo, int e_max,
                                                 int tp, int g, uint8_t* dst_row) {
  const uint32_t w0[4] = {uw0.x, uw0.y, uw0.z, uw0.w}, w1[4] = {uw1.x, uw1.y, uw1.z, uw1.w};
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const int e = min(max(static_cast<int>((sw >> (8 * j)) & 0xFFu), e_lo), e_max);
    // 2^k in both f16 halves, k = e − e_max + 12; in the fast path k ≥ −2 (a normal f16: (k + 15) << 10).
    const uint32_t m2 = kRound ? mxfp4_f16x2_pow2(e - e_max + 12) : uint32_t(e - e_max + 27) * 0x04000400u;
    uint4 out;
    mxfp4_tiled_word_to_e4m3<kRound>(w0[j], m2, out.x, out.y);
    mxfp4_tiled_word_to_e4m3<kRound>(w1[j], m2, out.z, out.w);
    *reinterpret_cast<uint4*>(dst_row + (((2 * j + tp) ^ g) << 4)) = out;
  }
}

__global__ void __launch_bounds__(kThreads, 1) gemm_fp8_mxfp4_kernel(const GemmFp8Params p) {
  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  uint8_t* s_a = smem;                                                      // [kStages][kABytes]
  uint8_t* s_b = s_a + kStages * kABytes;                                   // [2][kBBytes] e4m3
  uint8_t* s_raw = s_b + 2 * kBBytes;                                       // [kStages][kRawBytes]
  float* s_scales = reinterpret_cast<float*>(s_raw + kStages * kRawBytes);  // [kStages][kScaleFloats]

  // ---- which tile ----
  int group = 0, m0, row_end = p.M;
  if (p.tile_group) {
    if (static_cast<int>(blockIdx.x) >= *p.num_tiles) return;
    group = p.tile_group[blockIdx.x];
    m0 = p.tile_m0[blockIdx.x];
    row_end = p.group_offsets[group + 1];
  } else {
    m0 = blockIdx.x * 128;
  }
  const int n0 = blockIdx.y * 128;
  const int num_kb = ceil_div(p.K, kBK);
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int chunk_col = tid % 8;

  // ---- per-thread sources (fixed across K blocks) ----
  constexpr int kAChunks = 128 * 8 / kThreads;
  const uint8_t* a_src[kAChunks];
  bool a_ok[kAChunks];
#pragma unroll
  for (int i = 0; i < kAChunks; ++i) {
    const int row = m0 + (tid + i * kThreads) / 8;
    a_ok[i] = row < row_end;
    const int src_row = a_ok[i] ? (p.a_row_index ? p.a_row_index[row] : row) : 0;
    a_src[i] = p.a + static_cast<int64_t>(src_row) * p.lda + chunk_col * 16;
  }
  const float* a_scale_src = nullptr;
  bool a_scale_ok = false;
  if (tid < 128 && m0 + tid < row_end) {
    a_scale_ok = true;
    const int row = m0 + tid;
    a_scale_src = p.a_scales + static_cast<int64_t>(p.a_row_index ? p.a_row_index[row] : row) * num_kb;
  }
  // The weight block's tiles: (n0 / 64 + h, kb) for h = 0, 1 (tile-major, k / 128 fastest).
  const int64_t row_tile_bytes = static_cast<int64_t>(num_kb) * kMxfp4TileBytes;
  const uint8_t* b_tile0 = p.b + static_cast<int64_t>(group) * mxfp4_tiled_group_bytes(p.N, p.K) +
                           static_cast<int64_t>(n0 / 64) * row_tile_bytes;
  const bool has_tile1 = n0 + 64 < p.N;

  auto load_stage = [&](int kb) {
    const int stage = kb % kStages;
    uint8_t* sa = s_a + stage * kABytes;
    const int k0 = kb * kBK;
    const bool k_ok = k0 + chunk_col * 16 < p.K;
#pragma unroll
    for (int i = 0; i < kAChunks; ++i) {
      const int r = (tid + i * kThreads) / 8;
      cp_async_16(sa + r * 128 + ((chunk_col ^ (r & 7)) << 4), a_src[i] + k0, a_ok[i] && k_ok);
    }
    uint8_t* raw = s_raw + stage * kRawBytes;
    const uint8_t* tile0 = b_tile0 + static_cast<int64_t>(kb) * kMxfp4TileBytes;
    for (int ch = tid; ch < kRawChunks; ch += kThreads) {  // 16-byte chunks, the second tile from 272 on
      const bool second = ch >= kRawChunks / 2;
      const bool ok = !second || has_tile1;
      cp_async_16(raw + ch * 16, ok ? tile0 + (second ? row_tile_bytes - kRawBytes / 2 : 0) + ch * 16 : tile0, ok);
    }
    if (tid < 128)
      cp_async_4(s_scales + stage * kScaleFloats + tid, a_scale_ok ? a_scale_src + kb : p.a_scales, a_scale_ok);
  };

  // ---- dequantize K block kb (landed in its stage) into e4m3 buffer kb % 2 ----
  const int q = lane / 8, g = lane % 8;
  const int c = 2 * (warp % 4) + q / 2, tp = ((g >> 1) & 1) ^ (q & 1), th = warp / 4;
  uint8_t* const dst_row0 = s_b + (64 * th + 8 * c + g) * 128;  // (row & 7) == g
  const bool row_ok = n0 + 64 * th + 8 * c + g < p.N;
  const int swap = (g >> 2) & 1;
  __shared__ __align__(16) int s_stat[16];  // per warp: the block's largest, then smallest MX exponent
  const int4* s_stat4 = reinterpret_cast<const int4*>(s_stat);
  auto dequantize = [&](int kb) {
    const uint8_t* tile = s_raw + (kb % kStages) * kRawBytes + th * kMxfp4TileBytes;
    // Units t = 2tp (u0) and 2tp + 1 (u1); lanes with bit 2 of g set load them in the other order, so that
    // each quarter warp's 16-byte loads hit 8 distinct bank groups.
    const uint4 first = *reinterpret_cast<const uint4*>(tile + (32 * c + 4 * g + 2 * tp + swap) * 16);
    const uint4 second = *reinterpret_cast<const uint4*>(tile + (32 * c + 4 * g + 2 * tp + 1 - swap) * 16);
    const uint4 u0 = swap ? second : first, u1 = swap ? first : second;
    const uint32_t sw = *reinterpret_cast<const uint32_t*>(tile + 4096 + 32 * g + 4 * c);
    // ---- block exponent range over its real rows (< N) and MX blocks (< K) ----
    // This thread's row (every row is two threads'), as u16x2 lanes (bytes 0, 1 and 2, 3 zero-extended).
    const int valid_j = min(4, (p.K - kb * kBK) / 32);
    const uint32_t col_mask = valid_j >= 4 ? 0xFFFFFFFFu : (1u << (8 * valid_j)) - 1u;
    const uint32_t for_max = row_ok ? sw & col_mask : 0u, for_min = row_ok ? sw | ~col_mask : 0xFFFFFFFFu;
    const uint32_t hmax = __vmaxu2(__byte_perm(for_max, 0, 0x4140), __byte_perm(for_max, 0, 0x4342));
    const uint32_t hmin = __vminu2(__byte_perm(for_min, 0, 0x4140), __byte_perm(for_min, 0, 0x4342));
    const uint32_t wmax = __reduce_max_sync(0xFFFFFFFFu, max(hmax & 0xFFFFu, hmax >> 16));
    const uint32_t wmin = __reduce_min_sync(0xFFFFFFFFu, min(hmin & 0xFFFFu, hmin >> 16));
    if (lane == 0) {
      s_stat[warp] = static_cast<int>(wmax);
      s_stat[8 + warp] = static_cast<int>(wmin);
    }
    // NOTE: the previous block's s_stat reads all happened before its K block's closing barrier.
    __syncthreads();
    const int4 x0 = s_stat4[0], x1 = s_stat4[1], y0 = s_stat4[2], y1 = s_stat4[3];
    const int e_max = max(max(max(x0.x, x0.y), max(x0.z, x0.w)), max(max(x1.x, x1.y), max(x1.z, x1.w)));
    const int e_min = min(min(min(y0.x, y0.y), min(y0.z, y0.w)), min(min(y1.x, y1.y), min(y1.z, y1.w)));
    if (tid == 0) s_scales[(kb % kStages) * kScaleFloats + 128] = ldexpf(1.0f, e_max - 127 - 6);
    // ---- this thread's two units ----
    uint8_t* dst_row = dst_row0 + (kb % 2) * kBBytes;
    if (e_max - e_min <= 14) {  // CTA-uniform: the exact fast path
      dequantize_units<false>(u0, u1, sw, max(e_max - 14, 0), e_max, tp, g, dst_row);
    } else {
      dequantize_units<true>(u0, u1, sw, max(e_max - 36, 0), e_max, tp, g, dst_row);
    }
  };

  // ---- accumulators, initialised with the bias ----
  const int wg = tid / 128;
  const int local_row = wg * 64 + (tid % 128) / 32 * 16 + lane / 4;  // and local_row + 8
  float acc[64];
  float tmp[64];
  init_with_bias<128>(p, acc, group, n0, lane);

  // ---- pipeline prologue: kStages − 1 blocks in flight, block 0 dequantized ----
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < num_kb) load_stage(s);
    cp_async_commit();
  }
  cp_async_wait<kStages - 2>();
  __syncthreads();
  dequantize(0);
  fence_proxy_async();
  __syncthreads();

  // ---- main loop over K blocks ----
  for (int kb = 0; kb < num_kb; ++kb) {
    const int stage = kb % kStages;
    const uint8_t* sa = s_a + stage * kABytes + wg * 64 * kBK;
    const uint8_t* sb = s_b + (kb % 2) * kBBytes;
    wgmma::fence();
#pragma unroll
    for (int kk = 0; kk < kBK / 32; ++kk) {
      wgmma_k32<128>(tmp, wgmma::desc_k128_sw128(sa + kk * 32), wgmma::desc_k128_sw128(sb + kk * 32), kk > 0);
    }
    wgmma::commit();
    // NOTE: the slot refilled here held block kb − 1: its wgmma was awaited and its codes dequantized
    // before the last barrier.
    if (kb + kStages - 1 < num_kb) load_stage(kb + kStages - 1);
    cp_async_commit();
    if (kb + 1 < num_kb) {
      cp_async_wait<kStages - 2>();  // block kb + 1 landed (this thread's copies) …
      __syncthreads();               // … and everyone's
      dequantize(kb + 1);            // into the buffer block kb − 1's wgmma read
      fence_proxy_async();
    }
    wgmma::wait<0>();
    promote<128, 128>(acc, tmp, s_scales + stage * kScaleFloats, local_row);
    __syncthreads();
  }
  cp_async_wait<0>();
  write_out<128>(p, acc, m0, n0, row_end, local_row, lane);
}

}  // namespace

void launch_mxfp4(const GemmFp8Params& p, cudaStream_t stream) {
  GOSSAMER_CHECK(p.K % 32 == 0, "gemm_fp8: MXFP4 weights need K (", p.K, ") a multiple of 32");
  GOSSAMER_CHECK(reinterpret_cast<uintptr_t>(p.b) % 16 == 0, "gemm_fp8: MXFP4 weights must be 16-byte aligned");
  static bool configured = false;
  if (!configured) {
    GOSSAMER_CUDA_CHECK(
        cudaFuncSetAttribute(gemm_fp8_mxfp4_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes));
    configured = true;
  }
  const int tiles_m = p.tile_group ? p.max_tiles : ceil_div(p.M, 128);
  const dim3 grid(tiles_m, ceil_div(p.N, 128));
  if (grid.x == 0) return;
  gemm_fp8_mxfp4_kernel<<<grid, kThreads, kSmemBytes, stream>>>(p);
  GOSSAMER_CUDA_CHECK_LAUNCH();
}

}  // namespace gossamer::kernels::gemm_fp8_detail
