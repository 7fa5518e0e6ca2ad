// bf16 GEMM for the "--weights bf16" accuracy baseline (the FP8 path stays the default):
//   out[m, n] = epilogue(bias[n] + Σ_k A[m, k] · B[n, k]),  bf16 inputs, fp32 accumulation, one rounding.
// Tensor cores through mma.sync m16n8k16 (bf16 × bf16 → fp32), 128×128×32 CTA tiles, 8 warps, cp.async
// multi-buffered into XOR-swizzled shared memory. Partial M/N/K tiles are zero-filled (K need not be a
// multiple of the 32-wide K tile).
//
// Grouped mode (MoE): identical to GemmFp8Params — rows are partitioned into groups by `group_offsets`;
// group g uses B[g] and bias[g]; row r of the grouped problem reads A row a_row_index[r]; M tiles come
// from the device tile list built by launch_moe_plan (moe.h) with tile_rows = gemm_bf16_tile_rows().
// The MoE block with bf16 experts (launch_moe_bf16) lives in moe.h with the other MoE compositions.
//
// Epilogues (kernels::GemmEpilogue): kBias writes out[m, n]; kSwiGlu treats even columns as gate and odd
// columns as up (gate = min(gate, 7), up = clamp(up, ±7), out = gate·σ(1.702·gate)·(up + 1)) and writes
// out[m, n/2]. The bias is added before the SwiGLU (accumulators start from it).
//
// Contracts: K a multiple of 16, N a multiple of 8, M ≥ 0 (0 is a no-op); lda a multiple of 8 elements and
// a, b 16-byte aligned (cp.async 16); bias 4-byte aligned; kBias needs ldc even and out 4-byte aligned.
// The launchers never synchronise or allocate (CUDA-graph capturable).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/cuda/cuda_types.h"  // cudaStream_t, GOSSAMER_HOST_DEVICE
#include "kernels/gemm_fp8.h"      // GemmEpilogue
#include "kernels/grouped_tiles.h"

namespace gossamer::kernels {

struct GemmBf16Params {
  const uint16_t* a = nullptr;  // [rows_a, K] bf16, row stride lda elements (multiple of 8)
  int64_t lda = 0;
  const int32_t* a_row_index = nullptr;  // [M] int32 or null (identity): grouped row → A row
  const uint16_t* b = nullptr;           // [num_groups, N, K] bf16, K contiguous
  const uint16_t* bias = nullptr;        // [num_groups, N] bf16 or null
  uint16_t* out = nullptr;               // [M, N] (kBias) or [M, N/2] (kSwiGlu) bf16, row stride ldc elements
  int64_t ldc = 0;
  int M = 0;  // rows of the (grouped) problem
  int N = 0;  // multiple of 8 (even/odd pairs for kSwiGlu)
  int K = 0;  // multiple of 16
  GemmEpilogue epilogue = GemmEpilogue::kBias;
  GroupedTiles grouped;  // grouped mode (grouped_tiles.h; unset for a plain GEMM): tile_rows = gemm_bf16_tile_rows()
};

// The BM of the launcher's CTA tile (128); grouped tile lists must be built with this tile_rows.
int gemm_bf16_tile_rows();

void launch_gemm_bf16(const GemmBf16Params& p, cudaStream_t stream);

// Host reference (all pointers host memory; in grouped mode group_offsets is read directly and the tile
// list is ignored). fp32 accumulation, epilogue in fp32, one rounding to bf16.
void gemm_bf16_cpu(const GemmBf16Params& p);

}  // namespace gossamer::kernels
