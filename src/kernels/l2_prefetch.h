// L2 prefetch ranges for the decode GEMVs (gemv_fp8.h, gemv_mxfp4.h): hints that never change a result.
//
// Why: a decode step at batch 1–8 is a chain of small kernels. Between the GEMVs that stream the weights
// (qkv, o, the experts' gate_up and down) run latency-bound kernels (norms, RoPE, attention, routing) during
// which DRAM idles, and each GEMV ramps up and drains around its own stream. A GEMV given an L2Prefetch asks
// L2 for another kernel's weights once its own loads are issued, so those bytes are on chip before the later
// GEMV starts; `cp.async.bulk.prefetch.L2` moves them DRAM → L2 without using the SM's load slots or shared
// memory. A candidate (CudaOptions::decode_l2_prefetch), off until measured: docs/PERF.md.
#pragma once

#include <cstdint>

#include "core/cuda/cuda_types.h"  // GOSSAMER_HOST_DEVICE
#include "core/error.h"

namespace gossamer::kernels {

// Bytes [ptr, ptr + bytes) in device memory, or in a grouped GEMV (the MoE decode) one such range per expert:
// [ptr + e · group_stride, + bytes) for each CTA's local expert e.
struct L2Prefetch {
  const uint8_t* ptr = nullptr;  // 16-byte aligned; null: nothing
  int64_t bytes = 0;             // a multiple of 16
  int64_t group_stride = 0;      // grouped GEMVs only; 0: one range for the whole grid
};

GOSSAMER_HOST_DEVICE inline bool l2_prefetch_wanted(const L2Prefetch& r) {
  return r.ptr != nullptr && r.bytes > 0;
}

// The 16-byte units [begin, end) that lane `lane` (0..31) of share `part` of `parts` asks for, out of a range of
// `units`: the grid's parts × 32 lanes cover every unit once (later pieces may be empty).
struct L2PrefetchPiece {
  int64_t begin, end;
};
GOSSAMER_HOST_DEVICE inline L2PrefetchPiece l2_prefetch_piece(int64_t units, int64_t part, int64_t parts, int lane) {
  const int64_t pieces = parts * 32;
  const int64_t per = (units + pieces - 1) / pieces;
  const int64_t begin = (part * 32 + lane) * per;
  return {begin < units ? begin : units, begin + per < units ? begin + per : units};
}

// The launchers' check of a range (`kernel` names the caller in the message).
inline void check_l2_prefetch(const L2Prefetch& r, bool grouped, const char* kernel) {
  if (!l2_prefetch_wanted(r)) return;
  GOSSAMER_CHECK(reinterpret_cast<uintptr_t>(r.ptr) % 16 == 0 && r.bytes % 16 == 0 && r.group_stride % 16 == 0, kernel,
                 ": prefetch_next must be 16-byte aligned with a size and group stride that are multiples of 16");
  GOSSAMER_CHECK(r.group_stride >= 0 && (grouped || r.group_stride == 0), kernel,
                 ": prefetch_next.group_stride needs a grouped GEMV");
}

}  // namespace gossamer::kernels
