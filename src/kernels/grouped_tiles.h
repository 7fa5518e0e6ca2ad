// The tile list of a grouped (MoE) GEMM, one truth for every grouped kernel (gemm_fp8.h, gemm_bf16.h,
// gemm_w4a16.h, gemm_stream.h): the problem's rows are partitioned into groups (experts), group g's rows being
// [group_offsets[g], group_offsets[g + 1]); its M tiles come from a device list built by launch_moe_plan (moe.h)
// for the tile_rows that the kernel's header names: tile i covers rows [tile_m0[i], min(tile_m0[i] + tile_rows,
// group_offsets[tile_group[i] + 1])) of group tile_group[i], for i < *num_tiles ≤ max_tiles (the launch's static
// bound; slots past *num_tiles do nothing). Device memory for the GPU kernels, host memory for their references
// (which read group_offsets directly and ignore the tile list, except gemm_stream_cpu).
#pragma once

#include <cstdint>

#include "core/cuda/cuda_types.h"  // GOSSAMER_HOST_DEVICE

namespace gossamer::kernels {

struct GroupedTiles {
  const int32_t* group_offsets = nullptr;  // [num_groups + 1] int32 row offsets
  const int32_t* tile_group = nullptr;     // [max_tiles] int32
  const int32_t* tile_m0 = nullptr;        // [max_tiles] int32
  const int32_t* num_tiles = nullptr;      // [1] int32, ≤ max_tiles
  int max_tiles = 0;                       // static bound on the tiles (the launch's grid or work list)
  int num_groups = 1;                      // groups in the weights (and their scales and biases)
  // Grouped mode: the tile list is set (all null for a plain GEMM).
  GOSSAMER_HOST_DEVICE bool on() const { return tile_group != nullptr; }
  // Every list pointer set (a launcher's check).
  bool complete() const { return group_offsets && tile_group && tile_m0 && num_tiles && max_tiles >= 0; }
};

}  // namespace gossamer::kernels
