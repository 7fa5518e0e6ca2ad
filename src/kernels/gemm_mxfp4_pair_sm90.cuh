// What the two register-operand MXFP4 GEMMs (gemm_w4a16_sm90.cu, gemm_w4a8_sm90.cu) share: the persistent walk of
// clusters of 2 CTAs over neighbouring weight tiles of one token tile, the ring's release to both producers, the lanes'
// weight rows (gate / up pairs for SwiGLU), the copy-out of staged token rows, and the host's launch over the work
// units.
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/cuda_utils.h"
#include "kernels/gemm_fp8_common_sm90.cuh"  // row_tile
#include "kernels/mbarrier_sm90.cuh"
#include "kernels/mxfp4_tiled.h"
#include "kernels/tma_sm90.cuh"

namespace gossamer::kernels::mxfp4_pair {

constexpr int kCluster = 2;  // CTAs sharing one token tile's activations

// The CTA's walk over work units u = first, first + stride, … < units; unit u is the pair of weight tiles u % pairs
// of token tile u / pairs, rank r computing the r-th. Weight pairs fastest: the clusters in flight share a few token
// tiles (read from DRAM once, then from L2) and one expert's weights (re-read from L2 by its next token tiles);
// token tiles fastest re-read every token's activations from DRAM for each weight pair (8k tokens, E = 32: 4.3 GB
// for W4A16's gate_up's 23 pairs, measured 64% of DRAM bandwidth).
struct Walk {
  int pairs, units, first, stride, rank;
};
// (Params: GemmW4A16Params or GemmW4A8Params; kTileW weight rows and kTileT tokens a CTA.)
template <int kTileW, int kTileT, typename Params>
__device__ __forceinline__ Walk walk_of(const Params& p) {
  Walk w;
  w.pairs = ceil_div(ceil_div(p.N, kTileW), kCluster);
  w.units = (p.grouped.on() ? *p.grouped.num_tiles : ceil_div(p.M, kTileT)) * w.pairs;
  w.first = static_cast<int>(blockIdx.x) / kCluster;
  w.stride = static_cast<int>(gridDim.x) / kCluster;
  w.rank = static_cast<int>(tma::cluster_rank());
  return w;
}

// Unit u for this rank: group, tokens [m0, row_end), weight rows from n0 (n0_load: the rows it loads; an inactive
// rank, past N, loads its peer's).
struct Coord {
  int group, m0, row_end, n0, n0_load;
  bool active;
};
template <int kTileW, int kTileT, typename Params>
__device__ __forceinline__ Coord coord_of(const Params& p, const Walk& w, int u) {
  Coord c;
  c.n0 = (kCluster * (u % w.pairs) + w.rank) * kTileW;
  c.active = c.n0 < p.N;
  c.n0_load = c.active ? c.n0 : c.n0 - kTileW;
  const gemm_fp8_detail::RowTile rt = gemm_fp8_detail::row_tile(p, u / w.pairs, kTileT);
  c.group = rt.group;
  c.m0 = rt.m0;
  c.row_end = rt.row_end;
  return c;
}

// The kernel's dynamic shared memory, 1024-byte aligned (128B-swizzled tiles); the ring's barriers at bar_offset:
// full[kStages] (the producer thread's expect_tx) and empty[kStages] (every one of the consumer_warps of both CTAs),
// set up by thread 0 (which also prefetches the activations' map), then a cluster sync, so that the peer's barriers
// exist before any copy or arrival names them. Every thread calls it first.
template <int kStages>
__device__ __forceinline__ uint8_t* init_ring(uint8_t* smem_raw, int bar_offset, const CUtensorMap* map,
                                              uint64_t*& full, uint64_t*& empty, int consumer_warps = 8) {
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  full = reinterpret_cast<uint64_t*>(smem + bar_offset);
  empty = full + kStages;
  if (threadIdx.x == 0) {
    tma::prefetch_map(map);
    for (int s = 0; s < kStages; ++s) {
      mbar::init(&full[s], 1);                           // thread 0's expect_tx
      mbar::init(&empty[s], consumer_warps * kCluster);  // every consumer warp of both CTAs
    }
    tma::fence_barrier_init();
  }
  tma::cluster_sync();
  return smem;
}

// The producer: thread 0 walks the units and, per K block of 128, waits until both CTAs released the stage, expects
// kXBytes of activations (its half and the peer's multicast half) and its weight tiles, has copy_x(stage, kb, c, w)
// issue its half of the activations, and copies its kTileW / 64 weight tiles as stored (4,352-byte MXFP4 tiles,
// flat bulk copies) behind them; an inactive rank loads its peer's (Coord::n0_load).
template <int kStages, int kTileW, int kTileT, int kStageBytes, int kXBytes, typename Params, typename CopyX>
__device__ __forceinline__ void produce(const Params& p, uint8_t* smem, uint64_t* full, uint64_t* empty, CopyX copy_x) {
  const Walk w = walk_of<kTileW, kTileT>(p);
  const int num_kb = ceil_div(p.K, 128);
  const int bands = ceil_div(p.N, 64);
  const int64_t band_bytes = int64_t{num_kb} * kMxfp4TileBytes;
  int s = 0;
  uint32_t phase = 0;
  for (int u = w.first; u < w.units; u += w.stride) {
    const Coord c = coord_of<kTileW, kTileT>(p, w, u);
    const int band0 = c.n0_load / 64, nb = min(kTileW / 64, bands - band0);
    const uint8_t* weights = p.b + c.group * mxfp4_tiled_group_bytes(p.N, p.K) + band0 * band_bytes;
    for (int kb = 0; kb < num_kb; ++kb, s = mbar::next_stage<kStages>(s, phase)) {
      mbar::wait(&empty[s], phase ^ 1);
      uint8_t* stage = smem + s * kStageBytes;
      tma::arrive_expect_tx(&full[s], static_cast<uint32_t>(kXBytes + nb * kMxfp4TileBytes));
      copy_x(stage, kb, c, w, &full[s]);
      for (int b = 0; b < nb; ++b) {
        tma::copy_bulk(stage + kXBytes + b * kMxfp4TileBytes, weights + b * band_bytes + int64_t{kb} * kMxfp4TileBytes,
                       kMxfp4TileBytes, &full[s]);
      }
    }
  }
}

// Releases ring stage s to both CTAs' producers (every lane's reads of it are done).
__device__ __forceinline__ void release(uint64_t* empty, int s, int lane, int rank) {
  __syncwarp();
  if (lane == 0) {
    mbar::arrive(&empty[s]);
    mbar::arrive_cluster(&empty[s], static_cast<uint32_t>(rank ^ 1));
  }
}

// A lane's two weight rows of its warp's 16 (wgmma's fragment rows g and g + 8, lane = 4g + t): kBias-style rows g and
// g + 8; with `paired` (a SwiGLU epilogue) the gate / up pair 2g and 2g + 1, so that a thread's accumulators hold both
// halves of its SwiGLU outputs (no exchange between lanes; its code-unit loads take 2-way bank conflicts). Their byte
// offsets in a stage's 64-row MXFP4 tile (tile row 8c + g' of mxfp4_tiled.h): lane t's 16-byte code unit and the
// word of the row's four scales.
struct FragmentRows {
  int row[2];  // of the 64-row tile
  uint32_t unit[2], scales[2];
};
__device__ __forceinline__ FragmentRows fragment_rows(bool paired, int warp, int g, int t) {
  FragmentRows f;
  f.row[0] = 16 * warp + (paired ? 2 * g : g);
  f.row[1] = 16 * warp + (paired ? 2 * g + 1 : g + 8);
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int c = f.row[i] / 8, gp = f.row[i] % 8;
    f.unit[i] = (32 * c + 4 * gp + t) * 16;
    f.scales[i] = 4096 + 32 * gp + 4 * c;
  }
  return f;
}

// kTokens staged token rows (kRowBytes each, kPitch apart from `staging`) to the output rows m0 + token0 + token below
// row_end (row_bytes apart from `out`), from byte `first` of each, the first `bytes` of each row: 16-byte pieces,
// consecutive threads (wt of the warpgroup's 128) on consecutive pieces of a row, so that every warp store covers
// whole rows. kUnroll: the loop's unroll factor (each kernel keeps the one it was measured with).
template <int kRowBytes, int kTokens, int kPitch, int kUnroll>
__device__ __forceinline__ void copy_rows(void* out, int64_t row_bytes, const Coord& c, int token0, uint32_t staging,
                                          int64_t first, int bytes, int wt) {
  constexpr int kPieces = kRowBytes / 16;
#pragma unroll kUnroll
  for (int i = wt; i < kTokens * kPieces; i += 128) {
    const int token = i / kPieces, piece = i % kPieces;
    if (c.m0 + token0 + token < c.row_end && 16 * piece < bytes) {
      const uint4 v = mbar::ld_shared_v4(staging + token * kPitch + 16 * piece);
      uint8_t* row = static_cast<uint8_t*>(out) + static_cast<int64_t>(c.m0 + token0 + token) * row_bytes;
      *reinterpret_cast<uint4*>(row + first + 16 * piece) = v;
    }
  }
}

// Host: launches `launch`'s kernel (map_x, p) on as many clusters as there are work units (kTileW weight rows ×
// kTileT tokens, pairs of weight tiles per token tile), at most max_units_in_flight (its resident clusters).
template <int kTileW, int kTileT, typename Launch, typename Params>
void launch_units(Launch& launch, int max_units_in_flight, const CUtensorMap& map_x, const Params& p) {
  const int64_t m_tiles = p.grouped.on() ? p.grouped.max_tiles : ceil_div(p.M, kTileT);
  const int64_t max_units = m_tiles * ceil_div(ceil_div(p.N, kTileW), kCluster);
  const int units = static_cast<int>(std::min<int64_t>(max_units, max_units_in_flight));
  if (units == 0) return;
  const cudaLaunchConfig_t cfg = launch.config(units);
  GOSSAMER_CUDA_CHECK(cudaLaunchKernelEx(&cfg, launch.kernel, map_x, p));
  GOSSAMER_CUDA_CHECK_LAUNCH();
}

}  // namespace gossamer::kernels::mxfp4_pair
