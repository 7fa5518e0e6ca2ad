// W4A16 GEMM (gemm_w4a16.h) on sm_90a. Persistent: one CTA per SM walks the work units (weight tiles fastest), in
// clusters of 2 CTAs that compute neighbouring weight tiles of one token tile and share its activations: each loads
// one half and multicasts it to both.
//
// A CTA computes 256 weight rows × 128 tokens (or 64, 32 or 16: narrow tiles for experts of few rows, Shape below; the
// text below speaks of 128) with 384 threads:
//   warpgroup 0  producer: thread 0 issues, per K block of 128, the activations' tensor copies (its 64 tokens, both
//                K halves of 64 bf16, 128B-swizzled, multicast) and four flat bulk copies of the weights as stored
//                (the four 64-row MXFP4 tiles of mxfp4_tiled.h, 4,352 bytes each) into a ring of kStages stages, each
//                guarded by a full barrier and an empty barrier (the 8 consumer warps of both CTAs arrive: a stage
//                is refilled only once the peer released it too);
//   warpgroups 1 and 2  consumers: weight rows 0–127 and 128–255, each as two row blocks of 64 (one MXFP4 tile each).
//                Per K block and row block every warp loads its 16 rows' two 16-byte code units and scale words (lane
//                (g, t): rows 16w + g and 16w + g + 8 — for gate_up the gate / up pair 16w + 2g, 16w + 2g + 1,
//                fragment_rows — columns 8t … 8t + 7 of each MX block), decodes them into the
//                bf16 A fragments of the eight k16 steps (mxfp4_tiled_decode_word_bf16, then one bf16x2 multiply by
//                2^(e − 1)) and runs eight wgmma m64n128k16 with A from those registers and B the activations in
//                shared memory straight into the row block's accumulators (the tile's first wgmma overwrites them;
//                the bias, two values a thread and row block, is added in the epilogue). Two sets of fragments: the
//                next (K block, row block) is decoded while this one's wgmma run, and a stage is released once its
//                K block's last group completed. Each finished row block (weight rows × tokens) is written transposed
//                through the warpgroup's staging buffer ([128 tokens][64 bf16], or 32 SwiGLU outputs: a thread holds
//                its outputs' gate and up rows), then copied out by the warpgroup in 16-byte pieces of whole
//                token rows.
// Two row blocks a warpgroup (256 rows a CTA) rather than one: each activation byte brought into shared memory feeds
// twice the MMAs (H100, 2026-12-07: 8,192 tokens E = 32 route → combine 3,582 against 3,808 µs; wider token tiles of
// 192 and 256 with one row block lost everywhere: docs/PERF.md). The exponent vote outside the MX blocks' loop, the
// warpgroup's copy-out and wgmma::desc_plus took 8–10% off route → combine (H100, 2026-12-07, thirtieth session:
// 8,192 tokens E = 32 3,332 against 3,700 µs); three consumer warpgroups of one row block each measured slower.
// The producer gives its registers to the consumers (setmaxnreg). A rank past the last weight tile (an odd tile
// count) loads and computes its peer's tile for the shared activations' and the barriers' sake and writes nothing;
// a warpgroup whose rows lie wholly past N skips its decode and wgmma but keeps the barrier protocol. Rows past N
// and K past the real columns decode the layout's padding (code 0) and the activations' zero fill: zeros.
#include <cuda_bf16.h>

#include <algorithm>
#include <type_traits>

#include "kernels/cuda_utils.h"
#include "kernels/gemm_mxfp4_pair_sm90.cuh"
#include "kernels/gemm_w4a16.h"
#include "kernels/mbarrier_sm90.cuh"
#include "kernels/mxfp4_tiled.h"
#include "kernels/swiglu.h"
#include "kernels/tma_sm90.cuh"
#include "kernels/wgmma_bf16_sm90.cuh"

namespace gossamer::kernels {
namespace {

constexpr int kBK = 128;                // K per stage: one MXFP4 tile's columns
constexpr int kOutPitch = 2 * 64 + 16;  // a staged token row: 64 bf16 and 16 bytes (conflict-free)
constexpr int kWideTokens = 128;
constexpr int kNarrowTokens[] = {16, 32, 64};  // the narrow tiles, narrowest first (gemm_w4a16_tile_rows)

// The plan of a kernel with token tiles of kTileT (the n of wgmma): 2 consumer warpgroups of two 64-row blocks (256
// weight rows) at every tile; 128 tokens (3 stages: a fourth does not fit beside the staging buffers), or 64, 32 or 16
// for experts of few rows (6 stages of 34 KiB at 64, 8 of 26 / 22 KiB at 32 / 16: the weights are then what the kernel
// streams, so it keeps more of them in flight).
template <int kTileT>
struct Shape {
  static constexpr bool kWide = kTileT == kWideTokens;
  static constexpr int kConsumers = 2;                      // consumer warpgroups
  static constexpr int kBlocks = 2;                         // 64-row weight blocks per consumer warpgroup
  static constexpr int kTileW = 64 * kBlocks * kConsumers;  // weight rows per CTA
  static constexpr int kThreads = 128 * (1 + kConsumers);
  static constexpr int kStages = kWide ? 3 : kTileT == 64 ? 6 : 8;
  // One K half of the activations: [kTileT tokens][64 bf16], 128B-swizzled.
  static constexpr int kHalfBytes = kTileT * 128;
  static constexpr int kXBytes = 2 * kHalfBytes;
  static constexpr int kStageBytes =
      (kXBytes + kTileW / 64 * kMxfp4TileBytes + 1023) / 1024 * 1024;  // activations, weights
  static constexpr int kBarOffset = kStages * kStageBytes;             // full[kStages], empty[kStages]
  static constexpr int kOutOffset = kBarOffset + 2 * kStages * 8;
  static constexpr int kOutBytes = kTileT * kOutPitch;  // one consumer warpgroup's staging buffer
  static constexpr int kSmemBytes = 1024 + kOutOffset + kConsumers * kOutBytes;
  // Registers after reallocation: 128 · producer + 128 · kConsumers · consumer ≤ what the launch allocates (65,536 /
  // kThreads, in multiples of 8). A wide consumer thread holds 2 · 64 accumulators and two fragment sets (64), without
  // spills.
  static constexpr int kLaunchRegs = 65536 / kThreads / 8 * 8;
  static constexpr int kProducerRegs = 56, kConsumerRegs = 224;
  static_assert(kStageBytes % 1024 == 0 && kHalfBytes % 1024 == 0, "activations 1024-byte aligned (128B swizzle)");
  static_assert(kOutOffset % 16 == 0, "staging buffers 16-byte aligned (16-byte loads)");
  static_assert(kSmemBytes <= 227 * 1024, "a CTA's shared memory");
  static_assert(128 * kProducerRegs + 128 * kConsumers * kConsumerRegs <= kThreads * kLaunchRegs,
                "more registers than the launch holds");
};

using namespace mxfp4_pair;  // Walk, Coord, kCluster, release, FragmentRows, launch_units

__device__ __forceinline__ uint32_t mul_bf16x2(uint32_t a, uint32_t b) {
  uint32_t d;
  asm("mul.rn.bf16x2 %0, %1, %2;\n" : "=r"(d) : "r"(a), "r"(b));
  return d;
}

// 2^(e − 1) in both bf16 halves for an E8M0 byte e ≤ 128 (exponent field e + 126).
__device__ __forceinline__ uint32_t pow2_bf16x2(uint32_t e) {
  return e * 0x00800080u + 0x3F003F00u;
}

// MX block j of the lane's two code words (w0: fragment row g, w1: g + 8) as bf16 A fragment values a[2j + s] (s = 0:
// values 0–3 of the word, s = 1: values 4–7; row g into registers 0 / 2, row g + 8 into 1 / 3), each fp4 · 2^-126
// times 2^(e − 1): one multiply (kLarge: two, for exponents past 128: 2^(e − 1) then lies past bf16's range).
template <bool kLarge>
__device__ __forceinline__ void decode_block(uint32_t w0, uint32_t w1, uint32_t e0, uint32_t e1, uint32_t (&a0)[4],
                                             uint32_t (&a1)[4]) {
  uint32_t o0[4], o1[4];
  mxfp4_tiled_decode_word_bf16(w0, o0);
  mxfp4_tiled_decode_word_bf16(w1, o1);
  if constexpr (kLarge) {  // 2^(e − 1) = 2^(min(e, 128) − 1) · 2^(max(e, 128) − 128), each a bf16
    const uint32_t lo0 = pow2_bf16x2(min(e0, 128u)), lo1 = pow2_bf16x2(min(e1, 128u));
    const uint32_t hi0 = (max(e0, 128u) - 1) * 0x00800080u, hi1 = (max(e1, 128u) - 1) * 0x00800080u;
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      o0[q] = mul_bf16x2(mul_bf16x2(o0[q], lo0), hi0);
      o1[q] = mul_bf16x2(mul_bf16x2(o1[q], lo1), hi1);
    }
  } else {
    const uint32_t m0 = pow2_bf16x2(e0), m1 = pow2_bf16x2(e1);
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      o0[q] = mul_bf16x2(o0[q], m0);
      o1[q] = mul_bf16x2(o1[q], m1);
    }
  }
  a0[0] = o0[0];
  a0[2] = o0[1];
  a1[0] = o0[2];
  a1[2] = o0[3];
  a0[1] = o1[0];
  a0[3] = o1[1];
  a1[1] = o1[2];
  a1[3] = o1[3];
}

// One warp's 16 weight rows of the K block in the stage's raw weights at `raw` (the lane's: `rows`) as the bf16 A
// fragments of its eight k16 steps (decode_block for each MX block j). The exponent test is one vote for the whole K
// block, outside the blocks' loop, so that the common path is one branch-free block the compiler can interleave (with
// the branch inside the loop, 2026-12-07's ncu source profile showed the decode's dependent chains stalled one MX block
// at a time).
__device__ __forceinline__ void load_fragments(uint32_t raw, const FragmentRows& rows, uint32_t (&a)[8][4]) {
  const uint4 u0 = mbar::ld_shared_v4(raw + rows.unit[0]);
  const uint4 u1 = mbar::ld_shared_v4(raw + rows.unit[1]);
  const uint2 sw = {mbar::ld_shared_u32(raw + rows.scales[0]), mbar::ld_shared_u32(raw + rows.scales[1])};
  const uint32_t w0[4] = {u0.x, u0.y, u0.z, u0.w}, w1[4] = {u1.x, u1.y, u1.z, u1.w};
  if (__any_sync(0xffffffffu, ((sw.x | sw.y) & 0x80808080u) != 0)) {  // some e ≥ 128 (no real checkpoint's)
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      decode_block<true>(w0[j], w1[j], (sw.x >> (8 * j)) & 0xFFu, (sw.y >> (8 * j)) & 0xFFu, a[2 * j], a[2 * j + 1]);
    }
  } else {
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      decode_block<false>(w0[j], w1[j], (sw.x >> (8 * j)) & 0xFFu, (sw.y >> (8 * j)) & 0xFFu, a[2 * j], a[2 * j + 1]);
    }
  }
}

// Consumer warpgroup cw's finished row block — 64 weight rows from n_first (< N) × 128 tokens — into its staging
// buffer (token rows; kBias: the 64 outputs, kSwiGlu: the 32 SwiGLU outputs of the gate / up row pairs, in register
// order with out_register_order), then copied to out by the warpgroup (copy_rows). Every thread of the warpgroup
// calls it (named barrier 1 + cw), once per row block; the first barrier also orders the previous call's copies
// (loads whose values the stores consumed) before this call's staging writes, so one buffer serves both blocks.
// (Measured 2026-12-07, ncu source profile: a bulk copy per token row, as before, is issued lane by lane — its
// operands are uniform registers — and those loops were a third of the epilogue's samples.)
template <int kTileT>
__device__ __forceinline__ void write_out(const GemmW4A16Params& p, const float (&acc)[kTileT / 2], const Coord& c,
                                          int n_first, int cw, uint8_t* buf) {
  const int wt = static_cast<int>(threadIdx.x) % 128, warp = wt / 32, lane = wt % 32, g = lane / 4, t = lane % 4;
  const uint32_t staging = tma::smem_u32(buf);
  mbar::named_sync(1 + cw, 128);
  const bool swiglu = p.epilogue == GemmEpilogue::kSwiGlu;
  // kSwiGlu: fragment rows g and g + 8 are the gate and up rows (fragment_rows) of this thread's output 8·warp + g of
  // the warpgroup's 32.
  const int o = 8 * warp + g;
  const uint32_t col = 2 * (p.out_register_order ? w4a16_source_column(o) : o);
#pragma unroll
  for (int j = 0; j < kTileT / 8; ++j) {
    const int token = 8 * j + 2 * t;  // acc[4j + 0 / 2]: fragment rows g, g + 8; acc[4j + 1 / 3]: token + 1
    if (swiglu) {
      const uint32_t row = staging + token * kOutPitch + col;
      mbar::st_shared_u16(row, __bfloat16_as_ushort(__float2bfloat16_rn(swiglu_clamped(acc[4 * j], acc[4 * j + 2]))));
      mbar::st_shared_u16(row + kOutPitch,
                          __bfloat16_as_ushort(__float2bfloat16_rn(swiglu_clamped(acc[4 * j + 1], acc[4 * j + 3]))));
    } else {
      const uint32_t col = 2 * (16 * warp + g);
      const uint32_t row_a = staging + token * kOutPitch + col, row_b = row_a + kOutPitch;
      mbar::st_shared_u16(row_a, __bfloat16_as_ushort(__float2bfloat16_rn(acc[4 * j])));
      mbar::st_shared_u16(row_b, __bfloat16_as_ushort(__float2bfloat16_rn(acc[4 * j + 1])));
      mbar::st_shared_u16(row_a + 16, __bfloat16_as_ushort(__float2bfloat16_rn(acc[4 * j + 2])));
      mbar::st_shared_u16(row_b + 16, __bfloat16_as_ushort(__float2bfloat16_rn(acc[4 * j + 3])));
    }
  }
  mbar::named_sync(1 + cw, 128);
  if (swiglu) {
    // (N / 2 outputs: n_first bytes in)
    copy_rows<64, kTileT, kOutPitch, std::max(kTileT * 4 / 128, 1)>(p.out, 2 * p.ldc, c, 0, staging, n_first,
                                                                    min(64, p.N - n_first), wt);
  } else {
    copy_rows<128, kTileT, kOutPitch, kTileT * 8 / 128>(p.out, 2 * p.ldc, c, 0, staging, 2 * int64_t{n_first},
                                                        2 * min(64, p.N - n_first), wt);
  }
}

// The eight wgmma of one K block (A: fragments a, B: the stage's activations) into acc, as one group.
// NOTE: the operand fences keep acc in f32 registers across the loop (without them the compiler carries it in b32
// registers, moved after every group: reads of in-flight accumulators, which make ptxas serialize the wgmma).
// The tile's first K block (first) overwrites acc: no other instruction defines it while groups are in flight.
template <int kTileT>
__device__ __forceinline__ void mma_block(float (&acc)[kTileT / 2], const uint32_t (&a)[8][4], uint64_t desc_x0, int s,
                                          bool first) {
  using S = Shape<kTileT>;
  wgmma::fence_operand(acc);
  wgmma::fence();
  const uint64_t desc_stage = wgmma::desc_plus(desc_x0, s * S::kStageBytes);
#pragma unroll
  for (int kk = 0; kk < kBK / 16; ++kk) {
    const uint64_t desc = wgmma::desc_plus(desc_stage, (kk / 4) * S::kHalfBytes + (kk % 4) * 32);
    if constexpr (kTileT == kWideTokens) {
      wgmma::wgmma_m64n128k16_bf16_rs(acc, a[kk], desc, first && kk == 0 ? 0 : 1);
    } else if constexpr (kTileT == 64) {
      wgmma::wgmma_m64n64k16_bf16_rs(acc, a[kk], desc, first && kk == 0 ? 0 : 1);
    } else if constexpr (kTileT == 32) {
      wgmma::wgmma_m64n32k16_bf16_rs(acc, a[kk], desc, first && kk == 0 ? 0 : 1);
    } else {
      wgmma::wgmma_m64n16k16_bf16_rs(acc, a[kk], desc, first && kk == 0 ? 0 : 1);
    }
  }
  wgmma::commit();
  wgmma::fence_operand(acc);
}

template <int kTileT>
__device__ __forceinline__ void consume(const GemmW4A16Params& p, uint8_t* smem, uint64_t* full, uint64_t* empty) {
  using S = Shape<kTileT>;
  constexpr int kStages = S::kStages, kBlocks = S::kBlocks;
  tma::regs_claim<S::kConsumerRegs>();
  const int tid = static_cast<int>(threadIdx.x);
  // Consumer warpgroup cw (through a shuffle so that the compiler knows it is warp-uniform).
  const int cw = __shfl_sync(0xffffffffu, tid / 128, 0) - 1;
  const int warp = (tid % 128) / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
  const FragmentRows rows = fragment_rows(p.epilogue == GemmEpilogue::kSwiGlu, warp, g, t);
  const int num_kb = ceil_div(p.K, kBK), num_slots = num_kb * kBlocks;
  // The activations' descriptor at ring stage 0; a stage, K half or k16 step advances it (wgmma::desc_plus).
  const uint64_t desc_x0 = wgmma::desc_k128_sw128(smem);
  // Row block rb's raw weights at ring stage 0 (the stage's weight tiles: the CTA's row blocks in order).
  const uint32_t raw0 = tma::smem_u32(smem) + S::kXBytes + cw * kBlocks * kMxfp4TileBytes;
  uint8_t* buf = smem + S::kOutOffset + cw * S::kOutBytes;
  int s = 0;
  uint32_t phase = 0;
  const Walk w = walk_of<S::kTileW, kTileT>(p);
  for (int u = w.first; u < w.units; u += w.stride) {
    const Coord c = coord_of<S::kTileW, kTileT>(p, w, u);
    const int n_wg = c.n0_load + 64 * kBlocks * cw;  // this warpgroup's first weight row
    if (n_wg >= p.N) {                               // (uniform over the warpgroup) only the barrier protocol
      for (int kb = 0; kb < num_kb; ++kb, s = mbar::next_stage<kStages>(s, phase)) {
        mbar::wait(&full[s], phase);
        release(empty, s, lane, w.rank);
      }
      continue;
    }
    // (Per unit: not carried across the loop, so that no copy of it is live while wgmma groups are in flight.)
    float acc[kBlocks][kTileT / 2];
    // Slot i = 2 · kb + rb: row block rb of K block kb. Two fragment sets: slot i + 1 is decoded while slot i's
    // wgmma run; its set was slot i − 1's, whose group the wait<1> after slot i's issue completed (a K block's stage
    // is released once its last slot completed). A row block past N (the last weight tile) computes on whatever
    // its stage slot holds and is not written.
    uint32_t a[2][8][4];
    int s_prev = s;
    mbar::wait(&full[s], phase);
    load_fragments(raw0 + s * S::kStageBytes, rows, a[0]);
    const auto step = [&](int i, auto rb_constant, uint32_t(&now)[8][4], uint32_t(&next)[8][4]) {
      constexpr int rb = decltype(rb_constant)::value;
      const int kb = i / kBlocks;
      mma_block<kTileT>(acc[rb], now, desc_x0, s, kb == 0);
      wgmma::wait<1>();  // slot i − 1's group
      if (rb == 0 && i > 0) release(empty, s_prev, lane, w.rank);
      if (rb == kBlocks - 1) {
        s_prev = s;
        s = mbar::next_stage<kStages>(s, phase);
        if (kb + 1 < num_kb) mbar::wait(&full[s], phase);
      }
      if (i + 1 < num_slots) {
        load_fragments(raw0 + s * S::kStageBytes + ((rb + 1) % kBlocks) * kMxfp4TileBytes, rows, next);
      }
    };
    for (int i = 0; i < num_slots; i += 2) {  // (the fragment sets alternate; one row block: rb is 0 throughout)
      step(i, std::integral_constant<int, 0>{}, a[0], a[1]);
      if (i + 1 < num_slots) step(i + 1, std::integral_constant<int, 1 % kBlocks>{}, a[1], a[0]);
    }
    // The bias (two values a thread and row block: its fragment rows), loaded while the last group runs.
    float b[kBlocks][2] = {};
    if (p.bias != nullptr) {
      const uint16_t* bias = p.bias + static_cast<int64_t>(c.group) * p.N;
#pragma unroll
      for (int rb = 0; rb < kBlocks; ++rb) {
#pragma unroll
        for (int i = 0; i < 2; ++i) {
          const int row = n_wg + 64 * rb + rows.row[i];
          if (row < p.N) b[rb][i] = __bfloat162float(__ushort_as_bfloat16(bias[row]));
        }
      }
    }
    wgmma::wait<0>();
    release(empty, s_prev, lane, w.rank);
#pragma unroll
    for (int rb = 0; rb < kBlocks; ++rb) {
      wgmma::fence_operand(acc[rb]);  // (acc stays f32, see mma_block)
#pragma unroll
      for (int j = 0; j < kTileT / 8; ++j) {
        acc[rb][4 * j] += b[rb][0];
        acc[rb][4 * j + 1] += b[rb][0];
        acc[rb][4 * j + 2] += b[rb][1];
        acc[rb][4 * j + 3] += b[rb][1];
      }
      const int n_first = c.n0 + 64 * (kBlocks * cw + rb);
      if (c.active && n_first < p.N) write_out<kTileT>(p, acc[rb], c, n_first, cw, buf);
    }
  }
}

template <int kTileT>
__global__ void __launch_bounds__(Shape<kTileT>::kThreads, 1)
    gemm_w4a16_kernel(const __grid_constant__ CUtensorMap map_x, const GemmW4A16Params p) {
  using S = Shape<kTileT>;
  extern __shared__ uint8_t smem_raw[];
  uint64_t *full, *empty;
  uint8_t* smem = init_ring<S::kStages>(smem_raw, S::kBarOffset, &map_x, full, empty, 4 * S::kConsumers);
  const int tid = static_cast<int>(threadIdx.x);

  if (tid < 128) {
    tma::regs_release<S::kProducerRegs>();
    if (tid == 0) {
      // Both 64-token halves of the activations land in the stage (the peer multicasts the other).
      produce<S::kStages, S::kTileW, kTileT, S::kStageBytes, S::kXBytes>(
          p, smem, full, empty, [&](uint8_t* stage, int kb, const Coord& c, const Walk& w, uint64_t* bar) {
            for (int kh = 0; kh < 2; ++kh) {
              tma::copy_2d_multicast(stage + kh * S::kHalfBytes + w.rank * (kTileT / kCluster) * 128, &map_x,
                                     2 * (kb * kBK + 64 * kh), c.m0 + (kTileT / kCluster) * w.rank, bar, 0x3);
            }
          });
    }
  } else {
    consume<kTileT>(p, smem, full, empty);
  }
  // NOTE: no CTA of a cluster exits while its peer may still multicast into it or arrive on its barriers.
  tma::cluster_sync();
}

// ---- the activations in register order, scattered into expert order ----

// One warp per input row; each lane moves 16 bytes (source words 4t … 4t + 3 of a 32-column chunk, t = lane % 4)
// to stored words t, t + 4, t + 8, t + 12 of each destination row.
__global__ void w4a16_activations_kernel(const uint16_t* __restrict__ x, int64_t ldx, int rows, int K,
                                         const int32_t* __restrict__ scatter_rows, uint16_t* __restrict__ out,
                                         int64_t ldo) {
  const int row = static_cast<int>((blockIdx.x * blockDim.x + threadIdx.x) / 32), lane = threadIdx.x % 32;
  if (row >= rows) return;
  int dst[4];
#pragma unroll
  for (int k = 0; k < 4; ++k) dst[k] = scatter_rows[static_cast<int64_t>(row) * 4 + k];
  const uint16_t* src = x + static_cast<int64_t>(row) * ldx;
  const int t = lane % 4;
  for (int chunk = lane / 4; chunk < K / 32; chunk += 8) {
    const uint4 v = *reinterpret_cast<const uint4*>(src + 32 * chunk + 8 * t);
    const uint32_t words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      if (dst[k] < 0) continue;
      uint32_t* d = reinterpret_cast<uint32_t*>(out + static_cast<int64_t>(dst[k]) * ldo + 32 * chunk);
#pragma unroll
      for (int q = 0; q < 4; ++q) d[t + 4 * q] = words[q];
    }
  }
}

template <int kTileT>
void launch_tiles(const GemmW4A16Params& p, cudaStream_t stream) {
  PersistentClusterLaunch launch(gemm_w4a16_kernel<kTileT>, kCluster, Shape<kTileT>::kThreads,
                                 Shape<kTileT>::kSmemBytes, stream);
  static const int max_units_in_flight = launch.resident_clusters("gemm_w4a16");
  // A: [M, 2K] bytes, row stride 2·lda; box 128 bytes (64 bf16) × kTileT / 2 tokens (a rank's half of a tile, one K
  // half).
  const uint64_t dims[2] = {static_cast<uint64_t>(2 * p.K), static_cast<uint64_t>(p.M)};
  const uint64_t strides[1] = {static_cast<uint64_t>(2 * p.lda)};
  const uint32_t box[2] = {128, kTileT / kCluster};
  const CUtensorMap map_x = tma::make_map_u8_sw128(p.a, 2, dims, strides, box);
  launch_units<Shape<kTileT>::kTileW, kTileT>(launch, max_units_in_flight, map_x, p);
}

}  // namespace

int gemm_w4a16_tile_rows(int max_rows_per_tile, int narrow_max_rows) {
  if (max_rows_per_tile > narrow_max_rows) return kWideTokens;
  for (const int tokens : kNarrowTokens) {
    if (max_rows_per_tile <= tokens / 2) return tokens;
  }
  return kNarrowTokens[2];
}

void launch_gemm_w4a16(const GemmW4A16Params& p, cudaStream_t stream) {
  GOSSAMER_CHECK(p.K % 32 == 0, "gemm_w4a16: K a multiple of 32, not ", p.K);
  GOSSAMER_CHECK(
      reinterpret_cast<uintptr_t>(p.a) % 16 == 0 && p.lda % 8 == 0 && reinterpret_cast<uintptr_t>(p.b) % 16 == 0,
      "gemm_w4a16: A and B 16-byte aligned, lda a multiple of 8");
  GOSSAMER_CHECK(p.epilogue == GemmEpilogue::kBias || p.epilogue == GemmEpilogue::kSwiGlu,
                 "gemm_w4a16: the kBias and kSwiGlu epilogues");
  GOSSAMER_CHECK(reinterpret_cast<uintptr_t>(p.out) % 16 == 0 && p.ldc % 8 == 0 &&
                     p.N % (p.epilogue == GemmEpilogue::kBias ? 8
                            : p.out_register_order            ? 64
                                                              : 16) ==
                         0,
                 "gemm_w4a16: out 16-byte aligned, ldc a multiple of 8, N of 8 (kSwiGlu: 16, in register order 64)");
  GOSSAMER_CHECK(!p.out_register_order || p.epilogue == GemmEpilogue::kSwiGlu,
                 "gemm_w4a16: out_register_order is kSwiGlu's");
  GOSSAMER_CHECK(p.tile_rows == kWideTokens || p.tile_rows == 64 || p.tile_rows == 32 || p.tile_rows == 16,
                 "gemm_w4a16: tile_rows is gemm_w4a16_tile_rows()'s 128, 64, 32 or 16, not ", p.tile_rows);
  if (p.M == 0 || p.N == 0) return;
  switch (p.tile_rows) {
    case kWideTokens: return launch_tiles<kWideTokens>(p, stream);
    case 64: return launch_tiles<64>(p, stream);
    case 32: return launch_tiles<32>(p, stream);
    default: return launch_tiles<16>(p, stream);
  }
}

void launch_w4a16_activations(const uint16_t* x, int64_t ldx, int rows, int K, const int32_t* scatter_rows,
                              uint16_t* out, int64_t ldo, cudaStream_t stream) {
  GOSSAMER_CHECK(K % 32 == 0 && ldx % 8 == 0 && ldo % 8 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0 &&
                     reinterpret_cast<uintptr_t>(out) % 16 == 0,
                 "w4a16_activations: K a multiple of 32, x and out 16-byte aligned, ldx and ldo multiples of 8");
  if (rows == 0) return;
  const int threads = 256;
  const auto blocks = static_cast<unsigned>(ceil_div<int64_t>(int64_t{rows} * 32, threads));
  w4a16_activations_kernel<<<blocks, threads, 0, stream>>>(x, ldx, rows, K, scatter_rows, out, ldo);
  GOSSAMER_CUDA_CHECK_LAUNCH();
}

}  // namespace gossamer::kernels
