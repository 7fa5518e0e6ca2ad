// The launch shape both decode GEMVs share (gemv_fp8_sm90.cu, gemv_mxfp4_sm90.cu; host code).
#pragma once

#include <cstdint>

#include "core/error.h"

namespace gossamer::kernels {

// The cluster size that splits K for a grid of `tiles` × `slots` row tiles of `k_steps` K steps each:
// doubled while the grid stays within one CTA per SM (`sms`) and every one of a CTA's `warps` warps keeps
// two K steps (H200, 2026-12-01, `gossamer_kernels_bench gemv-tune`, docs/PERF.md), up to 8; `requested`
// (GemvFp8Params::cluster: 1, 2, 4 or 8; 0 = the rule) overrides it.
inline int gemv_cluster_size(int tiles, int slots, int k_steps, int warps, int sms, int requested, const char* kernel) {
  GOSSAMER_CHECK(requested == 0 || requested == 1 || requested == 2 || requested == 4 || requested == 8, kernel,
                 ": cluster ", requested, " not 1, 2, 4 or 8");
  if (requested != 0) return requested;
  int cluster = 1;
  while (cluster < 8 && int64_t{tiles} * slots * cluster * 2 <= sms && k_steps >= 2 * cluster * warps) cluster *= 2;
  return cluster;
}

}  // namespace gossamer::kernels
