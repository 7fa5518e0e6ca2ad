#include <algorithm>

#include "core/error.h"
#include "kernels/fp8_tiled.h"
#include "kernels/gemm_stream.h"
#include "kernels/gemv_fp8.h"
#include "kernels/gemv_mxfp4.h"
#include "kernels/mxfp4_tiled.h"

namespace gossamer::kernels {

int gemm_stream_tile_rows(int num_tokens) {
  return num_tokens <= 8 ? 8 : num_tokens <= 16 ? 16 : kStreamMaxTileRows;
}

// Each row of each tile as a one-row dense GEMV over its group's weights, scales and bias.
void gemm_stream_cpu(const GemmStreamParams& p) {
  GOSSAMER_CHECK(p.tile_rows >= 8 && p.tile_rows <= kStreamMaxTileRows && p.tile_rows % 8 == 0,
                 "gemm_stream_cpu: tile_rows ", p.tile_rows);
  const int64_t group_bytes = p.w_mxfp4 ? mxfp4_tiled_group_bytes(p.N, p.K) : fp8_tiled_group_bytes(p.N, p.K);
  const int64_t group_scales = int64_t((p.N + 127) / 128) * ((p.K + 127) / 128);
  for (int tile = 0; tile < *p.grouped.num_tiles; ++tile) {
    const int g = p.grouped.tile_group[tile], m0 = p.grouped.tile_m0[tile];
    const int rows = std::min(p.tile_rows, p.grouped.group_offsets[g + 1] - m0);
    for (int r = m0; r < m0 + rows; ++r) {
      GemvFp8Params row;
      row.x = p.x + static_cast<int64_t>(p.x_row_index ? p.x_row_index[r] : r) * p.ldx;
      row.ldx = p.ldx;
      row.w = p.w + g * group_bytes;
      row.w_tiled = true;
      row.w_scales = p.w_mxfp4 ? nullptr : p.w_scales + g * group_scales;
      row.bias = p.bias ? p.bias + static_cast<int64_t>(g) * p.N : nullptr;
      row.out = p.out + static_cast<int64_t>(r) * p.ldc;
      row.ldc = p.ldc;
      row.M = 1;
      row.N = p.N;
      row.K = p.K;
      row.epilogue = p.epilogue;
      if (p.w_mxfp4) {
        gemv_mxfp4_cpu(gemv_mxfp4_params_of(row));
      } else {
        gemv_fp8_cpu(row);
      }
    }
  }
}

}  // namespace gossamer::kernels
