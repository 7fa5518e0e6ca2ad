// bf16 activations × MXFP4 weights on Hopper (W4A16, as the peers run MXFP4 experts on Hopper): each consumer warp
// decodes its 16 weight rows of a K block from the tiled MXFP4 bytes (mxfp4_tiled.h) straight into wgmma's bf16 A
// fragment registers, the MX scale folded into every weight, so the bf16 wgmma accumulates across all of K in fp32 —
// no per-block promotion (an FP8 wgmma on e4m3-decoded weights must promote every 128 K). The problem is computed
// transposed (weights as M, tokens as N of wgmma):
//
//   out[m, n] = epilogue(bias[n] + Σ_k A[m, k] · W[n, k]),   W[n, k] = fp4 · 2^(e − 127) as bf16 (exact),
//
// fp32 sums, one rounding to bf16 (gemm_w4a16_cpu is this formula). Exact for every MX exponent e whose values fit
// bf16 (the checkpoint's: its experts' e are far inside); an e of 255 (E8M0's NaN) is not supported.
//
// A (the activations) is stored in the weights' register order: within every 32 columns, stored column c holds
// column w4a16_source_column(c) (mxfp4_tiled.h); launch_w4a16_activations writes it.
//
// Parameters: A [M, K] bf16 rows (lda a multiple of 8, 16-byte aligned; the grouped problem's rows contiguous, no
// gather), K a multiple of 32; B [num_groups, mxfp4_tiled_group_bytes(N, K)] the tiled MXFP4 weights; epilogue kBias
// (N a multiple of 8) or kSwiGlu (N of 16; even rows gate, odd rows up: out[m, n / 2]; with out_register_order
// (N of 64) out's every 32 columns in register order: the next W4A16 GEMM's A). out 16-byte aligned, ldc a multiple
// of 8. Grouped mode as in gemm_fp8.h, the tile lists built with tile_rows rows per tile.
// Launchers: device pointers, asynchronous on `stream`, graph capturable (fixed grid for given shapes).
#pragma once

#include <cstdint>

#include "core/cuda/cuda_types.h"  // cudaStream_t
#include "kernels/gemm_fp8.h"      // GemmEpilogue
#include "kernels/grouped_tiles.h"

namespace gossamer::kernels {

struct GemmW4A16Params {
  const uint16_t* a = nullptr;  // [M, K] bf16 in register order, row stride lda elements
  int64_t lda = 0;
  const uint8_t* b = nullptr;      // [num_groups, mxfp4_tiled_group_bytes(N, K)] u8
  const uint16_t* bias = nullptr;  // [num_groups, N] bf16 or null
  uint16_t* out = nullptr;         // [M, N] (kBias) or [M, N / 2] (kSwiGlu) bf16, row stride ldc elements
  int64_t ldc = 0;
  bool out_register_order = false;  // kSwiGlu: out stored in register order (see above)
  int M = 0, N = 0, K = 0;
  GemmEpilogue epilogue = GemmEpilogue::kBias;
  GroupedTiles grouped;  // grouped mode (grouped_tiles.h; unset for a plain GEMM): tiles of tile_rows rows
  int tile_rows = 128;   // tokens per CTA tile: gemm_w4a16_tile_rows()'s 128, 64, 32 or 16 (a grouped list's)
};

// The token tile for tiles of max_rows_per_tile rows worth computing (a plain GEMM's M, an expert's mean rows): up to
// narrow_max_rows a narrow tile (the weights are then what the kernel streams: a narrow tile computes fewer padded
// tokens and keeps more weight stages in flight), the narrowest of 16, 32 and 64 tokens that holds twice the mean (an
// expert routed more rows than its tile is cut into more tiles, each decoding its weights again; at a mean of m rows
// one rarely holds more than m + 3√m), else 128. The default kW4A16NarrowMaxRows from measurements (docs/PERF.md,
// thirty-third session, H100, dummy weights routing like a trained model's): 20b decode at 64 / 96 / 128 / 256 tokens
// (8–32 rows an expert) −28 / −27 / −26 / −6% with narrow tiles, 120b at 256 (8 rows) −39%; at 48 and 64 rows they lost
// (+7%, +21%). The ladder of 16 / 32 / 64 against 32-token tiles alone (thirty-fifth session, H100): 20b at 32 / 64 /
// 256 tokens −3 / −3 / −11%, 120b at 64 / 256 −5 / −4%, 20b at 128 level (docs/kernels-hopper.md).
inline constexpr int kW4A16NarrowMaxRows = 32;
int gemm_w4a16_tile_rows(int max_rows_per_tile, int narrow_max_rows = kW4A16NarrowMaxRows);

void launch_gemm_w4a16(const GemmW4A16Params& p, cudaStream_t stream);

// The reference: the formula above on host memory (A as stored, in register order).
void gemm_w4a16_cpu(const GemmW4A16Params& p);

// The activations in register order, scattered into expert order: input row r of x ([rows, K] bf16, row stride
// ldx) is written to each row scatter_rows[r · 4 + k] ≥ 0 (k < 4; −1 skips) of out ([*, K] bf16, row stride ldo),
// its columns permuted as w4a16_source_column says (K a multiple of 32; x, out 16-byte aligned, ldx and ldo
// multiples of 8). Rows that no input names are left untouched.
void launch_w4a16_activations(const uint16_t* x, int64_t ldx, int rows, int K, const int32_t* scatter_rows,
                              uint16_t* out, int64_t ldo, cudaStream_t stream);
void w4a16_activations_cpu(const uint16_t* x, int64_t ldx, int rows, int K, const int32_t* scatter_rows, uint16_t* out,
                           int64_t ldo);

}  // namespace gossamer::kernels
