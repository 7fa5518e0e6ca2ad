// MXFP4 weight-only GEMV for decode (gemv_mxfp4.h) on Hopper, in the style of gemv_fp8_sm90.cu.
//
// Work split as gemv_fp8: a cluster of 1–8 CTAs owns 64 output rows and splits the K steps between its
// CTAs; a CTA's kWarps warps take its steps round robin. A K step here is one tile of mxfp4_tiled.h: 64 rows
// × 128 columns (4 MX blocks), 4352 contiguous bytes (4096 of codes, 256 of scales), streamed by one bulk
// copy per tile (below) into a per-warp ring of kStages steps. The launch shape (GemvMxfp4Shape) picks
// (kWarps, kStages) and the cluster: the rule's 8 warps × 3 stages (104 KiB per CTA, two CTAs per SM), or
// 4 warps × 3 stages (52 KiB, four per SM) or 4 warps × 4 stages (68 KiB, three per SM). The kernel's
// indexing is the same for every shape; only the loop strides and the warp-sum loop's trip count change.
//
// MMA (mma.sync m16n8k16, f16 in, fp32 accumulate, roles swapped: 16 weight rows are M, ≤ 8 x rows N):
// lane (g = lane/4, t = lane%4) holds, for rows g and g+8 of each 16-row tile, 8 codes of each MX block j
// (tile columns 32j + 8t + 0..7, one 32-bit word). MX block j of a row tile is two MMAs, i = 0, 1, whose
// logical K pairs (2t, 2t+1) and (2t+8, 2t+9) are the lane's columns 32j + 8t + 4i + {0,1} and {2,3}: all
// 16 K of one MMA belong to one MX block, so the block's partial (a fresh accumulator over the two MMAs)
// is multiplied by its own scale 2^(e − 127 + 14) and by x's inverse factor in fp32, then added: the E8M0
// scales are applied exactly (powers of two), never folded into f16.
//
// fp4 → f16: mxfp4_tiled_decode_word, 9 integer ops per 8 weights (6 masks, a shift, 2 multiplies that
// shift sign and magnitude bits apart), f16 = fp4 · 2^-14 exactly (±0.5 is the f16 subnormal ±2^-15,
// which mma.sync takes as is).
//
// Instruction budget (from the SASS, before the bulk copies; the kernel waits on memory rather than on issue:
// docs/PERF.md, the first ncu profile): ~655 per warp and K step (4352 bytes), i.e. ~77 per 16 bytes of tile. Per 16
// bytes of codes: decode 36, MMAs 4, block scales 8 (byte permute + shift-add) and their 8 FMAs, x ~12 (a max tree of
// bf16x2 |max|, shuffles, one bf16x2 multiply and one f32 → f16 pack per pair), the rest loads, copies and loop. The
// main loop is one step per iteration (not unrolled over the ring: each warp runs only ~3 steps at K = 2880, so code
// size matters more than loop overhead).
//
// Single row (kSingleRow, GemvMxfp4Params::single_row): with one x row, 7 of the MMA's 8 columns would carry
// nothing. Instead column j < 4 carries x only for MX block j of the step (lanes g = j hold x, the others 0 in
// that MMA's B), so one accumulator over the step's 8 MMAs per row tile holds each block's partial in its own
// column: lane (g, t < 2) scales blocks 2t and 2t + 1 of rows g and g + 8 (4 multiplies per row tile and step
// instead of 16, and half the block-scale extractions), and lanes g < 4 stage 8 x values each instead of 32.
// The products are the general kernel's; the blocks' scaled partials are summed in another order.
//
// Bulk copies: lane 0 fills a ring stage with one cp.async.bulk of the whole tile (4352 bytes, no tensor
// map) completing on the stage's mbarrier, which every lane waits on; the refill follows the warp's
// __syncwarp() after its last read of the stage. Against 8.5 16-byte cp.async per lane (the fill before,
// bit-identical): no LSU issue slots and no MIO-throttle stalls; H100, 2026-12-05: 4× gate_up single row
// 18.2 → 17.3 µs, 4× down 10.4 → 9.4, MoE decode 8 tokens 164.8 → 131.1 µs, batch-8 step 2.77 → 2.66 ms
// (batch 1 unchanged: 1.87 / 1.86).
//
// x is read into registers one step ahead (raw bf16; converted at the start of its step, after which the buffer takes
// the next step): from L2, or with GemvMxfp4Params::x_shared (single row, a candidate) from the CTA's x row, staged in
// shared memory by one bulk copy.
#include <cooperative_groups.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <atomic>

#include "kernels/cuda_utils.h"
#include "kernels/gemv_grouped.h"
#include "kernels/gemv_grouped_sm90.cuh"
#include "kernels/gemv_launch.h"
#include "kernels/gemv_mxfp4.h"
#include "kernels/mbarrier_sm90.cuh"
#include "kernels/mxfp4_tiled.h"
#include "kernels/swiglu.h"
#include "kernels/tma_sm90.cuh"

namespace gossamer::kernels {
namespace {

namespace cg = cooperative_groups;

constexpr int kTileRows = kMxfp4TileRows;  // 64 output rows per cluster: 4 MMA tiles of 16
constexpr int kNTiles = kTileRows / 16;
constexpr int kKStep = kMxfp4TileCols;        // 128 K columns per warp step
constexpr int kChunks = 8;                    // rows g + 8c of a step per lane: its 8 scale words
constexpr int kStageBytes = kMxfp4TileBytes;  // 4352
constexpr int kRedStride = kTileRows + 4;
// Dynamic shared memory of a (warps, stages) kernel: the warps' rings (rule: 8 × 3 × 4352 = 104,448).
constexpr int smem_bytes(int warps, int stages) {
  return warps * stages * kStageBytes;
}
// The most bytes of x a CTA stages (GemvMxfp4Params::x_shared): K ranges up to 4,096 columns.
constexpr int kXSharedMaxBytes = 8192;
// CTAs per SM the shape is built for (its __launch_bounds__ minimum): as many rings as fit in the SM's
// 228 KiB (1 KiB reserved per CTA). Rule 2 (≤ 128 registers), 4 warps × 3 stages 4 (≤ 128), × 4 stages 3.
constexpr int min_ctas_per_sm(int warps, int stages) {
  return (228 * 1024) / (smem_bytes(warps, stages) + 1024);
}
static_assert(min_ctas_per_sm(8, 3) == 2 && min_ctas_per_sm(4, 3) == 4 && min_ctas_per_sm(4, 4) == 3,
              "the shapes' occupancy (docs/kernels-hopper.md)");

// 2^(e − 127 + 14) for the E8M0 byte `byte` of word w: the block scale times the 2^14 that
// mxfp4_tiled_decode_word divided out. One byte permute and one multiply-add; valid for e ≤ 232 (the
// accumulation bound below; the checkpoints' experts use ≈ 110..127, and E8M0's 255 is NaN by the OCP format).
// block_scale_at takes the byte permute's selector (0x4440 + byte; bytes 4..7 select zero: 2^-113).
__device__ __forceinline__ float block_scale_at(uint32_t w, uint32_t selector) {
  return __uint_as_float(__byte_perm(w, 0u, selector) * (1u << 23) + (14u << 23));
}
__device__ __forceinline__ float block_scale(uint32_t w, int byte) {
  return block_scale_at(w, 0x4440u + static_cast<uint32_t>(byte));
}

// max(|a|, |b|) per bf16 half (the sign bits are the xor of the inputs'; a NaN half yields the other input's).
__device__ __forceinline__ uint32_t bf16x2_max_abs(uint32_t a, uint32_t b) {
  uint32_t d;
  asm("max.xorsign.abs.bf16x2 %0, %1, %2;\n" : "=r"(d) : "r"(a), "r"(b));
  return d;
}

// a · b per bf16 half, round to nearest even (exact for a power-of-two b while the product stays normal).
__device__ __forceinline__ uint32_t bf16x2_mul(uint32_t a, uint32_t b) {
  uint32_t d;
  asm("mul.rn.bf16x2 %0, %1, %2;\n" : "=r"(d) : "r"(a), "r"(b));
  return d;
}

// D (16×8 fp32) += A (16×16 f16, row) · B (16×8 f16, col).
__device__ __forceinline__ void mma_f16_16x8x16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Row tile nt's words of a ring stage: r0 row 16nt + g, r1 row 16nt + g + 8 (word j: MX block j).
__device__ __forceinline__ void row_tile_words(const uint8_t* stage, int nt, int lane, uint32_t (&r0)[4],
                                               uint32_t (&r1)[4]) {
  const uint4 u0 = *reinterpret_cast<const uint4*>(stage + (32 * (2 * nt) + lane) * 16);
  const uint4 u1 = *reinterpret_cast<const uint4*>(stage + (32 * (2 * nt + 1) + lane) * 16);
  r0[0] = u0.x, r0[1] = u0.y, r0[2] = u0.z, r0[3] = u0.w;
  r1[0] = u1.x, r1[1] = u1.y, r1[2] = u1.z, r1[3] = u1.w;
}

// One MX block of a row tile: its words w0 (row g) and w1 (row g + 8) decoded into the A fragments of two
// MMAs (logical K pairs as in the header), accumulated into d against B fragments b[0], b[1] (first MMA) and
// b[2], b[3] (second).
__device__ __forceinline__ void mx_block_mmas(float (&d)[4], uint32_t w0, uint32_t w1, const uint32_t* b) {
  uint32_t h0[4], h1[4];
  mxfp4_tiled_decode_word(w0, h0);
  mxfp4_tiled_decode_word(w1, h1);
  const uint32_t a0[4] = {h0[0], h1[0], h0[1], h1[1]}, a1[4] = {h0[2], h1[2], h0[3], h1[3]};
  mma_f16_16x8x16(d, a0, b[0], b[1]);
  mma_f16_16x8x16(d, a1, b[2], b[3]);
}

// x's words (bf16 pairs) into f16x2, scaled by 2^(14 − E), E = ⌊log2 max|x|⌋ over this lane's `m` (its
// bf16x2 |max|) and the lanes xor-shuffles below kSpan reach; returns the inverse factor 2^(E − 14).
// NOTE: the scaling is a bf16x2 multiply before the f32 → f16 rounding: exact, and so bit-identical to
// scaling in f32, for every element that stays a normal bf16; the others are < 2^-140 of the largest
// and round to f16 zero either way. (Subnormal bf16 inputs are kept: mul.bf16x2 has no flush-to-zero form.)
template <int kSpan, int kWords>
__device__ __forceinline__ float x_to_f16(const uint32_t (&x)[kWords], uint32_t (&h)[kWords], uint32_t m) {
  uint32_t amax_bits = max(m & 0x7FFF0000u, (m << 16) & 0x7FFF0000u);
  amax_bits = min(amax_bits, 0x7F800000u);
#pragma unroll
  for (int o = 1; o < kSpan; o <<= 1) amax_bits = max(amax_bits, __shfl_xor_sync(0xffffffffu, amax_bits, o));
  const int fe = min(max(268 - static_cast<int>(amax_bits >> 23), 1), 253);
  const uint32_t f2 = static_cast<uint32_t>(fe) * 0x00800080u;  // 2^(fe − 127) in both bf16 halves
#pragma unroll
  for (int i = 0; i < kWords; ++i) {
    const uint32_t y = bf16x2_mul(x[i], f2);
    const __half2 hy = __floats2half2_rn(__uint_as_float(y << 16), __uint_as_float(y & 0xFFFF0000u));
    h[i] = *reinterpret_cast<const uint32_t*>(&hy);
  }
  return __uint_as_float(static_cast<uint32_t>(254 - fe) << 23);
}

// The B fragments of one K step: `x` holds this lane's 32 bf16 of x row g (16 words), `h` receives them as
// 16 f16x2. The 128 columns of x row g (lanes 4g..4g+3) are scaled as in gemv_fp8_sm90.cu (x_to_f16).
// Returns the inverse factors of x rows 2t and 2t+1. All 32 lanes must call it.
__device__ __forceinline__ void x_fragment(const uint32_t (&x)[16], uint32_t (&h)[16], float& inv_even, float& inv_odd,
                                           int t) {
  uint32_t m[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) m[i] = bf16x2_max_abs(x[2 * i], x[2 * i + 1]);
#pragma unroll
  for (int i = 0; i < 4; ++i) m[i] = bf16x2_max_abs(m[i], m[i + 4]);
  m[0] = bf16x2_max_abs(bf16x2_max_abs(m[0], m[2]), bf16x2_max_abs(m[1], m[3]));
  const float inv = x_to_f16<4>(x, h, m[0]);
  inv_even = __shfl_sync(0xffffffffu, inv, 8 * t);
  inv_odd = __shfl_sync(0xffffffffu, inv, 8 * t + 4);
}

// The single-row kernel's B values of one K step: lane (g < 4, t) holds x row 0's columns 32g + 8t .. + 7
// (MX block g) as 4 bf16 words in `x` (zero on lanes g ≥ 4), `h` receives them as f16x2 scaled over the
// step's 128 columns (lanes 0..15), exactly as x_fragment stages x row 0. Returns the inverse factor. All 32
// lanes must call it.
__device__ __forceinline__ float x_fragment_single_row(const uint32_t (&x)[4], uint32_t (&h)[4]) {
  return x_to_f16<32>(x, h, bf16x2_max_abs(bf16x2_max_abs(x[0], x[1]), bf16x2_max_abs(x[2], x[3])));
}

// grid: x = tiles × cluster (a cluster's CTAs are consecutive in x), y = expert slot (grouped) or 1.
// block: kWarps × 32 threads; dynamic shared memory smem_bytes(kWarps, kStages) + x_bytes: x_bytes > 0 (single row
// only) stages the CTA's x row there (GemvMxfp4Params::x_shared), x_bytes ≥ its K range's bytes.
template <int kWarps, int kStages, bool kSwiGlu, bool kSingleRow>
__global__ void __launch_bounds__(kWarps * 32, min_ctas_per_sm(kWarps, kStages))
    gemv_mxfp4_kernel(const GemvMxfp4Params p, int cluster, int k_steps, int x_bytes) {
  static_assert(kGemvMaxRows % kWarps == 0, "the warp sum gives each warp whole x rows");
  static_assert(
      smem_bytes(kWarps, kStages) >= (kWarps + 1) * kGemvMaxRows * kRedStride * static_cast<int>(sizeof(float)),
      "the reduction buffers overlay the rings");
  constexpr int kRowsPerWarp = kGemvMaxRows / kWarps;       // x rows each warp sums (rule: 1)
  constexpr int kSlotRows = kSingleRow ? 1 : kGemvMaxRows;  // pairs per grouped slot
  // Dynamic: the warps' rings [warp][stage][4352 bytes] (a tile each); afterwards the partial sums.
  extern __shared__ __align__(16) uint8_t smem[];
  using RedRow = float[kGemvMaxRows][kRedStride];
  RedRow* red = reinterpret_cast<RedRow*>(smem);
  RedRow& part = *reinterpret_cast<RedRow*>(smem + kWarps * sizeof(RedRow));
  __shared__ GemvGroupedSmem gs;  // grouped mode

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;
  const int rank = cluster > 1 ? static_cast<int>(cg::this_cluster().block_rank()) : 0;
  const int n0 = static_cast<int>(blockIdx.x) / cluster * kTileRows;
  const int ks_begin = rank * k_steps / cluster;
  const int ks_end = (rank + 1) * k_steps / cluster;
  const bool grouped = gemv_grouped(p);

  // ---- x row staged in shared memory (single row, x_bytes > 0): one bulk copy of columns [128·ks_begin,
  //      min(K, 128·ks_end)) on x_full; before the PDL wait where x is from an earlier kernel (row 0) ----
  uint8_t* const x_smem = smem + smem_bytes(kWarps, kStages);
  __shared__ uint64_t x_full;
  const bool x_staged = kSingleRow && x_bytes > 0;
  const bool x_early = x_staged && p.x_from_earlier_kernel;
  auto stage_x = [&](int x_row) {
    if (threadIdx.x == 0) {
      const int bytes = 2 * (min(p.K, ks_end * kKStep) - ks_begin * kKStep);
      tma::arrive_expect_tx(&x_full, bytes);
      tma::copy_bulk(x_smem, p.x + static_cast<int64_t>(x_row) * p.ldx + ks_begin * kKStep, bytes, &x_full);
    }
  };
  if (x_staged) {
    if (threadIdx.x == 0) {
      mbar::init(&x_full, 1);
      tma::fence_barrier_init();
    }
    __syncthreads();
    if (x_early) stage_x(0);
  }

  // ---- grouped: group the pairs by local expert, pick this CTA's slot ----
  int rows = p.M;
  int group = 0;
  const bool wait_first = grouped && !p.topk_from_earlier_kernel;
  if (grouped) {
    if (wait_first) {
      pdl_wait();
      pdl_trigger();
    }
    if (!gemv_grouped_prologue<kSlotRows>(p, gs, rows, group)) {
      if (x_early) mbar::wait(&x_full, 0);  // no CTA leaves with a copy into its shared memory in flight
      return;
    }
  }

  // ---- this warp's tiles and ring ----
  const uint8_t* w_tiles =
      p.w + group * mxfp4_tiled_group_bytes(p.N, p.K) + static_cast<int64_t>(n0 / kTileRows) * k_steps * kStageBytes;
  uint8_t* ring = smem + warp * kStages * kStageBytes;
  // The warp's stage barriers (one arrival, lane 0's, plus the tile's bytes per fill).
  __shared__ uint64_t stage_full[kWarps * kStages];
  uint64_t* full = stage_full + warp * kStages;
  if (lane == 0) {
#pragma unroll
    for (int s = 0; s < kStages; ++s) mbar::init(&full[s], 1);
    tma::fence_barrier_init();
  }
  __syncwarp();

  // Tile `step` into ring stage `stage` by one bulk copy (nothing past the end).
  auto issue = [&](int step, int stage) {
    if (step < ks_end && lane == 0) {
      tma::arrive_expect_tx(&full[stage], kStageBytes);
      tma::copy_bulk(ring + stage * kStageBytes, w_tiles + static_cast<int64_t>(step) * kStageBytes, kStageBytes,
                     &full[stage]);
    }
  };
#pragma unroll
  for (int s = 0; s < kStages; ++s) issue(ks_begin + warp + s * kWarps, s);
  if (!wait_first) {
    pdl_wait();
    pdl_trigger();
  }

  // x of K step `step`: this lane's 4 × 8 bf16 of x row g (columns 128·step + 32j + 8t), zero outside;
  // single row: lanes g < 4 hold 8 bf16 of x row 0 (columns 128·step + 32g + 8t), the others zero.
  constexpr int kXBlocks = kSingleRow ? 1 : 4;  // 8-column pieces of x per lane and step
  const bool has_x = kSingleRow ? g < 4 && rows > 0 : g < rows;
  const uint16_t* x_lane = p.x;
  if (has_x) {
    const int x_row =
        kSingleRow ? (grouped ? gs.pair[0] / p.x_pair_divisor : 0) : (grouped ? gs.pair[g] / p.x_pair_divisor : g);
    x_lane = p.x + static_cast<int64_t>(x_row) * p.ldx + (kSingleRow ? 32 * g : 0) + 8 * t;
  }
  if (x_staged && !x_early) {
    stage_x(grouped ? gs.pair[0] / p.x_pair_divisor : 0);
  }
  if (x_staged) mbar::wait(&x_full, 0);
  // The staged row: this lane's columns 128·step + 32g + 8t at byte 2 · (column − 128·ks_begin).
  auto x_smem_at = [&](int step) {
    return reinterpret_cast<const uint4*>(x_smem + 2 * ((step - ks_begin) * kKStep + 32 * g + 8 * t));
  };
  auto load_x = [&](int step, uint32_t(&xr)[4 * kXBlocks]) {
#pragma unroll
    for (int j = 0; j < kXBlocks; ++j) {
      const int col = step * kKStep + 32 * (kSingleRow ? g : j);
      if (step < ks_end && has_x && col < p.K) {
        const uint4 a =
            x_staged ? *x_smem_at(step) : __ldcg(reinterpret_cast<const uint4*>(x_lane + step * kKStep + 32 * j));
        xr[4 * j] = a.x, xr[4 * j + 1] = a.y, xr[4 * j + 2] = a.z, xr[4 * j + 3] = a.w;
      } else {
        xr[4 * j] = xr[4 * j + 1] = xr[4 * j + 2] = xr[4 * j + 3] = 0u;
      }
    }
  };
  uint32_t x_raw[4 * kXBlocks];  // bf16 pairs of the next step (loaded one step ahead)
  load_x(ks_begin + warp, x_raw);
  // Single row: lane g's B registers take part only in the MMAs of block j = g.
  uint32_t block_mask[4];
#pragma unroll
  for (int j = 0; j < 4; ++j) block_mask[j] = g == j ? 0xFFFFFFFFu : 0u;
  const uint32_t scale_sel = 0x4440u + 2u * static_cast<uint32_t>(t);  // single row: block 2t's byte

  // ---- main loop: one K step per iteration; consume the oldest stage, refill it kStages·kWarps later ----
  float acc[kNTiles][4] = {};
  int s = 0;            // the step's ring stage
  uint32_t parity = 0;  // the phase of stage s's barrier this pass of the ring waits for
#pragma unroll 1
  for (int step = ks_begin + warp; step < ks_end; step += kWarps) {
    mbar::wait(&full[s], parity);
    const uint8_t* stage = ring + s * kStageBytes;
    // Word c: the 4 block scales (a byte each) of row 8c + g, so words 2nt and 2nt + 1 are rows g and g + 8
    // of MMA row tile nt.
    const uint4 sa = *reinterpret_cast<const uint4*>(stage + 4096 + 32 * g);
    const uint4 sb = *reinterpret_cast<const uint4*>(stage + 4096 + 32 * g + 16);
    const uint32_t sw[kChunks] = {sa.x, sa.y, sa.z, sa.w, sb.x, sb.y, sb.z, sb.w};
    // The step's B fragments per MX block j: x rows g (general), or x row 0 in column j only (single row).
    uint32_t b[4][4];
    float inv_even, inv_odd;
    if constexpr (kSingleRow) {
      uint32_t xh[4];  // f16x2 of x row 0, block g's columns 8t .. 8t + 7
      inv_even = inv_odd = x_fragment_single_row(x_raw, xh);
#pragma unroll
      for (int j = 0; j < 4; ++j) {
#pragma unroll
        for (int i = 0; i < 4; ++i) b[j][i] = xh[i] & block_mask[j];
      }
    } else {
      x_fragment(x_raw, reinterpret_cast<uint32_t(&)[16]>(b), inv_even, inv_odd, t);
    }
    load_x(step + kWarps, x_raw);
#pragma unroll
    for (int nt = 0; nt < kNTiles; ++nt) {
      uint32_t r0[4], r1[4];
      row_tile_words(stage, nt, lane, r0, r1);
      if constexpr (kSingleRow) {
        // D column j accumulates block j's two MMAs (exact zeros from the other blocks' MMAs): lane (g, t)
        // ends with blocks 2t and 2t + 1 of rows g (d[0], d[1]) and g + 8 (d[2], d[3]); zero for t ≥ 2.
        float d[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
        for (int j = 0; j < 4; ++j) mx_block_mmas(d, r0[j], r1[j], b[j]);
        // Blocks 2t, 2t + 1 (t ≥ 2: bytes past the word, scale 2^-113 on a zero column).
        const float s0 = block_scale_at(sw[2 * nt], scale_sel), s1 = block_scale_at(sw[2 * nt], scale_sel + 1);
        const float s2 = block_scale_at(sw[2 * nt + 1], scale_sel), s3 = block_scale_at(sw[2 * nt + 1], scale_sel + 1);
        acc[nt][0] = fmaf(fmaf(d[1], s1, d[0] * s0), inv_even, acc[nt][0]);
        acc[nt][2] = fmaf(fmaf(d[3], s3, d[2] * s2), inv_even, acc[nt][2]);
      } else {
        // The step's sum Σ_j d_j · 2^(e_j − 113), then one multiply by x's inverse factors: the same products
        // as scaling each block by (block scale · inverse factor), both powers of two (exact while the step
        // sum stays finite: |d| ≤ 2^15 · 6 · 2^-14 · 32 < 2^9, so e ≤ 232).
        float step_sum[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          float d[4] = {0.f, 0.f, 0.f, 0.f};
          mx_block_mmas(d, r0[j], r1[j], b[j]);
          const float s0 = block_scale(sw[2 * nt], j), s1 = block_scale(sw[2 * nt + 1], j);
          step_sum[0] = fmaf(d[0], s0, step_sum[0]);
          step_sum[1] = fmaf(d[1], s0, step_sum[1]);
          step_sum[2] = fmaf(d[2], s1, step_sum[2]);
          step_sum[3] = fmaf(d[3], s1, step_sum[3]);
        }
        acc[nt][0] = fmaf(step_sum[0], inv_even, acc[nt][0]);
        acc[nt][1] = fmaf(step_sum[1], inv_odd, acc[nt][1]);
        acc[nt][2] = fmaf(step_sum[2], inv_even, acc[nt][2]);
        acc[nt][3] = fmaf(step_sum[3], inv_odd, acc[nt][3]);
      }
    }
    __syncwarp();  // every lane has read the stage before lane 0 refills it
    issue(step + kStages * kWarps, s);
    if (++s == kStages) s = 0, parity ^= 1u;
  }
  __syncthreads();  // the rings become the reduction buffers (every bulk copy issued was waited for above)

  // ---- sum over warps (fixed order) ----
  if constexpr (kSingleRow) {  // x row 0 only: lanes t = 0, 1 hold blocks {0, 1} and {2, 3} of each row
#pragma unroll
    for (int nt = 0; nt < kNTiles; ++nt) {
      acc[nt][0] += __shfl_xor_sync(0xffffffffu, acc[nt][0], 1);
      acc[nt][2] += __shfl_xor_sync(0xffffffffu, acc[nt][2], 1);
      if (t == 0) {
        red[warp][0][16 * nt + g] = acc[nt][0];
        red[warp][0][16 * nt + g + 8] = acc[nt][2];
      }
    }
  }
#pragma unroll
  for (int nt = 0; nt < kNTiles && !kSingleRow; ++nt) {
    const int r = 16 * nt + g;
    red[warp][2 * t][r] = acc[nt][0];
    red[warp][2 * t + 1][r] = acc[nt][1];
    red[warp][2 * t][r + 8] = acc[nt][2];
    red[warp][2 * t + 1][r + 8] = acc[nt][3];
  }
  __syncthreads();
  // Thread (warp, lane) sums x rows m = warp + kWarps·i, output columns c, c + 1.
  const int c = 2 * lane;
  float2 sum[kRowsPerWarp];
#pragma unroll
  for (int i = 0; i < kRowsPerWarp; ++i) {
    const int m = warp + kWarps * i;
    sum[i] = make_float2(0.f, 0.f);
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      const float2 v = *reinterpret_cast<const float2*>(&red[w][m][c]);
      sum[i].x += v.x;
      sum[i].y += v.y;
    }
  }

  // ---- sum over the cluster's CTAs (rank order) ----
  if (cluster > 1) {
#pragma unroll
    for (int i = 0; i < kRowsPerWarp; ++i) *reinterpret_cast<float2*>(&part[warp + kWarps * i][c]) = sum[i];
    cg::cluster_group cl = cg::this_cluster();
    cl.sync();
    if (rank == 0) {
      for (int r = 1; r < cluster; ++r) {
#pragma unroll
        for (int i = 0; i < kRowsPerWarp; ++i) {
          const float2 v = *reinterpret_cast<const float2*>(cl.map_shared_rank(&part[warp + kWarps * i][c], r));
          sum[i].x += v.x;
          sum[i].y += v.y;
        }
      }
    }
  }

  // ---- epilogue (rank 0): bias, SwiGLU or plain, bf16 ----
  const int n = n0 + c;
#pragma unroll
  for (int i = 0; i < kRowsPerWarp; ++i) {
    const int m = warp + kWarps * i;
    if (rank == 0 && m < rows && n < p.N) {
      float v0 = sum[i].x, v1 = sum[i].y;
      if (p.bias) {
        const uint32_t bb = *reinterpret_cast<const uint32_t*>(p.bias + static_cast<int64_t>(group) * p.N + n);
        v0 += __uint_as_float(bb << 16);
        v1 += __uint_as_float(bb & 0xFFFF0000u);
      }
      const int out_row = grouped ? gs.pair[m] : m;
      uint16_t* out = p.out + static_cast<int64_t>(out_row) * p.ldc;
      if constexpr (kSwiGlu) {
        const __nv_bfloat16 h = __float2bfloat16_rn(swiglu_clamped(v0, v1));
        out[n / 2] = *reinterpret_cast<const uint16_t*>(&h);
      } else {
        *reinterpret_cast<__nv_bfloat162*>(out + n) = __floats2bfloat162_rn(v0, v1);
      }
    }
  }
  // NOTE: no CTA of a cluster exits while rank 0 may still read its `part` (distributed shared memory).
  if (cluster > 1) cg::this_cluster().sync();
}

// Once per (instantiation, device): the dynamic shared memory limit, and a check that the occupancy the
// shape was built for holds.
template <int kWarps, int kStages, bool kSwiGlu, bool kSingleRow>
void prepare_kernel(int device) {
  static std::atomic<uint64_t> done{0};
  const uint64_t bit = uint64_t(1) << (device & 63);
  if (done.load(std::memory_order_acquire) & bit) return;
  auto* kernel = gemv_mxfp4_kernel<kWarps, kStages, kSwiGlu, kSingleRow>;
  constexpr int kSmem = smem_bytes(kWarps, kStages);
  GOSSAMER_CUDA_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem + kXSharedMaxBytes));
  int blocks = 0;
  GOSSAMER_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, kWarps * 32, kSmem));
  GOSSAMER_CHECK(blocks >= min_ctas_per_sm(kWarps, kStages), "gemv_mxfp4: ", kWarps, " warps × ", kStages,
                 " stages: ", blocks, " CTAs per SM resident, built for ", min_ctas_per_sm(kWarps, kStages));
  done.fetch_or(bit, std::memory_order_release);
}

struct ShapeConfig {
  int warps, stages;
  int cluster;  // 0: the rule's (gemv_cluster_size)
};
// `ctas`: the grid's row tiles × slots. kRule: 8 warps × 3 stages, or 4 × 4 (cluster 1) where the 8-warp grid
// needs a second wave (more than 2 CTAs per SM) and the 4-warp one fits in one (3 per SM); an explicit cluster
// keeps 8 warps.
ShapeConfig shape_config(GemvMxfp4Shape shape, int64_t ctas, int sms, int requested_cluster) {
  switch (shape) {
    case GemvMxfp4Shape::kRule:
      if (requested_cluster == 0 && ctas > min_ctas_per_sm(8, 3) * int64_t{sms} &&
          ctas <= min_ctas_per_sm(4, 4) * int64_t{sms}) {
        return {4, 4, 1};
      }
      return {8, 3, 0};
    case GemvMxfp4Shape::kWarps4: return {4, 3, 1};
    case GemvMxfp4Shape::kWarps4Stages4: return {4, 4, 1};
  }
  GOSSAMER_CHECK(false, "gemv_mxfp4: unknown launch shape ", static_cast<int>(shape));
  return {};
}

struct LaunchGeometry {
  int tiles, slots, k_steps;  // grid: tiles × cluster by slots; K steps per row tile
  int device, sms;
  bool single_row;  // the kSingleRow kernel (GemvMxfp4Params::single_row where it applies)
};

template <int kWarps, int kStages, bool kSwiGlu, bool kSingleRow>
void launch_kernel(cudaLaunchConfig_t& cfg, const GemvMxfp4Params& p, const LaunchGeometry& geo, int cluster,
                   int x_bytes) {
  prepare_kernel<kWarps, kStages, kSwiGlu, kSingleRow>(geo.device);
  GOSSAMER_CUDA_CHECK(cudaLaunchKernelEx(&cfg, gemv_mxfp4_kernel<kWarps, kStages, kSwiGlu, kSingleRow>, p, cluster,
                                         geo.k_steps, x_bytes));
}

// The bytes of x a single-row CTA stages (GemvMxfp4Params::x_shared): its K range's, or 0 where they exceed
// kXSharedMaxBytes or would cost the shape a CTA per SM (228 KiB, 1 KiB reserved and ≤ 512 bytes of static
// shared memory per CTA).
template <int kWarps, int kStages>
int x_shared_bytes(const GemvMxfp4Params& p, const LaunchGeometry& geo, int cluster) {
  if (!p.x_shared || !geo.single_row) return 0;
  const int bytes = 2 * kKStep * ceil_div(geo.k_steps, cluster);
  const bool fits = (smem_bytes(kWarps, kStages) + bytes + 1024 + 512) * min_ctas_per_sm(kWarps, kStages) <= 228 * 1024;
  return bytes <= kXSharedMaxBytes && fits ? bytes : 0;
}

// Launches the (kWarps, kStages) kernel; `cluster` 0 = the rule's (gemv_cluster_size with p.cluster).
template <int kWarps, int kStages>
void launch_shape(const GemvMxfp4Params& p, const LaunchGeometry& geo, int cluster, cudaStream_t stream) {
  if (cluster == 0) {
    cluster = gemv_cluster_size(geo.tiles, geo.slots, geo.k_steps, kWarps, geo.sms, p.cluster, "gemv_mxfp4");
  }

  const int x_bytes = x_shared_bytes<kWarps, kStages>(p, geo, cluster);
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(static_cast<unsigned>(geo.tiles * cluster), static_cast<unsigned>(geo.slots), 1);
  cfg.blockDim = dim3(kWarps * 32, 1, 1);
  cfg.dynamicSmemBytes = smem_bytes(kWarps, kStages) + x_bytes;
  cfg.stream = stream;
  ClusterPdlAttributes attrs(cluster, p.programmatic_launch);
  attrs.apply(cfg);
  const bool swiglu = p.epilogue == GemmEpilogue::kSwiGlu;
  if (geo.single_row) {
    return swiglu ? launch_kernel<kWarps, kStages, true, true>(cfg, p, geo, cluster, x_bytes)
                  : launch_kernel<kWarps, kStages, false, true>(cfg, p, geo, cluster, x_bytes);
  }
  return swiglu ? launch_kernel<kWarps, kStages, true, false>(cfg, p, geo, cluster, 0)
                : launch_kernel<kWarps, kStages, false, false>(cfg, p, geo, cluster, 0);
}

}  // namespace

const char* gemv_mxfp4_shape_name(GemvMxfp4Shape shape) {
  switch (shape) {
    case GemvMxfp4Shape::kRule: return "rule";
    case GemvMxfp4Shape::kWarps4: return "warps=4";
    case GemvMxfp4Shape::kWarps4Stages4: return "warps=4 stages=4";
  }
  return "?";
}

void launch_gemv_mxfp4(const GemvMxfp4Params& p, cudaStream_t stream) {
  const bool grouped = gemv_grouped(p);
  const bool swiglu = p.epilogue == GemmEpilogue::kSwiGlu;
  GOSSAMER_CHECK(p.K > 0 && p.K % 32 == 0 && p.N > 0 && p.N % 8 == 0, "gemv_mxfp4: K (", p.K,
                 ") must be a positive multiple of 32 and N (", p.N, ") of 8");
  // The single-row kernel: dense M = 1, or ≤ kMoeTopK grouped pairs (one pair per slot).
  const bool single_row = p.single_row && (grouped ? p.num_pairs <= kMoeTopK : p.M == 1);
  int slots = 1;
  if (grouped) {
    slots = gemv_grouped_slots(p, "gemv_mxfp4", single_row ? 1 : kGemvMaxRows);
  } else {
    GOSSAMER_CHECK(p.M >= 0 && p.M <= kGemvMaxRows, "gemv_mxfp4: M (", p.M, ") must be ≤ ", kGemvMaxRows);
    if (p.M == 0) return;
  }
  GOSSAMER_CHECK(p.x && p.w && p.out, "gemv_mxfp4: null operand");
  GOSSAMER_CHECK(p.ldx >= p.K && p.ldx % 8 == 0, "gemv_mxfp4: ldx (", p.ldx, ") must be ≥ K and a multiple of 8");
  GOSSAMER_CHECK(p.ldc >= (swiglu ? p.N / 2 : p.N) && (swiglu || p.ldc % 2 == 0), "gemv_mxfp4: bad ldc ", p.ldc);
  GOSSAMER_CHECK(reinterpret_cast<uintptr_t>(p.x) % 16 == 0 && reinterpret_cast<uintptr_t>(p.w) % 16 == 0 &&
                     reinterpret_cast<uintptr_t>(p.out) % (swiglu ? 2 : 4) == 0 &&
                     reinterpret_cast<uintptr_t>(p.bias) % 4 == 0,
                 "gemv_mxfp4: x and w must be 16-byte aligned, bias 4-byte aligned, out 4-byte aligned (kBias)");
  int device = 0;
  GOSSAMER_CUDA_CHECK(cudaGetDevice(&device));
  const int sms = sm_count(device);
  const int k_steps = ceil_div(p.K, kKStep);
  const int tiles = ceil_div(p.N, kTileRows);
  GOSSAMER_CHECK(p.shape == GemvMxfp4Shape::kRule || p.cluster == 0, "gemv_mxfp4: shape ",
                 gemv_mxfp4_shape_name(p.shape), " fixes its cluster (cluster ", p.cluster, " given)");
  const ShapeConfig shape = shape_config(p.shape, int64_t{tiles} * slots, sms, p.cluster);
  const LaunchGeometry geo{tiles, slots, k_steps, device, sms, single_row};
  // The staged x row is copied before the PDL wait only where it is row 0 for every CTA.
  GemvMxfp4Params q = p;
  q.x_from_earlier_kernel = p.x_from_earlier_kernel && (!grouped || p.num_pairs <= p.x_pair_divisor);
  if (shape.warps == 8) {
    launch_shape<8, 3>(q, geo, shape.cluster, stream);
  } else if (shape.stages == 3) {
    launch_shape<4, 3>(q, geo, shape.cluster, stream);
  } else {
    launch_shape<4, 4>(q, geo, shape.cluster, stream);
  }
}

}  // namespace gossamer::kernels
