// FP8 block-scaled GEMM on Hopper with TMA and warp specialisation (GemmTile::k128x192tma2,
// k128x256tma2 and k128x256tma2b; gemm_fp8.h). Persistent: one CTA per SM walks the tiles (m fastest, so CTAs running
// together share B tiles in L2), and the producer runs ahead into the next tile while the consumers
// write the last one out. CTAs run in clusters of 2 (kCluster) that share one operand tile:
//   share A (k128x192tma2, k128x256tma2): the two compute neighbouring column tiles of one row tile, each
//     loading one 64-row half of A and multicasting it to both (A's L2 → SM bytes per CTA halve);
//   share B (k128x256tma2b): the two compute neighbouring row tiles of one column tile, each loading one
//     half of the B tile's rows and multicasting it (B's bytes per CTA halve: 32 instead of 40 KiB per
//     stage); a grouped pair whose row tiles belong to different groups loads its own B, unshared.
//
// A CTA computes 128×kBN tiles (kBN = 192 or 256) with 384 threads:
//   warpgroup 0  producer: one thread issues the bulk tensor copies of A (sharing A: its 64-row half of
//                128 rows × 128 K bytes, multicast) and B (kBN rows × 128 K bytes, tile-major; sharing B:
//                half of them, multicast) into a ring of kStages
//                stages, each guarded by a full barrier and an empty barrier (the 8 consumer warps of both
//                CTAs arrive: a stage is refilled only once the peer released it too). A stage holds each
//                operand as two K halves of 128 rows × 64 bytes, 64B-swizzled (the tile-major tiles are 64 bytes
//                wide; tma_sm90.cuh). Warp 1 stages the block scales the same way: cp.async of the
//                tile's 128 A scales and its B scales per K block, and with a tile's first K block its
//                kBN bias values, each lane's completion one arrival on the full barrier (1
//                transaction-counted + 32 arrivals), so the consumers never wait on a global load;
//   warpgroups 1 and 2  consumers: rows 0–63 and 64–127 (each writes its rows of a finished tile through its
//                own shared-memory staging buffer and asynchronous row copies: gemm_fp8_tma_out_sm90.cuh). Per K block:
//                four wgmma m64nkBNk32 into a temporary accumulator, wait, release the stage, promote with a_scale[row]
//                · b_scale; the first K block of a tile sets the accumulators to the staged bias while its wgmma run.
//                A 256-wide tile runs that as two 128-column passes per K block (the temporary is half
//                the tile, so accumulators and temporary fit the consumers' registers); it releases the
//                stage after the second (or skips the second where its columns all lie past N). Per FLOP it
//                loads 10% fewer bytes from L2 than 128×192.
// The producer gives its registers to the consumers (setmaxnreg). A must be contiguous rows (grouped MoE
// callers permute tokens into expert order first: quantize_fp8's row_index); B must be tile-major FP8.
// Partial tiles: TMA zero-fills rows, columns and K past the tensor bounds; writes stop at row_end and N.
// 192-wide tiles cover two 128-row B scale blocks: each 8-column group takes the scale of its block (two
// compiled promotions, for n0 % 128 = 0 and 64); a 256-wide tile's pass h takes block h.
#include <algorithm>

#include "kernels/gemm_fp8_common_sm90.cuh"
#include "kernels/gemm_fp8_tma_out_sm90.cuh"
#include "kernels/mbarrier_sm90.cuh"
#include "kernels/tma_sm90.cuh"

namespace gossamer::kernels::gemm_fp8_detail {
namespace {

constexpr int kTmaThreads = 384;
constexpr int kCluster = 2;  // CTAs per cluster, sharing the A tile
// Registers per thread after reallocation: the producer warpgroup's and the consumers'. 128 · producer + 256 ·
// consumer must not pass what the launch allocated (384 · 168 = 64,512): setmaxnreg.inc waits for registers the
// producer's dec freed, and with more than that it waits forever (80 / 216, 65,536 in all, hung on the first launch).
constexpr int kProducerRegs = 40, kConsumerRegs = 232;
static_assert(128 * kProducerRegs + 256 * kConsumerRegs <= kTmaThreads * 168, "more registers than the launch holds");

// kFp8Out: the kSwiGluFp8 epilogue's instantiation (its output rows are 128 bytes: a smaller staging buffer).
template <int kBN, bool kFp8Out>
struct TmaTile {
  static_assert(kBN == 192 || kBN == 256, "128×192 and 128×256 tiles");
  static_assert(!kFp8Out || kBN == 256, "kSwiGluFp8 on 256-wide tiles");
  // As many stages as fit beside the two consumer warpgroups' output staging (TmaOut) in the 227 KiB a CTA may
  // hold: 4 of 40 KiB (192), 3 of 48 KiB (256, bf16 rows), 4 of 48 KiB (256, FP8 rows); 214–215 KiB in all.
  static constexpr int kStages = kBN == 256 && !kFp8Out ? 3 : 4;
  static constexpr int kABytes = 128 * kBK;  // [K half][128 rows][64 bytes]
  static constexpr int kBBytes = kBN * kBK;  // [K half][kBN rows][64 bytes]
  static constexpr int kStageBytes = kABytes + kBBytes;
  // Per stage: [128 A scales, B scale of the first block, pad 3, of the second, pad 3, kBN / 2 bias words (bf16
  // pairs; written with a tile's first K block only)].
  static constexpr int kBScale0 = 128;
  static constexpr int kBiasWord0 = 136;
  static constexpr int kScaleFloats = kBiasWord0 + kBN / 2;
  // After the scales: the output staging.
  static constexpr int kOutOffset = kStages * kStageBytes + 2 * kStages * 8 + kStages * kScaleFloats * 4;
  static constexpr int kSmemBytes = 1024 + kOutOffset + 2 * TmaOut<kBN, kFp8Out>::kBytes;
  static_assert(kOutOffset % 16 == 0, "output staging 16-byte aligned (bulk copies)");
  static_assert(kSmemBytes <= 227 * 1024, "a CTA's shared memory");
};
constexpr int kScaleLanes = 32;  // producer warp 1
// Columns of B one wgmma pass covers: the whole 192-wide tile; a 256-wide tile runs two 128-column passes
// per K block (its temporary accumulator is half the tile: acc 128 + tmp 64 registers fit the consumers' 232).
template <int kBN>
struct TmaPassCols {
  static constexpr int value = kBN == 256 ? 128 : kBN;
};

// Work unit u of the walk (m fastest): expert, rows [m0, row_end) and columns from n0. A unit is kCluster
// neighbouring column tiles of one row tile (kShareB: row tiles of one column tile), rank r taking the
// r-th; a rank past the last tile (an odd tile count) is inactive: it loads and computes its peer's tile
// (n0_load / its row tile) for the shared operand and the barriers' sake, and writes nothing. b_shared
// (kShareB): both ranks' row tiles are of one group, so they share B.
struct TmaTileCoord {
  int group, m0, row_end, n0, n0_load;
  bool active, b_shared;
};
template <int kBN, bool kShareB>
__device__ __forceinline__ TmaTileCoord tma_tile(const GemmFp8Params& p, int u, int m_tiles, int rank) {
  TmaTileCoord c;
  int mt;
  if constexpr (kShareB) {
    const int m_pairs = ceil_div(m_tiles, kCluster);
    const int mt0 = kCluster * (u % m_pairs);
    c.n0 = c.n0_load = (u / m_pairs) * kBN;
    c.active = mt0 + rank < m_tiles;
    mt = c.active ? mt0 + rank : mt0;
    c.b_shared = mt0 + 1 >= m_tiles || !p.grouped.on() || p.grouped.tile_group[mt0] == p.grouped.tile_group[mt0 + 1];
  } else {
    mt = u % m_tiles;
    c.n0 = (kCluster * (u / m_tiles) + rank) * kBN;
    c.active = c.n0 < p.N;
    c.n0_load = c.active ? c.n0 : c.n0 - kBN;
    c.b_shared = false;
  }
  const RowTile rt = row_tile(p, mt, 128);
  c.group = rt.group;
  c.m0 = rt.m0;
  c.row_end = rt.row_end;
  return c;
}

// One wgmma of a pass: 64 × 192 for 192-wide tiles, 64 × 128 for 256-wide tiles (two 128-wide passes).
template <int kBN>
__device__ __forceinline__ void wgmma_pass(float (&d)[TmaPassCols<kBN>::value / 2], uint64_t da, uint64_t db,
                                           int scale_d) {
  if constexpr (kBN == 192) {
    wgmma::wgmma_m64n192k32_e4m3(d, da, db, scale_d);
  } else {
    wgmma::wgmma_m64n128k32_e4m3(d, da, db, scale_d);
  }
}

// acc += tmp · scale, the first kFirstCols columns with the first B block's products (s0a rows r, s1a rows
// r + 8), the rest with the second's; kFirstCols is a compile-time constant so no column selects a scale at
// run time.
template <int kBN, int kFirstCols>
__device__ __forceinline__ void promote_split(float (&acc)[kBN / 2], const float (&tmp)[kBN / 2], float s0a, float s1a,
                                              float s0b, float s1b) {
#pragma unroll
  for (int j = 0; j < kBN / 8; ++j) {
    const bool first = 8 * j < kFirstCols;
    const float s0 = first ? s0a : s0b, s1 = first ? s1a : s1b;
    acc[4 * j + 0] += tmp[4 * j + 0] * s0;
    acc[4 * j + 1] += tmp[4 * j + 1] * s0;
    acc[4 * j + 2] += tmp[4 * j + 2] * s1;
    acc[4 * j + 3] += tmp[4 * j + 3] * s1;
  }
}

// acc[pass h's 128 columns] += tmp · scale (s0 rows r, s1 rows r + 8): the 256-wide tile's promotion of one
// pass (h is a constant after unrolling, so the accumulators stay in registers).
template <int kBN>
__device__ __forceinline__ void promote_pass(float (&acc)[kBN / 2], const float (&tmp)[64], int h, float s0, float s1) {
#pragma unroll
  for (int j = 0; j < 16; ++j) {
    acc[64 * h + 4 * j + 0] += tmp[4 * j + 0] * s0;
    acc[64 * h + 4 * j + 1] += tmp[4 * j + 1] * s0;
    acc[64 * h + 4 * j + 2] += tmp[4 * j + 2] * s1;
    acc[64 * h + 4 * j + 3] += tmp[4 * j + 3] * s1;
  }
}

// Accumulators set to the tile's bias staged in shared memory (bias_words: kBN / 2 bf16 pairs, column pair
// 8j + 2t at word 4j + t), in the wgmma D layout of one warpgroup; the same values as init_with_bias.
template <int kBN>
__device__ __forceinline__ void init_with_staged_bias(float (&acc)[kBN / 2], uint32_t bias_words, int lane) {
#pragma unroll
  for (int j = 0; j < kBN / 8; ++j) {
    const uint32_t bb = mbar::ld_shared_u32(bias_words + (4 * j + lane % 4) * 4);
    acc[4 * j + 0] = acc[4 * j + 2] = __uint_as_float(bb << 16);
    acc[4 * j + 1] = acc[4 * j + 3] = __uint_as_float(bb & 0xFFFF0000u);
  }
}

// The CTA's walk over the work units: u = first, first + stride, … < units (read where used, so that the
// consumers keep no extra registers live across their K loop).
struct TmaWalk {
  int m_tiles, units, first, stride, rank;
};
template <int kBN, bool kShareB>
__device__ __forceinline__ TmaWalk tma_walk(const GemmFp8Params& p) {
  TmaWalk w;
  w.m_tiles = p.grouped.on() ? *p.grouped.num_tiles : ceil_div(p.M, 128);
  w.units =
      kShareB ? ceil_div(w.m_tiles, kCluster) * ceil_div(p.N, kBN) : w.m_tiles * ceil_div(ceil_div(p.N, kBN), kCluster);
  w.first = static_cast<int>(blockIdx.x) / kCluster;
  w.stride = static_cast<int>(gridDim.x) / kCluster;
  w.rank = static_cast<int>(tma::cluster_rank());
  return w;
}

template <int kBN, bool kShareB, bool kFp8Out>
__device__ __forceinline__ void consume_tma_tiles(const GemmFp8Params& p, uint8_t* smem, uint64_t* full,
                                                  uint64_t* empty, float* scales, int num_kb);

// Warp 1 of the producer warpgroup (lane: 0–31) stages stage s's scales for K block kb of tile c: the tile's 128 A
// scales (rows past row_end read as 0: their outputs are never written), with kBScales its two B scales, and with
// the first K block its kBN bias values (bf16 pairs, 0 past N or without bias); each lane's copies are one
// arrival on the full barrier once they land.
template <int kBN, bool kFp8Out, bool kBScales>
__device__ __forceinline__ void stage_scales(const GemmFp8Params& p, const TmaTileCoord& c, int kb, int num_kb,
                                             float* sc, uint64_t* full, int lane) {
  using T = TmaTile<kBN, kFp8Out>;
#pragma unroll
  for (int i = 0; i < 128 / kScaleLanes; ++i) {
    const int r = c.m0 + lane + kScaleLanes * i;
    const bool ok = r < c.row_end;
    cp_async_4(sc + lane + kScaleLanes * i, p.a_scales + static_cast<int64_t>(ok ? r : 0) * num_kb + kb, ok);
  }
  if (kBScales && lane < 2) {
    const float* bs0 = b_scale_row(p, c.group, c.n0_load, num_kb);
    const float* bs1 = c.n0_load / 128 + 1 < ceil_div(p.N, 128) ? bs0 + num_kb : bs0;
    cp_async_4(sc + T::kBScale0 + 4 * lane, (lane == 0 ? bs0 : bs1) + kb, true);
  }
  if (kb == 0) {
#pragma unroll
    for (int i = 0; i < kBN / 2 / kScaleLanes; ++i) {
      const int col = c.n0_load + 2 * (lane + kScaleLanes * i);
      const bool ok = p.bias != nullptr && col < p.N;
      const void* src = ok ? static_cast<const void*>(p.bias + static_cast<int64_t>(c.group) * p.N + col)
                           : static_cast<const void*>(p.a_scales);  // not read
      cp_async_4(sc + T::kBiasWord0 + lane + kScaleLanes * i, src, ok);
    }
  }
  mbar::cp_async_arrive(full);
}

// The two CTAs of a cluster share an operand tile, so a stage may be refilled only when both CTAs' consumers
// released it (each consumer warp arrives on its own and its peer's empty barrier).
// map_a: box 64 K bytes × 64 rows (share A) or × 128 rows (kShareB); map_b: box (64, 64, kBN / 64, 2)
// (share A) or (64, 64, kBN / 128, 1): one K half of half the tile's rows (kShareB).
template <int kBN, bool kShareB, bool kFp8Out>
__global__ void __launch_bounds__(kTmaThreads, 1)
    gemm_fp8_tma_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
                        const GemmFp8Params p) {
  using T = TmaTile<kBN, kFp8Out>;
  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + T::kStages * T::kStageBytes);
  uint64_t* empty = full + T::kStages;
  float* scales = reinterpret_cast<float*>(empty + T::kStages);  // [kStages][kScaleFloats]

  const int num_kb = ceil_div(p.K, kBK);
  const int tid = threadIdx.x;
  if (tid == 0) {
    tma::prefetch_map(&map_a);
    tma::prefetch_map(&map_b);
    for (int s = 0; s < T::kStages; ++s) {
      mbar::init(&full[s], 1 + kScaleLanes);
      mbar::init(&empty[s], 8 * kCluster);
    }
    tma::fence_barrier_init();
  }
  tma::cluster_sync();  // the peer's barriers exist before any copy or arrival names them

  if (tid < 128) {
    // ================= producer =================
    tma::regs_release<kProducerRegs>();
    const TmaWalk w = tma_walk<kBN, kShareB>(p);
    if (tid == 0) {
      // B bands: 64-row bands of the tile-major layout, G · pad(N)/64 of them.
      const int bands_per_group = static_cast<int>(fp8_tiled_pad(p.N) / 64);
      int s = 0;
      uint32_t phase = 0;
      for (int u = w.first; u < w.units; u += w.stride) {
        const TmaTileCoord c = tma_tile<kBN, kShareB>(p, u, w.m_tiles, w.rank);
        const int band0 = c.group * bands_per_group + c.n0_load / 64;
        for (int kb = 0; kb < num_kb; ++kb, s = mbar::next_stage<T::kStages>(s, phase)) {
          mbar::wait(&empty[s], phase ^ 1);
          uint8_t* sa = smem + s * T::kStageBytes;
          uint8_t* sb = sa + T::kABytes;
          // The whole stage lands on this CTA's barrier, the peer's multicast half included.
          tma::arrive_expect_tx(&full[s], T::kStageBytes);
          if constexpr (kShareB) {
            // Its own A (both K halves); B: its half of the tile's rows for both CTAs, or all of it alone.
            tma::copy_2d(sa, &map_a, kb * kBK, c.m0, &full[s]);
            tma::copy_2d(sa + T::kABytes / 2, &map_a, kb * kBK + 64, c.m0, &full[s]);
            constexpr int kHalfBands = kBN / 128;
            for (int kh = 0; kh < 2; ++kh) {
              uint8_t* sb_k = sb + kh * (T::kBBytes / 2);
              if (c.b_shared) {
                tma::copy_4d_multicast(sb_k + w.rank * (T::kBBytes / 4), &map_b, 0, 0, band0 + w.rank * kHalfBands,
                                       2 * kb + kh, &full[s], 0x3);
              } else {
                tma::copy_4d(sb_k, &map_b, 0, 0, band0, 2 * kb + kh, &full[s]);
                tma::copy_4d(sb_k + T::kBBytes / 4, &map_b, 0, 0, band0 + kHalfBands, 2 * kb + kh, &full[s]);
              }
            }
          } else {
            uint8_t* half = sa + w.rank * 64 * 64;  // rows 64·rank … of each K half
            tma::copy_2d_multicast(half, &map_a, kb * kBK, c.m0 + 64 * w.rank, &full[s], 0x3);
            tma::copy_2d_multicast(half + T::kABytes / 2, &map_a, kb * kBK + 64, c.m0 + 64 * w.rank, &full[s], 0x3);
            tma::copy_4d(sb, &map_b, 0, 0, band0, 2 * kb, &full[s]);
          }
        }
      }
    } else if (tid >= 32 && tid < 32 + kScaleLanes) {
      int s = 0;
      uint32_t phase = 0;
      for (int u = w.first; u < w.units; u += w.stride) {
        const TmaTileCoord c = tma_tile<kBN, kShareB>(p, u, w.m_tiles, w.rank);
        for (int kb = 0; kb < num_kb; ++kb, s = mbar::next_stage<T::kStages>(s, phase)) {
          mbar::wait(&empty[s], phase ^ 1);
          stage_scales<kBN, kFp8Out, true>(p, c, kb, num_kb, scales + s * T::kScaleFloats, &full[s], tid - 32);
        }
      }
    }
  } else {
    consume_tma_tiles<kBN, kShareB, kFp8Out>(p, smem, full, empty, scales, num_kb);
  }
  // NOTE: no CTA of a cluster exits while its peer may still multicast into it or arrive on its barriers.
  tma::cluster_sync();
}

// ================= consumers (warpgroups 1 and 2) =================
template <int kBN, bool kShareB, bool kFp8Out>
__device__ __forceinline__ void consume_tma_tiles(const GemmFp8Params& p, uint8_t* smem, uint64_t* full,
                                                  uint64_t* empty, float* scales, int num_kb) {
  using T = TmaTile<kBN, kFp8Out>;
  using Out = TmaOut<kBN, kFp8Out>;
  const int tid = threadIdx.x;
  tma::regs_claim<kConsumerRegs>();
  // Consumer warpgroup: rows 64·cw … (through a shuffle so that the compiler knows it is warp-uniform and
  // keeps the wgmma descriptors built from it in uniform registers).
  const int cw = __shfl_sync(0xffffffffu, tid / 128, 0) - 1;
  const int warp = (tid % 128) / 32;
  const int lane = tid % 32;
  const int local_row = cw * 64 + warp * 16 + lane / 4;  // and local_row + 8
  constexpr int kPassN = TmaPassCols<kBN>::value;
  constexpr int kPasses = kBN / kPassN;
  float acc[kBN / 2];
  float tmp[kPassN / 2];
  // Descriptors of ring stage 0 (this warpgroup's A rows, the B tile); a stage or K step advances them
  // (wgmma::desc_plus).
  const uint64_t desc_a0 = wgmma::desc_k64_sw64(smem + cw * 64 * 64);
  const uint64_t desc_b0 = wgmma::desc_k64_sw64(smem + T::kABytes);
  const uint32_t scales0 = tma::smem_u32(scales);
  int s = 0;
  uint32_t phase = 0;
  const TmaWalk w = tma_walk<kBN, kShareB>(p);
  for (int u = w.first; u < w.units; u += w.stride) {
    const TmaTileCoord c = tma_tile<kBN, kShareB>(p, u, w.m_tiles, w.rank);
    // 192-wide tiles cover two 128-row B scale blocks: the first 128 or 64 columns use the first (n0 % 128
    // is 0 or 64). 256-wide tiles: pass h uses block h.
    const bool split_at_128 = c.n0_load % 128 == 0;
    // A 256-wide tile whose second pass lies wholly past N (a row tile's last column tile where N % 256 ≤ 128:
    // gate_up's N = 5,760) skips that pass: its accumulators keep the staged bias (0 past N), which the epilogue
    // masks, so the written bits are the same. (Sharing A, the pair's inactive rank computes this tile too.)
    const bool second_pass = kPasses == 1 || c.n0_load + kPassN < p.N;

    for (int kb = 0; kb < num_kb; ++kb, s = mbar::next_stage<T::kStages>(s, phase)) {
      mbar::wait(&full[s], phase);
      const uint64_t desc_a = wgmma::desc_plus(desc_a0, s * T::kStageBytes);
      const uint64_t desc_b = wgmma::desc_plus(desc_b0, s * T::kStageBytes);
      const uint32_t sc = scales0 + s * T::kScaleFloats * 4;
#pragma unroll
      for (int h = 0; h < kPasses; ++h) {
        if (h > 0 && !second_pass) {  // the last pass: release the stage (pass 0 waited for its wgmma)
          if (lane == 0) {
            mbar::arrive(&empty[s]);
            mbar::arrive_cluster(&empty[s], static_cast<uint32_t>(w.rank ^ 1));
          }
          continue;
        }
        wgmma::fence();
#pragma unroll
        for (int kk = 0; kk < kBK / 32; ++kk) {
          const uint32_t off_a = (kk / 2) * (T::kABytes / 2) + (kk % 2) * 32;
          const uint32_t off_b = (kk / 2) * (T::kBBytes / 2) + h * kPassN * 64 + (kk % 2) * 32;
          wgmma_pass<kBN>(tmp, wgmma::desc_plus(desc_a, off_a), wgmma::desc_plus(desc_b, off_b), kk > 0);
        }
        wgmma::commit();
        if (kb == 0 && h == 0) init_with_staged_bias<kBN>(acc, sc + T::kBiasWord0 * 4, lane);
        // The stage's scales, read while the wgmma run.
        const float sa0 = mbar::ld_shared_f32(sc + local_row * 4), sa1 = mbar::ld_shared_f32(sc + (local_row + 8) * 4);
        const float sb0 = mbar::ld_shared_f32(sc + T::kBScale0 * 4),
                    sb1 = mbar::ld_shared_f32(sc + (T::kBScale0 + 4) * 4);
        wgmma::wait<0>();
        if (h == kPasses - 1 && lane == 0) {
          mbar::arrive(&empty[s]);
          mbar::arrive_cluster(&empty[s], static_cast<uint32_t>(w.rank ^ 1));
        }

        // ---- promote with the block scales (the other kernels' arithmetic: bit-identical results) ----
        const float s0a = sa0 * sb0, s1a = sa1 * sb0, s0b = sa0 * sb1, s1b = sa1 * sb1;
        if constexpr (kPasses == 2) {
          promote_pass<kBN>(acc, tmp, h, h == 0 ? s0a : s0b, h == 0 ? s1a : s1b);
        } else if (split_at_128) {
          promote_split<kBN, 128>(acc, tmp, s0a, s1a, s0b, s1b);
        } else {
          promote_split<kBN, 64>(acc, tmp, s0a, s1a, s0b, s1b);
        }
      }
    }
    if (c.active)
      write_out_staged<kBN, kFp8Out>(p, acc, c.m0, c.n0, c.row_end, cw, smem + T::kOutOffset + cw * Out::kBytes);
  }
  wait_tma_out();
}

template <int kBN, bool kShareB, bool kFp8Out>
void launch_tma_tile(const GemmFp8Params& p, cudaStream_t stream) {
  static_assert(!kShareB || kBN == 256, "sharing B splits the tile's 64-row bands in two halves");
  using T = TmaTile<kBN, kFp8Out>;
  // Resident clusters (clusters of 2 need two free SMs of one GPC): queried once per instantiation.
  PersistentClusterLaunch launch(gemm_fp8_tma_kernel<kBN, kShareB, kFp8Out>, kCluster, kTmaThreads, T::kSmemBytes,
                                 stream);
  static const int max_units_in_flight = launch.resident_clusters("gemm_fp8");
  // A: [M, K] bytes with row stride lda; box 64 K bytes × 128 / kCluster rows (share A: two per stage and
  // CTA, multicast) or × 128 rows (kShareB: two per stage).
  const uint64_t a_dims[2] = {static_cast<uint64_t>(p.K), static_cast<uint64_t>(p.M)};
  const uint64_t a_strides[1] = {static_cast<uint64_t>(p.lda)};
  const uint32_t a_box[2] = {64, kShareB ? 128u : 128u / kCluster};
  const CUtensorMap map_a = tma::make_map_u8_sw64(p.a, 2, a_dims, a_strides, a_box);
  // B tile-major (fp8_tiled.h: 4 KiB tiles ordered (g, n / 64, k / 64)) as dims (k in tile 64, row in
  // band 64, band G·NT, k tile KT); box (64, 64, kBN / 64, 2) lands as [K half][kBN rows][64 bytes]
  // (kShareB: box (64, 64, kBN / 128, 1), one K half of half the rows, four per stage and pair).
  const uint64_t kt = static_cast<uint64_t>(fp8_tiled_pad(p.K) / 64);
  const uint64_t bands = static_cast<uint64_t>(fp8_tiled_pad(p.N) / 64);
  const uint64_t groups = p.grouped.on() ? static_cast<uint64_t>(p.grouped.num_groups) : 1;
  const uint64_t b_dims[4] = {64, 64, bands * groups, kt};
  const uint64_t b_strides[3] = {64, kt * 4096, 4096};
  const uint32_t b_box[4] = {64, 64, kShareB ? kBN / 128u : kBN / 64u, kShareB ? 1u : 2u};
  const CUtensorMap map_b = tma::make_map_u8_sw64(p.b, 4, b_dims, b_strides, b_box);
  const int64_t m_tiles = p.grouped.on() ? p.grouped.max_tiles : ceil_div(p.M, 128);
  const int64_t max_units = kShareB ? ceil_div(m_tiles, int64_t{kCluster}) * ceil_div(p.N, kBN)
                                    : m_tiles * ceil_div(ceil_div(p.N, kBN), kCluster);
  const int units_in_flight = static_cast<int>(std::min<int64_t>(max_units, max_units_in_flight));
  if (units_in_flight == 0) return;
  const cudaLaunchConfig_t cfg = launch.config(units_in_flight);
  GOSSAMER_CUDA_CHECK(cudaLaunchKernelEx(&cfg, launch.kernel, map_a, map_b, p));
  GOSSAMER_CUDA_CHECK_LAUNCH();
}

}  // namespace

void launch_tma(const GemmFp8Params& p, int tile_n, bool share_b, cudaStream_t stream) {
  GOSSAMER_CHECK(p.b_tiled, "gemm_fp8: the TMA kernel reads tile-major B only");
  GOSSAMER_CHECK(p.a_row_index == nullptr, "gemm_fp8: the TMA kernel reads contiguous A rows (no gather)");
  GOSSAMER_CHECK(reinterpret_cast<uintptr_t>(p.a) % 16 == 0 && reinterpret_cast<uintptr_t>(p.b) % 16 == 0,
                 "gemm_fp8: the TMA kernel needs 16-byte aligned operands");
  GOSSAMER_CHECK(tile_n == 192 || tile_n == 256, "gemm_fp8: TMA tile 128x", tile_n, " is not built");
  GOSSAMER_CHECK(!share_b || tile_n == 256, "gemm_fp8: the B-sharing TMA tile is 128x256 only");
  GOSSAMER_CHECK(tma_output_ok(p),
                 "gemm_fp8: the TMA kernel copies whole output rows: the output 16-byte aligned, "
                 "ldc a multiple of 8 (ldq of 16) and N of 8 (kSwiGlu: 16; kSwiGluFp8: 32)");
  if (p.epilogue == GemmEpilogue::kSwiGluFp8) {  // launch_gemm_fp8 picks a 256-wide tile for it
    return share_b ? launch_tma_tile<256, true, true>(p, stream) : launch_tma_tile<256, false, true>(p, stream);
  }
  if (share_b) return launch_tma_tile<256, true, false>(p, stream);
  tile_n == 256 ? launch_tma_tile<256, false, false>(p, stream) : launch_tma_tile<192, false, false>(p, stream);
}

}  // namespace gossamer::kernels::gemm_fp8_detail
