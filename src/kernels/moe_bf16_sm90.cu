// MoE expert block with bf16 weights (accuracy baseline): route → plan (tiles of gemm_bf16_tile_rows()
// rows) → grouped bf16 gate_up + b1 + clamped SwiGLU (tokens gathered through row_token) → grouped bf16
// down + b2 → weighted combine. Same pieces and workspace scheme as launch_moe (moe_routing_sm90.cu),
// minus the fp8 quantization steps.
#include <algorithm>

#include "kernels/cuda_utils.h"
#include "kernels/gemm_bf16.h"
#include "kernels/moe.h"

namespace gossamer::kernels {
namespace {

size_t align_up(size_t v) { return (v + 255) & ~size_t(255); }

struct MoeBf16Workspace {
  int32_t *topk_ids, *group_offsets, *row_token, *pair_row, *tile_group, *tile_m0, *num_tiles;
  float* topk_weights;
  uint16_t *h, *y;
  size_t bytes;
};

// Offsets are 256-byte aligned from `base`; with base == nullptr only `bytes` is meaningful.
MoeBf16Workspace carve(uint8_t* base, int T, int E, int hidden, int inter) {
  MoeBf16Workspace w{};
  size_t off = 0;
  auto take = [&](size_t bytes) {
    uint8_t* ptr = base ? base + off : nullptr;
    off += align_up(bytes);
    return ptr;
  };
  const size_t pairs = static_cast<size_t>(T) * kMoeTopK;
  const size_t max_tiles = static_cast<size_t>(moe_max_tiles(T, E, gemm_bf16_tile_rows()));
  w.topk_ids = reinterpret_cast<int32_t*>(take(pairs * 4));                  // [T, 4] int32
  w.topk_weights = reinterpret_cast<float*>(take(pairs * 4));                // [T, 4] fp32
  w.group_offsets = reinterpret_cast<int32_t*>(take((static_cast<size_t>(E) + 1) * 4));  // [E + 1] int32
  w.row_token = reinterpret_cast<int32_t*>(take(pairs * 4));                 // [T·4] int32
  w.pair_row = reinterpret_cast<int32_t*>(take(pairs * 4));                  // [T·4] int32
  w.tile_group = reinterpret_cast<int32_t*>(take(max_tiles * 4));            // [max_tiles] int32
  w.tile_m0 = reinterpret_cast<int32_t*>(take(max_tiles * 4));               // [max_tiles] int32
  w.num_tiles = reinterpret_cast<int32_t*>(take(4));                         // [1] int32
  w.h = reinterpret_cast<uint16_t*>(take(pairs * inter * 2));                // [T·4, inter] bf16
  w.y = reinterpret_cast<uint16_t*>(take(pairs * hidden * 2));               // [T·4, hidden] bf16
  w.bytes = off;
  return w;
}

}  // namespace

size_t moe_bf16_workspace_bytes(int num_tokens, int num_local_experts, int hidden, int inter) {
  return carve(nullptr, num_tokens, num_local_experts, hidden, inter).bytes;
}

void launch_moe_bf16(const MoeBf16Params& p, void* workspace, cudaStream_t stream) {
  GOSSAMER_CHECK(p.hidden % 16 == 0 && p.inter % 16 == 0, "moe_bf16: hidden (", p.hidden, ") and inter (", p.inter,
                 ") must be multiples of 16");
  GOSSAMER_CHECK(p.num_local_experts > 0 && p.expert_begin >= 0 &&
                     p.expert_begin + p.num_local_experts <= p.num_experts,
                 "moe_bf16: local experts [", p.expert_begin, ", +", p.num_local_experts, ") outside ", p.num_experts);
  if (p.num_tokens == 0) return;
  GOSSAMER_CHECK(workspace != nullptr && reinterpret_cast<uintptr_t>(workspace) % 16 == 0,
                 "moe_bf16: workspace must be a 16-byte aligned buffer of moe_bf16_workspace_bytes()");
  const int T = p.num_tokens, E = p.num_local_experts;
  const int tile_rows = gemm_bf16_tile_rows();
  const MoeBf16Workspace w = carve(static_cast<uint8_t*>(workspace), T, E, p.hidden, p.inter);
  // ---- route and plan ----
  launch_moe_route({p.logits, w.topk_ids, w.topk_weights, T, p.num_experts}, stream);
  MoePlanParams plan{w.topk_ids, T, p.expert_begin, E, tile_rows, w.group_offsets, w.row_token, w.pair_row,
                     w.tile_group, w.tile_m0, w.num_tiles};
  launch_moe_plan(plan, stream);
  // ---- gate_up (gathered tokens) + b1 + SwiGLU → h [T·4, inter] ----
  GemmBf16Params g1;
  g1.a = p.x;
  g1.lda = p.hidden;
  g1.a_row_index = w.row_token;
  g1.b = p.w1;
  g1.bias = p.b1;
  g1.out = w.h;
  g1.ldc = p.inter;
  g1.M = T * kMoeTopK;
  g1.N = 2 * p.inter;
  g1.K = p.hidden;
  g1.epilogue = GemmEpilogue::kSwiGlu;
  g1.group_offsets = w.group_offsets;
  g1.tile_group = w.tile_group;
  g1.tile_m0 = w.tile_m0;
  g1.num_tiles = w.num_tiles;
  g1.max_tiles = moe_max_tiles(T, E, tile_rows);
  launch_gemm_bf16(g1, stream);
  // ---- down + b2 → y [T·4, hidden] ----
  // NOTE: rows of h past group_offsets[E] (pairs routed to other ranks) are never written nor read.
  GemmBf16Params g2 = g1;
  g2.a = w.h;
  g2.lda = p.inter;
  g2.a_row_index = nullptr;
  g2.b = p.w2;
  g2.bias = p.b2;
  g2.out = w.y;
  g2.ldc = p.hidden;
  g2.N = p.hidden;
  g2.K = p.inter;
  g2.epilogue = GemmEpilogue::kBias;
  launch_gemm_bf16(g2, stream);
  // ---- weighted combine (+ residual) ----
  launch_moe_combine({w.y, w.pair_row, w.topk_weights, p.residual, p.out, T, p.hidden}, stream);
}

}  // namespace gossamer::kernels
