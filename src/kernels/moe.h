// The MoE op family, one header: the pieces — router top-4 + softmax over the 4 (route), permutation by
// expert with the grouped GEMMs' tile list (plan), the weighted combine back to token order (combine) —
// and the expert block over them: one composition (moe_sm90.cu) with four entry points,
//   launch_moe         FP8 experts, grouped FP8 GEMMs with per-token activation quantization, or MXFP4
//                      experts, grouped W4A16 GEMMs on bf16 activations (prefill; gemm_w4a16.h);
//   launch_moe_decode  FP8 or MXFP4 experts, grouped weight-only GEMVs, ≤ kGemvMaxRows tokens (decode);
//   launch_moe_stream  FP8 or MXFP4 experts, the weight-streaming grouped GEMM (decode batches);
//   launch_moe_bf16    bf16 experts, grouped bf16 GEMMs (the --weights bf16 accuracy baseline).
// Each is route → (plan) → gate_up + bias + clamped SwiGLU → down + bias → combine. Every piece and every
// composition has its CPU reference in moe_cpu.cpp (library gossamer_kernels_ref).
#pragma once

#include <cstdint>

#include "core/cuda/cuda_types.h"  // cudaStream_t, cudaEvent_t, GOSSAMER_HOST_DEVICE
#include "kernels/gemm_fp8.h"      // GemmTile
#include "kernels/gemm_w4a16.h"    // kW4A16NarrowMaxRows
#include "kernels/gemv_fp8.h"      // kGemvMaxRows, kGemvMaxPairs
#include "kernels/gemv_mxfp4.h"    // GemvMxfp4Shape

namespace gossamer::kernels {

inline constexpr int kMoeTopK = 4;
inline constexpr int kMoeMaxExperts = 256;
static_assert(kGemvMaxPairs == kGemvMaxRows * kMoeTopK, "gemv_fp8.h sizes its grouped mode for top-4");

struct MoeRouteParams {
  const uint16_t* logits = nullptr;  // [num_tokens, num_experts] bf16 (router GEMM output, bias included)
  int32_t* topk_ids = nullptr;       // [num_tokens, 4], descending logit, ties → lower expert index
  float* topk_weights = nullptr;     // [num_tokens, 4] fp32, softmax over the 4 selected logits
  int num_tokens = 0;
  int num_experts = 0;  // ≤ 256
};
void launch_moe_route(const MoeRouteParams& p, cudaStream_t stream);
void moe_route_cpu(const MoeRouteParams& p);

// One row of the rule above on float logits with any k (the CPU backend's router): the k largest of
// logits[0, num_experts) in descending order, ties to the lower index, and softmax weights over them
// (exp(l − l_max) / Σ, fp32).   logits: [num_experts] f32 → ids: [k] int32, weights: [k] f32
void moe_topk_softmax_cpu(const float* logits, int num_experts, int k, int32_t* ids, float* weights);

// Groups the num_tokens·4 (token, k) pairs by expert (in pair order inside an expert) and builds
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
// Reference (host memory). Within an expert, rows follow (token, k) pair order, on the GPU as well: the same plan
// bit for bit.
void moe_plan_cpu(const MoePlanParams& p);

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
void moe_combine_cpu(const MoeCombineParams& p);  // reference (host memory), same sum order: k = 0..3

// The pieces of launch_moe in launch order (MoeParams::phase_events): route, plan (pairs grouped by
// expert, the GEMMs' tile list), the tokens quantized into expert order, the gate_up GEMM (+ bias, SwiGLU),
// h quantized, the down GEMM (+ bias), the weighted combine back to token order.
enum class MoePhase : uint8_t { kRoute, kPlan, kQuantizeTokens, kGateUp, kQuantizeHidden, kDown, kCombine };
inline constexpr int kNumMoePhases = 7;
const char* moe_phase_name(MoePhase phase);

// The whole expert block for tokens already normalised (t = RMSNorm_mlp(x)) and routed.
struct MoeParams {
  const uint16_t* x = nullptr;         // [num_tokens, hidden] bf16 (normalised activations)
  const uint16_t* logits = nullptr;    // [num_tokens, num_experts] bf16 router output
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
  // w1 and w2 in the tiled MXFP4 layout of mxfp4_tiled.h ([E_local, mxfp4_tiled_group_bytes(N, K)] u8,
  // scales inside; w1_scales / w2_scales unused; hidden and inter multiples of 32): every entry point.
  // launch_moe then runs gemm_w4a16.h's GEMMs: bf16 activations (no FP8 quantization of x or h) times the weights
  // decoded exactly to bf16, i.e. launch_moe_bf16's arithmetic on the MXFP4 values (moe_cpu's reference).
  bool weights_mxfp4 = false;
  // launch_moe with weights_mxfp4: gemm_w4a8.h's GEMMs instead (x quantized per token to e4m3, h to e4m3 at the fixed
  // scale kW4A8HiddenScale, the weights decoded to e5m2 against each row's largest MX exponent), with those exponents
  // in w1_row_exponents [E_local, 2·inter] and w2_row_exponents [E_local, hidden] (launch_mxfp4_tiled_row_exponents).
  bool mxfp4_w4a8 = false;
  // The W4A16 GEMMs' 32-token tiles for experts of up to this many rows on average, 128-token tiles above
  // (gemm_w4a16_tile_rows).
  int w4a16_narrow_max_rows = kW4A16NarrowMaxRows;
  const uint8_t* w1_row_exponents = nullptr;
  const uint8_t* w2_row_exponents = nullptr;
  int num_tokens = 0;
  int num_experts = 0;
  int expert_begin = 0;
  int num_local_experts = 0;
  int hidden = 2880;
  int inter = 2880;
  // The expert GEMMs' tile at 128-row tiles (k128x192tma2 / k128x256tma2 need weights_tiled; MXFP4 experts always
  // run the B-sharing k128x256tma2b); kAuto lets launch_gemm_fp8 choose (grouped: k128x256tma2). Benchmarks and
  // tests pin it to compare kernels.
  GemmTile gemm_tile = GemmTile::kAuto;
  // NOTE: launch_moe with FP8 tile-major experts at 128-row tiles: the gate_up GEMM quantizes h in its
  // epilogue (GemmEpilogue::kSwiGluFp8, on the k128x256tma2 tile whatever gemm_tile) instead of writing bf16 h
  // for a separate pass; bit-identical to the separate pass (measured faster on the H200, docs/PERF.md
  // 2026-12-05: 8,192 tokens E = 32 2,569.5 → 2,533.1 µs).
  // launch_moe with FP8 experts (either format): the tokens quantized once each and scattered to their
  // expert-order rows (QuantizeFp8Params::scatter_rows through the plan's pair_row) instead of once per row
  // (row_index); bit-identical. On (measured faster on the H100, docs/PERF.md 2026-12-05 seventeenth session:
  // 20b prefill 8,192 tokens 0.087 → 0.084 s); false for A/B (hidden --no-moe-quantize-tokens-once).
  bool quantize_tokens_once = true;
  // launch_moe_decode with weights_mxfp4 only: both GEMVs' launch shape (gemv_mxfp4.h); the product leaves
  // kRule, tests and benchmarks pin the others.
  GemvMxfp4Shape gemv_mxfp4_shape = GemvMxfp4Shape::kRule;
  // launch_moe_decode with weights_mxfp4 only: GemvMxfp4Params::single_row for both GEMVs (it applies to one
  // token).
  bool gemv_single_row = true;
  // launch_moe_decode with weights_mxfp4 only: GemvMxfp4Params::x_shared for the gate_up GEMV, which copies x
  // before its PDL wait (x_from_earlier_kernel: the route launch sits between x's writer and it). Not for down:
  // its x is the kernel before's output, so the copy would wait behind the PDL wait (measured slower, H100
  // 2026-12-05 fifteenth session: down 16.2 -> 17.5 us, gate_up 24.1 -> 22.5 us).
  bool gemv_x_shared = true;
  // launch_moe_decode and launch_moe: stop after the down projection and leave the combine to the next RMSNorm,
  // which sums the pieces moe_decode_deferred_combine / moe_deferred_combine name (rmsnorm.h moe_y); residual and out
  // unused.
  bool combine_deferred = false;
  // launch_moe only, for benchmarks: [kNumMoePhases + 1] events recorded on the stream, event i as phase i
  // (MoePhase) starts and the last after the combine; null (the product) records none.
  cudaEvent_t* phase_events = nullptr;
};
// Device scratch for launch_moe, carved from one buffer of moe_workspace_bytes().
size_t moe_workspace_bytes(int num_tokens, int num_local_experts, int hidden, int inter);
void launch_moe(const MoeParams& p, void* workspace, cudaStream_t stream);
// Reference of the whole block with the same quantization points (host memory throughout); MXFP4 experts are
// decoded to bf16 (mxfp4_tiled_to_bf16_cpu) and run as moe_bf16_cpu, the W4A16 GEMMs' arithmetic, or with
// mxfp4_w4a8 run through gemm_w4a8_cpu with the W4A8 GEMMs' quantization points (row exponents on the host).
void moe_cpu(const MoeParams& p);

// ---- MoE expert block with bf16 weights --------------------------------------------------------------
// Same chain as launch_moe without the fp8 quantization: route → plan → grouped gate_up GEMM
// (A rows gathered by row_token) + b1 + clamped SwiGLU → h bf16 → grouped down GEMM + b2 → y bf16 →
// weighted combine (+ residual). Rounding points: h and y in bf16, the combine sums in fp32.
struct MoeBf16Params {
  const uint16_t* x = nullptr;         // [num_tokens, hidden] bf16 (normalised activations)
  const uint16_t* logits = nullptr;    // [num_tokens, num_experts] bf16 router output (bias included)
  const uint16_t* residual = nullptr;  // [num_tokens, hidden] bf16 or null
  uint16_t* out = nullptr;             // [num_tokens, hidden] bf16 (may alias residual)
  // Local experts [expert_begin, expert_begin + num_local_experts).
  const uint16_t* w1 = nullptr;  // [E_local, 2·inter, hidden] bf16, rows interleaved gate/up
  const uint16_t* b1 = nullptr;  // [E_local, 2·inter] bf16
  const uint16_t* w2 = nullptr;  // [E_local, hidden, inter] bf16
  const uint16_t* b2 = nullptr;  // [E_local, hidden] bf16
  int num_tokens = 0;
  int num_experts = 0;  // in [4, 256]
  int expert_begin = 0;
  int num_local_experts = 0;
  int hidden = 2880;  // multiple of 16
  int inter = 2880;   // multiple of 16
};
// Device scratch for launch_moe_bf16, carved from one buffer of this many bytes (16-byte aligned base).
size_t moe_bf16_workspace_bytes(int num_tokens, int num_local_experts, int hidden, int inter);
void launch_moe_bf16(const MoeBf16Params& p, void* workspace, cudaStream_t stream);
// Reference of the whole block with the same rounding points (host memory throughout).
void moe_bf16_cpu(const MoeBf16Params& p);

// ---- MoE decode on the weight-only GEMV ----
// The whole expert block above (same MoeParams, same result up to rounding) for num_tokens ≤
// kGemvMaxRows, with weight-only quantization: launch_moe_route → grouped GEMV gate_up + bias + SwiGLU
// (act [T·4, inter] bf16, one row per pair) → grouped GEMV down + bias (y [T·4, hidden] bf16) →
// launch_moe_combine with pair_row = identity (−1 for pairs routed to other ranks; with combine_deferred
// no combine: the next RMSNorm sums the pieces, moe_decode_deferred_combine). Unlike launch_moe
// (and moe_cpu), x and the SwiGLU output are not quantized to fp8: act and y are rounded to bf16.
// Requires hidden and inter multiples of 16 (of 32 with weights_mxfp4: gemv_mxfp4.h), num_local_experts ≥ 1.
// Graph capturable.
size_t moe_decode_workspace_bytes(int num_tokens, int hidden, int inter);
void launch_moe_decode(const MoeParams& p, void* workspace, cudaStream_t stream);
// The combine launch_moe_decode left undone with combine_deferred: y, pair_row and topk_weights inside
// `workspace` (valid until its next use; residual and out null), for that launch's num_tokens, hidden and
// inter. Host only, no launch.
MoeCombineParams moe_decode_deferred_combine(void* workspace, int num_tokens, int hidden, int inter);
// The same for launch_moe with combine_deferred, for that launch's num_tokens, num_local_experts, hidden, inter,
// weights_mxfp4 and mxfp4_w4a8 (its y in expert order, pair_row from its plan).
MoeCombineParams moe_deferred_combine(void* workspace, int num_tokens, int num_local_experts, int hidden, int inter,
                                      bool weights_mxfp4, bool mxfp4_w4a8);
// One grouped GEMV of the decode block, shared by launch_moe_decode and moe_decode_cpu. gate_up: pair q
// reads x row q / 4 (a token of p.x) and writes act row q with the SwiGLU, and pair_row[q] = q or −1;
// down: pair q reads act row q and writes y row q (its weights stream before the PDL wait: the routing
// was written two launches back).   act: [T·4, inter] bf16, y: [T·4, hidden] bf16
GemvFp8Params moe_decode_projection(const MoeParams& p, bool gate_up, const int32_t* topk_ids, uint16_t* act,
                                    int32_t* pair_row, uint16_t* y);
// Reference with the decode path's own rounding points: bf16 x, fp32 GEMVs (gemv_fp8_cpu), act and y
// rounded to bf16, fp32 combine (host memory throughout; writes p.out). Any token count.
void moe_decode_cpu(const MoeParams& p);

// ---- MoE decode on the weight-streaming grouped GEMM (gemm_stream.h) ----
// The same block and result as launch_moe_decode (same rounding points: x bf16, fp32 per-block partials,
// act and y rounded to bf16, fp32 combine; so moe_decode_cpu is its reference) for any token count, FP8
// experts tile-major (weights_tiled) or MXFP4 (weights_mxfp4): launch_moe_route → launch_moe_plan (tiles of
// gemm_stream_tile_rows(T) rows) → stream GEMM gate_up + b1 + SwiGLU (h [T·4, inter] bf16 in plan order,
// x rows gathered by row_token) → stream GEMM down + b2 (y [T·4, hidden] bf16; its first weight stages
// stream before its PDL wait) → launch_moe_combine through the plan's pair_row. Each used expert's
// weights are read once per step (once per 32-row tile past 32 pairs). Meant for decode batches (the
// grid has ceil(N/128) × min(4T, tiles) CTAs). Requires hidden and inter multiples of 16 (of 32 with
// weights_mxfp4), 1 ≤ num_local_experts ≤ 256 inside num_experts. Graph capturable.
size_t moe_stream_workspace_bytes(int num_tokens, int num_local_experts, int hidden, int inter);
void launch_moe_stream(const MoeParams& p, void* workspace, cudaStream_t stream);

}  // namespace gossamer::kernels
