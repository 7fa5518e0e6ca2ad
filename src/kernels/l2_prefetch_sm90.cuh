// Device side of l2_prefetch.h: bulk L2 prefetches (sm_90 `cp.async.bulk.prefetch.L2`), split over the CTAs
// of a grid and the lanes of one warp. Fire and forget: nothing waits for them, and a range no kernel
// reads again only costs its DRAM bytes.
#pragma once

#include <cstdint>

#include "kernels/l2_prefetch.h"

namespace gossamer::kernels {

// Asks L2 for [p, p + bytes): 16-byte aligned, bytes a multiple of 16, in pieces of at most 32 KiB.
__device__ __forceinline__ void l2_prefetch_bytes(const uint8_t* p, int64_t bytes) {
  constexpr int64_t kPiece = 32 * 1024;
  for (int64_t off = 0; off < bytes; off += kPiece) {
    const uint32_t n = static_cast<uint32_t>(bytes - off < kPiece ? bytes - off : kPiece);
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(p + off), "r"(n) : "memory");
  }
}

// Lane `lane` (0..31) of the calling warp asks L2 for its piece (l2_prefetch_piece) of share `part` of `parts`
// of [p, p + bytes), so the warps that call it with parts 0..parts−1 cover the range once.
__device__ __forceinline__ void l2_prefetch_share(const uint8_t* p, int64_t bytes, int64_t part, int64_t parts,
                                                  int lane) {
  const L2PrefetchPiece piece = l2_prefetch_piece(bytes / 16, part, parts, lane);
  if (piece.begin < piece.end) l2_prefetch_bytes(p + piece.begin * 16, (piece.end - piece.begin) * 16);
}

// A GEMV's prefetch_next, called by one warp of every CTA that computed (after its own loads are issued):
// a plain range is split over the CTAs of grid row 0 (the whole grid of a dense GEMV; a grouped GEMV's first
// expert slot, in use whenever the GEMV has work); a per-expert range (group_stride) over the CTAs of each
// slot, for the slot's local expert `group`.
__device__ __forceinline__ void l2_prefetch_next(const L2Prefetch& r, int group, int lane) {
  if (!l2_prefetch_wanted(r)) return;
  if (r.group_stride == 0 && blockIdx.y != 0) return;
  l2_prefetch_share(r.ptr + group * r.group_stride, r.bytes, blockIdx.x, gridDim.x, lane);
}

}  // namespace gossamer::kernels
