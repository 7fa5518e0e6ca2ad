// MoE block pieces (spec §2.4): router top-4 + softmax over the 4, permutation by expert (a plan for
// the grouped FP8 GEMMs), and the weighted combine back to token order. `launch_moe` chains them with
// quantize_fp8 and the grouped gemm_fp8 (gate_up + bias + clamped SwiGLU, then down + bias).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/gemm_fp8.h"

namespace gossamer::kernels {

inline constexpr int kMoeTopK = 4;
inline constexpr int kMoeMaxExperts = 256;

struct MoeRouteParams {
  const uint16_t* logits = nullptr;  // [num_tokens, num_experts] bf16 (router GEMM output, bias included)
  int32_t* topk_ids = nullptr;       // [num_tokens, 4], descending logit, ties → lower expert index
  float* topk_weights = nullptr;     // [num_tokens, 4] fp32, softmax over the 4 selected logits
  int num_tokens = 0;
  int num_experts = 0;  // ≤ 256
};
void launch_moe_route(const MoeRouteParams& p, cudaStream_t stream);
void moe_route_cpu(const MoeRouteParams& p);

// Groups the num_tokens·4 (token, k) pairs by expert (order inside an expert is unspecified) and builds
// the GEMM tile list for tiles of `tile_rows` rows. Experts outside [expert_begin, expert_begin +
// num_local_experts) (expert parallelism) are dropped: their pairs get slot −1.
struct MoePlanParams {
  const int32_t* topk_ids = nullptr;  // [num_tokens, 4]
  int num_tokens = 0;
  int expert_begin = 0;
  int num_local_experts = 0;
  int tile_rows = 128;
  int32_t* group_offsets = nullptr;  // [num_local_experts + 1]
  int32_t* row_token = nullptr;      // [num_tokens·4]: permuted row → token
  int32_t* pair_row = nullptr;       // [num_tokens·4]: (token, k) → permuted row, or −1
  int32_t* tile_group = nullptr;     // [moe_max_tiles(...)]
  int32_t* tile_m0 = nullptr;        // [moe_max_tiles(...)]
  int32_t* num_tiles = nullptr;      // [1]
};
int moe_max_tiles(int num_tokens, int num_local_experts, int tile_rows);
void launch_moe_plan(const MoePlanParams& p, cudaStream_t stream);

// out[t] = bf(residual[t] + Σ_k w[t,k] · y[pair_row[t,k]]) (pairs with row −1 are skipped;
// residual may be null). fp32 sum, one rounding.
struct MoeCombineParams {
  const uint16_t* y = nullptr;  // [num_tokens·4, hidden] bf16 in permuted order (bias included)
  const int32_t* pair_row = nullptr;
  const float* topk_weights = nullptr;
  const uint16_t* residual = nullptr;  // [num_tokens, hidden] bf16 or null
  uint16_t* out = nullptr;             // [num_tokens, hidden] bf16 (may alias residual)
  int num_tokens = 0;
  int hidden = 0;  // multiple of 8
};
void launch_moe_combine(const MoeCombineParams& p, cudaStream_t stream);

// The whole expert block for tokens already normalised (t = RMSNorm_mlp(x)) and routed.
struct MoeParams {
  const uint16_t* x = nullptr;       // [num_tokens, hidden] bf16 (normalised activations)
  const uint16_t* logits = nullptr;  // [num_tokens, num_experts] bf16 router output
  const uint16_t* residual = nullptr;  // [num_tokens, hidden] bf16 or null
  uint16_t* out = nullptr;             // [num_tokens, hidden] bf16
  // Local experts [expert_begin, expert_begin + num_local_experts), FP8 128×128 block-scaled.
  const uint8_t* w1 = nullptr;  // [E_local, 2·inter, hidden] fp8, rows interleaved gate/up
  const float* w1_scales = nullptr;
  const uint16_t* b1 = nullptr;  // [E_local, 2·inter] bf16
  const uint8_t* w2 = nullptr;   // [E_local, hidden, inter] fp8
  const float* w2_scales = nullptr;
  const uint16_t* b2 = nullptr;  // [E_local, hidden] bf16
  bool weights_tiled = false;    // w1 and w2 in the tile-major layout of fp8_tiled.h
  int num_tokens = 0;
  int num_experts = 0;
  int expert_begin = 0;
  int num_local_experts = 0;
  int hidden = 2880;
  int inter = 2880;
  // The expert GEMMs' tile at 128-row tiles (k128x128tma / k128x192tma need weights_tiled); kAuto lets
  // launch_gemm_fp8 choose. Benchmarks and tests pin it to compare kernels.
  GemmTile gemm_tile = GemmTile::kAuto;
};
// Device scratch for launch_moe, carved from one buffer of moe_workspace_bytes().
size_t moe_workspace_bytes(int num_tokens, int num_local_experts, int hidden, int inter);
void launch_moe(const MoeParams& p, void* workspace, cudaStream_t stream);
// Reference of the whole block with the same quantization points (host memory throughout).
void moe_cpu(const MoeParams& p);

}  // namespace gossamer::kernels
