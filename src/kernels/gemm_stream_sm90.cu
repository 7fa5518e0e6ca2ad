// The weight-streaming grouped GEMM (gemm_stream.h) on Hopper, FP8 and MXFP4 weights in one kernel family.
//
// Work split: a CTA (8 warps) owns 128 output features n0..n0+127 of one plan tile (an expert and ≤ 32 of
// its rows) over all of K. A stage is 128 K columns: the weights (FP8: 2 row tiles × 2 k-tiles of
// fp8_tiled.h, 16 KiB; MXFP4: 2 row tiles × one tile of mxfp4_tiled.h, 8.5 KiB) and the tile's x rows
// (bf16, [rows][128 + pad]). Warp (wm = warp % 4, wk = warp / 4) computes features 32·wm..32·wm+31 (two
// m16 tiles) over the stage's columns 64·wk..64·wk+63 for every row; the two K halves are summed once at
// the end. So each weight byte is copied and decoded once, each x chunk is read by the 4 warps of its half.
//
// Pipeline (kStages slots, one __syncthreads per stage): iteration i waits for stage i+1, refills the slot
// of stage i−1 with stage i+kStages−1 (16-byte cp.async, L2 only, zero-fill outside N/K and past the tile's
// rows), converts stage i+1's x in place to f16 and computes stage i (converted one iteration earlier):
// the conversion of one stage overlaps the MMAs of the previous one.
//
// x → f16: per (row, 64 columns) a power of two 2^(14 − E), E = ⌊log2 max|x|⌋, as gemv_fp8_sm90.cu (exact
// for elements ≥ 2^-28 of the chunk's largest); the inverse factor is kept per (slot, half, row).
//
// MMA (mma.sync m16n8k16, f16 in, fp32 accumulate; A = weights, B = x rows). The K order inside a stage
// is a free permutation applied to A and B alike (as in the decode GEMVs):
//   FP8: lane (g = lane/4, t = lane%4) reads 16 bytes of weight rows g and g+8 at k-tile columns 16t..16t+15
//     and the 16 f16 of x row g at the same columns; sub-step j (0..3) takes bytes 4j..4j+3 as logical K
//     {2t, 2t+1, 2t+8, 2t+9} (cvt.rn.f16x2.e4m3x2, exact). A k-tile is one 128×128 scale block's half, so
//     the partial of a 64-column half is scaled once by w_scale · x_inv (fp32) and added.
//   MXFP4: lane (g, t) holds, per row of the tile, the word of each MX block j (8 codes at columns
//     32j + 8t + 0..7, mxfp4_tiled.h); block j is two MMAs (values 0..3, 4..7) whose partial is scaled by
//     2^(e − 127 + 14) · x_inv (exact powers of two) and added, as gemv_mxfp4_sm90.cu.
// The C fragment holds features (g, g+8) × rows (2t, 2t+1) of an n8 tile.
//
// Epilogue: the K halves meet in shared memory ([row][128] fp32, fixed order), then 16-byte stores of
// bias + plain/SwiGLU bf16. Shared memory: kStages × stage ≈ 93–104 KiB, two CTAs per SM.
#include <cuda_fp16.h>

#include <atomic>

#include "kernels/cuda_utils.h"
#include "kernels/fp8_tiled.h"
#include "kernels/gemm_stream.h"
#include "kernels/mma_bf16_sm90.cuh"
#include "kernels/mxfp4_tiled.h"
#include "kernels/swiglu.h"

namespace gossamer::kernels {
namespace {

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr int kMinCtasPerSm = 2;           // __launch_bounds__ target (≤ 128 registers per thread)
constexpr int kFeat = kStreamFeatureTile;  // 128 output features per CTA
constexpr int kMWarps = 4;                 // warps along the features (32 each), 2 along K
constexpr int kStageK = 128;               // K columns per stage, 64 per warp half
constexpr int kMaxKBlocks = kStreamMaxK / 128;
constexpr int kRedStride = kFeat + 4;  // fp32 [row][feature] epilogue tile: conflict-free fragment stores

// The stage geometry of one weight format and row capacity (kN8 n8 tiles: up to 8·kN8 rows per tile).
template <bool kMxfp4, int kN8>
struct Shape {
  static constexpr int kWeightBytes = kMxfp4 ? 2 * kMxfp4TileBytes : kFeat * kStageK;  // 8,704 / 16,384
  // x row stride in a stage: 128 bf16 + 64 (MXFP4) or 16 (FP8) bytes, so that each quarter warp's 16-byte
  // B-fragment loads below hit 32 distinct banks.
  static constexpr int kXStride = kMxfp4 ? 320 : 272;
  // Deep enough for ≥ 3 stages in flight while two CTAs share an SM (≤ 113 KiB each with static memory).
  static constexpr int kStages = kMxfp4 ? (kN8 <= 2 ? 7 : 5) : (kN8 <= 2 ? 5 : 4);
  static constexpr int stage_bytes(int rows) { return kWeightBytes + rows * kXStride; }
  static constexpr int kMaxSmem = kStages * stage_bytes(8 * kN8);
  static_assert(kStages >= 3, "the loop waits for stage i+1 with kStages − 3 groups in flight");
  static_assert(kStages * stage_bytes(8) >= kStreamMaxTileRows * kRedStride * 4, "epilogue tile overlays the ring");
};

// 2^(e − 127 + 14) for an E8M0 byte e: the MX block scale times the 2^14 that mxfp4_tiled_decode_word
// divided out. Finite for e ≤ 240.
__device__ __forceinline__ float block_scale(uint32_t e) {
  return __uint_as_float(min(e + 14u, 255u) << 23);
}

// grid: x = feature tiles (128 each), y = plan tile slots (CTAs past *num_tiles exit).
template <bool kMxfp4, int kN8>
__global__ void __launch_bounds__(kThreads, kMinCtasPerSm) gemm_stream_kernel(const GemmStreamParams p) {
  using S = Shape<kMxfp4, kN8>;
  constexpr int kStages = S::kStages;
  // Dynamic: kStages slots of [weights][x rows]; after the main loop the fp32 epilogue tile.
  extern __shared__ __align__(16) uint8_t smem[];
  __shared__ __align__(8) float s_inv[kStages][2][kStreamMaxTileRows];  // x's inverse factor per half and row
  __shared__ float s_scale[kMaxKBlocks];                                // FP8: the tile's block scales along K
  __shared__ int s_xrow[kStreamMaxTileRows];                            // x row of each tile row

  const int tid = static_cast<int>(threadIdx.x), warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
  const int wm = warp % kMWarps, wk = warp / kMWarps;
  const int n0 = static_cast<int>(blockIdx.x) * kFeat;
  const int slot = static_cast<int>(blockIdx.y);

  if (!p.plan_from_earlier_kernel) {
    pdl_wait();  // the plan comes from the previous kernel
    pdl_trigger();
  }
  // NOTE: the plan is read through L2 (__ldcg): the down projection reads it before its PDL wait, and the
  // workspace holding it is rewritten every layer, so no SM may answer from an L1 line of an earlier layer.
  if (slot >= __ldcg(p.grouped.num_tiles)) return;
  const int group = __ldcg(p.grouped.tile_group + slot), m0 = __ldcg(p.grouped.tile_m0 + slot);
  const int rows = min(p.tile_rows, __ldcg(p.grouped.group_offsets + group + 1) - m0);
  const int n8_used = (rows + 7) / 8;  // n8 tiles holding rows; x rows [rows, 8·n8_used) are zero-filled
  const int k_steps = (p.K + kStageK - 1) / kStageK;
  const int stage_bytes = S::stage_bytes(p.tile_rows);

  if (tid < kStreamMaxTileRows)
    s_xrow[tid] = tid < rows ? (p.x_row_index ? __ldcg(p.x_row_index + m0 + tid) : m0 + tid) : 0;
  if constexpr (!kMxfp4) {
    const int num_kb = (p.K + 127) / 128, num_nb = (p.N + 127) / 128;
    const float* scales = p.w_scales + (static_cast<int64_t>(group) * num_nb + blockIdx.x) * num_kb;
    for (int i = tid; i < num_kb; i += kThreads) s_scale[i] = __ldg(scales + i);
  }
  __syncthreads();

  // ---- copies of one stage into slot `sl` (callers commit) ----
  const int64_t group_bytes = kMxfp4 ? mxfp4_tiled_group_bytes(p.N, p.K) : fp8_tiled_group_bytes(p.N, p.K);
  const uint8_t* w_group = p.w + group * group_bytes;
  const int rt0 = n0 / 64;  // first 64-row tile of the CTA
  auto issue_w = [&](int step, int sl) {
    uint8_t* dst = smem + sl * stage_bytes;
    if constexpr (kMxfp4) {
      // Row tiles rt0, rt0 + 1 at k-tile `step`: 2 × 272 chunks of 16 bytes.
      const int k_tiles = (p.K + 127) / 128, row_tiles = (p.N + 63) / 64;
#pragma unroll
      for (int i = 0; i < 3; ++i) {
        const int c = tid + i * kThreads;
        if (c < 2 * kMxfp4TileBytes / 16) {
          const int rt = c >= kMxfp4TileBytes / 16 ? 1 : 0, off = (c - rt * (kMxfp4TileBytes / 16)) * 16;
          const bool ok = rt0 + rt < row_tiles;
          const uint8_t* src = w_group + (static_cast<int64_t>(rt0 + rt) * k_tiles + step) * kMxfp4TileBytes + off;
          cp_async_16(dst + rt * kMxfp4TileBytes + off, ok ? src : p.w, ok);
        }
      }
    } else {
      // Row tiles rt0, rt0 + 1 × k-tiles 2·step, 2·step + 1 (4 KiB each; one 16-byte chunk per thread).
      const int k_tiles = static_cast<int>(fp8_tiled_pad(p.K) / 64),
                row_tiles = static_cast<int>(fp8_tiled_pad(p.N) / 64);
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int rt = i >> 1, kt = 2 * step + (i & 1);
        const bool ok = rt0 + rt < row_tiles && kt < k_tiles;
        const uint8_t* src = w_group + (static_cast<int64_t>(rt0 + rt) * k_tiles + kt) * 4096 + tid * 16;
        cp_async_16(dst + i * 4096 + tid * 16, ok ? src : p.w, ok);
      }
    }
  };
  auto issue_x = [&](int step, int sl) {
    uint8_t* dst = smem + sl * stage_bytes + S::kWeightBytes;
    for (int c = tid; c < n8_used * 128; c += kThreads) {  // 16 chunks of 8 bf16 per row
      const int r = c >> 4, col = step * kStageK + (c & 15) * 8;
      const bool ok = r < rows && col < p.K;
      const uint16_t* src = p.x + static_cast<int64_t>(s_xrow[r]) * p.ldx + col;
      cp_async_16(dst + r * S::kXStride + (c & 15) * 16, ok ? src : p.x, ok);
    }
  };
  // x of slot `sl` in place to f16, per (row, 64-column half) scaled by a power of two; all threads.
  auto convert = [&](int sl) {
    uint8_t* xs = smem + sl * stage_bytes + S::kWeightBytes;
    // 8 lanes per (row, half); the bound is a multiple of 128, so whole warps take part in the shuffles.
    for (int c = tid; c < n8_used * 128; c += kThreads) {
      const int r = c >> 4, h = (c >> 3) & 1;
      uint4* ptr = reinterpret_cast<uint4*>(xs + r * S::kXStride + h * 128 + (c & 7) * 16);
      const uint4 v = *ptr;
      const uint32_t w[4] = {v.x, v.y, v.z, v.w};
      uint32_t amax_bits = 0;  // max |x| on the bit patterns (NaN is clamped to inf and still propagates)
#pragma unroll
      for (int i = 0; i < 4; ++i) amax_bits = max(amax_bits, max(w[i] & 0x7FFF0000u, (w[i] << 16) & 0x7FFF0000u));
      amax_bits = min(amax_bits, 0x7F800000u);
      amax_bits = max(amax_bits, __shfl_xor_sync(0xffffffffu, amax_bits, 1));
      amax_bits = max(amax_bits, __shfl_xor_sync(0xffffffffu, amax_bits, 2));
      amax_bits = max(amax_bits, __shfl_xor_sync(0xffffffffu, amax_bits, 4));
      // f = 2^(fe − 127), fe = 268 − biased exponent (the largest lands in [2^14, 2^15)), f and 1/f normal.
      const int fe = min(max(268 - static_cast<int>(amax_bits >> 23), 1), 253);
      const float f = __uint_as_float(static_cast<uint32_t>(fe) << 23);
      uint32_t o[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const __half2 hv = __floats2half2_rn(__uint_as_float(w[i] << 16) * f, __uint_as_float(w[i] & 0xFFFF0000u) * f);
        o[i] = *reinterpret_cast<const uint32_t*>(&hv);
      }
      *ptr = make_uint4(o[0], o[1], o[2], o[3]);
      if ((c & 7) == 0) s_inv[sl][h][r] = __uint_as_float(static_cast<uint32_t>(254 - fe) << 23);
    }
  };

  // ---- MMAs of stage `step` in slot `sl` into acc ----
  float acc[2][kN8][4] = {};
  auto compute = [&](int step, int sl) {
    // Warp-uniform: features past N (the last tile of an N that is not a multiple of 128) or columns past K.
    if (n0 + 32 * wm >= p.N || step * kStageK + 64 * wk >= p.K) return;
    const uint8_t* ws = smem + sl * stage_bytes;
    const uint8_t* xs = ws + S::kWeightBytes + 128 * wk;  // this half's 64 columns of x row 0
    if constexpr (kMxfp4) {
      const uint8_t* tile = ws + (wm >> 1) * kMxfp4TileBytes;
      uint2 u[2][2], sc[2];  // [m][row g / g + 8]: words of MX blocks 2wk, 2wk + 1; [m]: scales of both rows
#pragma unroll
      for (int m = 0; m < 2; ++m) {
        const int c = 4 * (wm & 1) + 2 * m;  // row 8c + g (and 8(c + 1) + g) of the tile
        u[m][0] = *reinterpret_cast<const uint2*>(tile + (32 * c + lane) * 16 + 8 * wk);
        u[m][1] = *reinterpret_cast<const uint2*>(tile + (32 * (c + 1) + lane) * 16 + 8 * wk);
        sc[m] = *reinterpret_cast<const uint2*>(tile + 4096 + 32 * g + 4 * c);
      }
#pragma unroll
      for (int jj = 0; jj < 2; ++jj) {
        const int j = 2 * wk + jj;
        uint32_t a0[2][4], a1[2][4];
        float s0[2], s1[2];
#pragma unroll
        for (int m = 0; m < 2; ++m) {
          uint32_t h0[4], h1[4];
          mxfp4_tiled_decode_word(jj ? u[m][0].y : u[m][0].x, h0);
          mxfp4_tiled_decode_word(jj ? u[m][1].y : u[m][1].x, h1);
          a0[m][0] = h0[0], a0[m][1] = h1[0], a0[m][2] = h0[1], a0[m][3] = h1[1];
          a1[m][0] = h0[2], a1[m][1] = h1[2], a1[m][2] = h0[3], a1[m][3] = h1[3];
          s0[m] = block_scale((sc[m].x >> (8 * j)) & 0xFFu);
          s1[m] = block_scale((sc[m].y >> (8 * j)) & 0xFFu);
        }
#pragma unroll
        for (int nt = 0; nt < kN8; ++nt) {
          if (nt >= n8_used) break;  // uniform
          const uint4 b = *reinterpret_cast<const uint4*>(xs + (8 * nt + g) * S::kXStride + 64 * jj + 16 * t);
          const float2 inv = *reinterpret_cast<const float2*>(&s_inv[sl][wk][8 * nt + 2 * t]);
#pragma unroll
          for (int m = 0; m < 2; ++m) {
            float d[4] = {0.f, 0.f, 0.f, 0.f};
            mma_f16(d, a0[m], b.x, b.y);
            mma_f16(d, a1[m], b.z, b.w);
            acc[m][nt][0] = fmaf(d[0], s0[m] * inv.x, acc[m][nt][0]);
            acc[m][nt][1] = fmaf(d[1], s0[m] * inv.y, acc[m][nt][1]);
            acc[m][nt][2] = fmaf(d[2], s1[m] * inv.x, acc[m][nt][2]);
            acc[m][nt][3] = fmaf(d[3], s1[m] * inv.y, acc[m][nt][3]);
          }
        }
      }
    } else {
      // This warp's rows 32·(wm & 1) + 16m + g (+ 8) of row tile wm >> 1, k-tile wk: 64-byte rows. One m16
      // tile at a time (its 16 A registers live across the row tiles; B is read once per m16 tile).
      const uint8_t* tile = ws + ((wm >> 1) * 2 + wk) * 4096 + (32 * (wm & 1) + g) * 64 + 16 * t;
      const float scale = s_scale[step];
#pragma unroll
      for (int m = 0; m < 2; ++m) {
        const uint4 w0 = *reinterpret_cast<const uint4*>(tile + 16 * m * 64);
        const uint4 w1 = *reinterpret_cast<const uint4*>(tile + (16 * m + 8) * 64);
        const uint32_t r0[4] = {w0.x, w0.y, w0.z, w0.w}, r1[4] = {w1.x, w1.y, w1.z, w1.w};
        uint32_t a[4][4];  // [sub-step j][fragment register]
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          a[j][0] = e4m3x2_to_f16x2(r0[j]);
          a[j][1] = e4m3x2_to_f16x2(r1[j]);
          a[j][2] = e4m3x2_to_f16x2(r0[j] >> 16);
          a[j][3] = e4m3x2_to_f16x2(r1[j] >> 16);
        }
#pragma unroll
        for (int nt = 0; nt < kN8; ++nt) {
          if (nt >= n8_used) break;  // uniform
          const uint8_t* xr = xs + (8 * nt + g) * S::kXStride + 32 * t;
          const uint4 b0 = *reinterpret_cast<const uint4*>(xr), b1 = *reinterpret_cast<const uint4*>(xr + 16);
          const uint32_t b[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
          const float2 inv = *reinterpret_cast<const float2*>(&s_inv[sl][wk][8 * nt + 2 * t]);
          const float f_even = scale * inv.x, f_odd = scale * inv.y;
          float d[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
          for (int j = 0; j < 4; ++j) mma_f16(d, a[j], b[2 * j], b[2 * j + 1]);
          acc[m][nt][0] = fmaf(d[0], f_even, acc[m][nt][0]);
          acc[m][nt][1] = fmaf(d[1], f_odd, acc[m][nt][1]);
          acc[m][nt][2] = fmaf(d[2], f_even, acc[m][nt][2]);
          acc[m][nt][3] = fmaf(d[3], f_odd, acc[m][nt][3]);
        }
      }
    }
  };

  // ---- prologue: stages 0 .. kStages − 2 (the weights before the PDL wait when the plan is older) ----
  for (int s = 0; s < kStages - 1 && s < k_steps; ++s) issue_w(s, s);
  if (p.plan_from_earlier_kernel) {
    pdl_wait();  // x (h of the previous kernel), bias and out follow the stream order
    pdl_trigger();
  }
  for (int s = 0; s < kStages - 1 && s < k_steps; ++s) issue_x(s, s);
  cp_async_commit();
  cp_async_wait<0>();
  __syncthreads();
  convert(0);

  // ---- main loop ----
  int sl = 0;  // slot of stage i
  for (int i = 0; i < k_steps; ++i) {
    cp_async_wait<kStages - 3>();  // this thread's copies of stage i + 1
    __syncthreads();               // everyone's copies of i + 1 and conversion of i; slot of i − 1 free
    const int fill = i + kStages - 1, fill_sl = sl == 0 ? kStages - 1 : sl - 1;
    if (fill < k_steps) {
      issue_w(fill, fill_sl);
      issue_x(fill, fill_sl);
    }
    cp_async_commit();  // one group per iteration, empty past the end
    const int next_sl = sl + 1 == kStages ? 0 : sl + 1;
    if (i + 1 < k_steps) convert(next_sl);
    compute(i, sl);
    sl = next_sl;
  }
  cp_async_wait<0>();
  __syncthreads();  // the ring becomes the epilogue tile

  // ---- the two K halves meet in shared memory: red[row][feature] fp32 ----
  float* red = reinterpret_cast<float*>(smem);
  auto for_fragments = [&](auto&& op) {
#pragma unroll
    for (int m = 0; m < 2; ++m) {
#pragma unroll
      for (int nt = 0; nt < kN8; ++nt) {
        if (nt >= n8_used) break;
        const int f = 32 * wm + 16 * m + g, r = 8 * nt + 2 * t;
        op(red[r * kRedStride + f], acc[m][nt][0]);
        op(red[(r + 1) * kRedStride + f], acc[m][nt][1]);
        op(red[r * kRedStride + f + 8], acc[m][nt][2]);
        op(red[(r + 1) * kRedStride + f + 8], acc[m][nt][3]);
      }
    }
  };
  if (wk == 1) for_fragments([](float& dst, float v) { dst = v; });
  __syncthreads();
  if (wk == 0) for_fragments([](float& dst, float v) { dst = v + dst; });
  __syncthreads();

  // ---- epilogue: bias, SwiGLU or plain, bf16, 16-byte stores of the tile's rows ----
  const uint16_t* bias = p.bias ? p.bias + static_cast<int64_t>(group) * p.N + n0 : nullptr;
  const bool swiglu = p.epilogue == GemmEpilogue::kSwiGlu;
  const int per_row = swiglu ? 8 : 16;  // 16 features → 8 outputs, or 8 features → 8 outputs
  for (int c = tid; c < rows * per_row; c += kThreads) {
    const int r = c / per_row, f0 = (c % per_row) * (swiglu ? 16 : 8);
    if (n0 + f0 >= p.N) continue;
    const float* src = red + r * kRedStride + f0;
    uint16_t* out = p.out + static_cast<int64_t>(m0 + r) * p.ldc;
    uint32_t o[4];
    if (swiglu) {
      float v[16];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const float4 q = *reinterpret_cast<const float4*>(src + 4 * i);
        v[4 * i] = q.x, v[4 * i + 1] = q.y, v[4 * i + 2] = q.z, v[4 * i + 3] = q.w;
      }
      if (bias) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const uint4 bb = __ldg(reinterpret_cast<const uint4*>(bias + f0 + 8 * h));
          const uint32_t bw[4] = {bb.x, bb.y, bb.z, bb.w};
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            v[8 * h + 2 * i] += __uint_as_float(bw[i] << 16);
            v[8 * h + 2 * i + 1] += __uint_as_float(bw[i] & 0xFFFF0000u);
          }
        }
      }
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const __nv_bfloat162 h =
            __floats2bfloat162_rn(swiglu_clamped(v[4 * i], v[4 * i + 1]), swiglu_clamped(v[4 * i + 2], v[4 * i + 3]));
        o[i] = *reinterpret_cast<const uint32_t*>(&h);
      }
      *reinterpret_cast<uint4*>(out + (n0 + f0) / 2) = make_uint4(o[0], o[1], o[2], o[3]);
    } else {
      float v[8];
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        const float4 q = *reinterpret_cast<const float4*>(src + 4 * i);
        v[4 * i] = q.x, v[4 * i + 1] = q.y, v[4 * i + 2] = q.z, v[4 * i + 3] = q.w;
      }
      if (bias) {
        const uint4 bb = __ldg(reinterpret_cast<const uint4*>(bias + f0));
        const uint32_t bw[4] = {bb.x, bb.y, bb.z, bb.w};
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          v[2 * i] += __uint_as_float(bw[i] << 16);
          v[2 * i + 1] += __uint_as_float(bw[i] & 0xFFFF0000u);
        }
      }
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const __nv_bfloat162 h = __floats2bfloat162_rn(v[2 * i], v[2 * i + 1]);
        o[i] = *reinterpret_cast<const uint32_t*>(&h);
      }
      *reinterpret_cast<uint4*>(out + n0 + f0) = make_uint4(o[0], o[1], o[2], o[3]);
    }
  }
}

// Opts a variant into its dynamic shared memory, once per device (a function attribute: fine during graph
// capture).
template <bool kMxfp4, int kN8>
void launch_variant(const GemmStreamParams& p, int device, cudaStream_t stream) {
  using S = Shape<kMxfp4, kN8>;
  static std::atomic<uint64_t> prepared{0};
  const uint64_t bit = uint64_t(1) << (device & 63);
  if (!(prepared.load(std::memory_order_acquire) & bit)) {
    GOSSAMER_CUDA_CHECK(cudaFuncSetAttribute(gemm_stream_kernel<kMxfp4, kN8>,
                                             cudaFuncAttributeMaxDynamicSharedMemorySize, S::kMaxSmem));
    prepared.fetch_or(bit, std::memory_order_release);
  }
  const dim3 grid(static_cast<unsigned>(ceil_div(p.N, kFeat)), static_cast<unsigned>(p.grouped.max_tiles), 1);
  launch_pdl(gemm_stream_kernel<kMxfp4, kN8>, grid, dim3(kThreads, 1, 1),
             static_cast<size_t>(S::kStages) * S::stage_bytes(p.tile_rows), stream, p);
}

}  // namespace

void launch_gemm_stream(const GemmStreamParams& p, cudaStream_t stream) {
  const bool swiglu = p.epilogue == GemmEpilogue::kSwiGlu;
  GOSSAMER_CHECK(p.N > 0 && p.N % 16 == 0, "gemm_stream: N (", p.N, ") must be a positive multiple of 16");
  GOSSAMER_CHECK(p.K > 0 && p.K <= kStreamMaxK && p.K % (p.w_mxfp4 ? 32 : 16) == 0, "gemm_stream: K (", p.K,
                 ") must be a positive multiple of ", p.w_mxfp4 ? 32 : 16, " up to ", kStreamMaxK);
  GOSSAMER_CHECK(p.tile_rows >= 8 && p.tile_rows <= kStreamMaxTileRows && p.tile_rows % 8 == 0,
                 "gemm_stream: tile_rows (", p.tile_rows, ") must be 8, 16, 24 or 32");
  GOSSAMER_CHECK(p.grouped.num_groups >= 1 && p.grouped.max_tiles >= 0 && p.grouped.max_tiles <= 65535,
                 "gemm_stream: ", p.grouped.num_groups, " groups, max_tiles ", p.grouped.max_tiles);
  if (p.grouped.max_tiles == 0) return;
  GOSSAMER_CHECK(p.x && p.w && p.out && (p.w_mxfp4 || p.w_scales), "gemm_stream: null operand");
  GOSSAMER_CHECK(p.grouped.complete(), "gemm_stream: null plan");
  GOSSAMER_CHECK(p.ldx >= p.K && p.ldx % 8 == 0, "gemm_stream: ldx (", p.ldx, ") must be ≥ K and a multiple of 8");
  GOSSAMER_CHECK(p.ldc >= (swiglu ? p.N / 2 : p.N) && p.ldc % 8 == 0, "gemm_stream: bad ldc ", p.ldc);
  GOSSAMER_CHECK(reinterpret_cast<uintptr_t>(p.x) % 16 == 0 && reinterpret_cast<uintptr_t>(p.w) % 16 == 0 &&
                     reinterpret_cast<uintptr_t>(p.out) % 16 == 0 && reinterpret_cast<uintptr_t>(p.bias) % 16 == 0,
                 "gemm_stream: x, w, out and bias must be 16-byte aligned");
  int device = 0;
  GOSSAMER_CUDA_CHECK(cudaGetDevice(&device));
  const bool wide = p.tile_rows > 16;
  if (p.w_mxfp4) {
    wide ? launch_variant<true, 4>(p, device, stream) : launch_variant<true, 2>(p, device, stream);
  } else {
    wide ? launch_variant<false, 4>(p, device, stream) : launch_variant<false, 2>(p, device, stream);
  }
}

}  // namespace gossamer::kernels
