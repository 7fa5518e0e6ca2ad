// The one composition of the MoE expert block (moe.h) on the GPU, for its three kinds of expert step:
//
//   route → [plan] → gate_up + bias + clamped SwiGLU → down + bias → combine (+ residual)
//
//   kFp8Gemm  (launch_moe):        plan with the FP8 GEMM's tile rows; x and h quantized per token (1×128)
//                                  into expert order and fed to the grouped FP8 GEMMs.
//   kMxfp4Gemm (launch_moe, weights_mxfp4): plan with the W4A16 GEMM's tile rows; x scattered into expert order
//                                  in bf16 and fed to the grouped W4A16 GEMMs (gemm_w4a16.h), h and y bf16.
//   kMxfp4W4A8 (launch_moe, weights_mxfp4 and mxfp4_w4a8): plan with the W4A8 GEMM's tile rows; x quantized per
//                                  token into expert order (e4m3), the grouped W4A8 GEMMs (gemm_w4a8.h), h e4m3
//                                  at a fixed scale, y bf16.
//   kBf16Gemm (launch_moe_bf16):   plan with the bf16 GEMM's tile rows; grouped bf16 GEMMs, h and y bf16.
//   kFp8Gemv  (launch_moe_decode): no plan: the grouped weight-only GEMVs (moe_decode_projection, shared
//                                  with moe_decode_cpu) group the ≤ 32 (token, k) pairs by expert
//                                  themselves and keep pair order (pair_row = identity or −1, written by
//                                  the gate_up launch); the down GEMV streams its experts' weights before
//                                  its PDL wait (the routing was written two launches back).
//   kStream   (launch_moe_stream): plan with the stream GEMM's tile rows (8–32); the weight-streaming
//                                  grouped GEMMs (gemm_stream.h, FP8 or MXFP4 experts) read x rows through
//                                  row_token, h in plan order; the down GEMM streams its first weight
//                                  stages before its PDL wait (the plan was written two launches back).
//
// Each launch has a fixed grid for given shapes and no host synchronisation: graph capturable.
#include <algorithm>
#include <climits>

#include "kernels/cuda_utils.h"
#include "kernels/gemm_bf16.h"
#include "kernels/gemm_fp8.h"
#include "kernels/gemm_stream.h"
#include "kernels/gemm_w4a16.h"
#include "kernels/gemm_w4a8.h"
#include "kernels/gemv_fp8.h"
#include "kernels/gemv_mxfp4.h"
#include "kernels/moe.h"
#include "kernels/quantize_fp8.h"

namespace gossamer::kernels {
namespace {

enum class ExpertStep { kFp8Gemm, kMxfp4Gemm, kMxfp4W4A8, kBf16Gemm, kFp8Gemv, kStream };

size_t align_up(size_t v) {
  return (v + 255) & ~size_t(255);
}
int64_t ld16(int cols) {
  return (cols + 15) / 16 * 16;
}

// The rows per tile of the plan (0: no plan); w4a16_narrow_max_rows: MoeParams's (INT_MAX: the narrowest tiles the
// step can take, which bound its tile list).
int plan_tile_rows(ExpertStep step, int T, int E, int w4a16_narrow_max_rows) {
  switch (step) {
    case ExpertStep::kFp8Gemm: return gemm_fp8_tile_rows(ceil_div(T * kMoeTopK, std::max(E, 1)));
    case ExpertStep::kMxfp4Gemm:
      return gemm_w4a16_tile_rows(ceil_div(T * kMoeTopK, std::max(E, 1)), w4a16_narrow_max_rows);
    case ExpertStep::kMxfp4W4A8: return gemm_w4a8_tile_rows();
    case ExpertStep::kBf16Gemm: return gemm_bf16_tile_rows();
    case ExpertStep::kStream: return gemm_stream_tile_rows(T);
    default: return 0;
  }
}

// Device scratch, 256-byte aligned pieces from one buffer; a step carves only what it uses (null otherwise).
struct MoeWorkspace {
  int32_t *topk_ids = nullptr, *pair_row = nullptr;  // [T·4] int32
  float* topk_weights = nullptr;                     // [T·4] fp32
  // plan (GEMM steps)
  int32_t *group_offsets = nullptr, *row_token = nullptr;                   // [E + 1], [T·4] int32
  int32_t *tile_group = nullptr, *tile_m0 = nullptr, *num_tiles = nullptr;  // [max_tiles], [max_tiles], [1]
  // activations
  uint8_t *x_q = nullptr, *h_q = nullptr;          // fp8 GEMM: [T·4, ld16(hidden)], [T·4, ld16(inter)] e4m3
  float *x_scales = nullptr, *h_scales = nullptr;  // fp8 GEMM: [T·4, ⌈hidden/128⌉], [T·4, ⌈inter/128⌉] fp32
  uint16_t* h = nullptr;                           // [T·4, inter] bf16: SwiGLU output per pair (row)
  uint16_t* y = nullptr;                           // [T·4, hidden] bf16: down projection + bias per pair (row)
  size_t bytes = 0;
};

// With base == nullptr only `bytes` is meaningful.
MoeWorkspace carve(uint8_t* base, ExpertStep step, int T, int E, int hidden, int inter) {
  MoeWorkspace w;
  size_t off = 0;
  auto take = [&](size_t bytes) {
    uint8_t* ptr = base ? base + off : nullptr;
    off += align_up(bytes);
    return ptr;
  };
  const size_t pairs = static_cast<size_t>(T) * kMoeTopK;
  w.topk_ids = reinterpret_cast<int32_t*>(take(pairs * 4));
  w.topk_weights = reinterpret_cast<float*>(take(pairs * 4));
  w.pair_row = reinterpret_cast<int32_t*>(take(pairs * 4));
  if (step != ExpertStep::kFp8Gemv) {
    const size_t max_tiles = static_cast<size_t>(moe_max_tiles(T, E, plan_tile_rows(step, T, E, INT_MAX)));
    w.group_offsets = reinterpret_cast<int32_t*>(take((static_cast<size_t>(E) + 1) * 4));
    w.row_token = reinterpret_cast<int32_t*>(take(pairs * 4));
    w.tile_group = reinterpret_cast<int32_t*>(take(max_tiles * 4));
    w.tile_m0 = reinterpret_cast<int32_t*>(take(max_tiles * 4));
    w.num_tiles = reinterpret_cast<int32_t*>(take(4));
  }
  if (step == ExpertStep::kFp8Gemm || step == ExpertStep::kMxfp4W4A8) {
    // x quantized straight into expert order (one row per routed pair): both GEMMs read contiguous A (kMxfp4W4A8:
    // one scale a row, h's fixed).
    w.x_q = take(pairs * ld16(hidden));
    w.x_scales = reinterpret_cast<float*>(take(pairs * ceil_div(hidden, 128) * 4));
    w.h_q = take(pairs * ld16(inter));
    w.h_scales = reinterpret_cast<float*>(take(pairs * ceil_div(inter, 128) * 4));
  }
  w.h = reinterpret_cast<uint16_t*>(take(pairs * inter * 2));
  w.y = reinterpret_cast<uint16_t*>(take(pairs * hidden * 2));
  w.bytes = off;
  return w;
}

// What a composition needs of its params (MoeParams or MoeBf16Params), weights as the step reads them.
struct MoeBlock {
  ExpertStep step;
  const uint16_t *x, *logits, *residual;
  uint16_t* out;
  const void *w1, *w2;
  const float *w1_scales = nullptr, *w2_scales = nullptr;
  const uint16_t *b1, *b2;
  bool weights_tiled = false;
  int T, num_experts, expert_begin, E, hidden, inter;
  const MoeParams* fp8 = nullptr;        // the FP8 steps' own params (the decode step builds its GEMVs from them)
  GemmTile gemm_tile = GemmTile::kAuto;  // the FP8 expert GEMMs' tile at 128-row tiles (MoeParams)
  cudaEvent_t* phase_events = nullptr;   // MoeParams::phase_events (launch_moe only)
  int w4a16_narrow_max_rows = kW4A16NarrowMaxRows;  // MoeParams's
  // The plan's rows per tile.
  int tile_rows() const { return plan_tile_rows(step, T, E, w4a16_narrow_max_rows); }
};

// Records the event of `phase` (kNumMoePhases: the end) when the block has phase events.
void mark(const MoeBlock& b, int phase, cudaStream_t stream) {
  if (b.phase_events != nullptr) GOSSAMER_CUDA_CHECK(cudaEventRecord(b.phase_events[phase], stream));
}
void mark(const MoeBlock& b, MoePhase phase, cudaStream_t stream) {
  mark(b, static_cast<int>(phase), stream);
}

MoeBlock block_of(const MoeParams& p, ExpertStep step) {
  return {step,
          p.x,
          p.logits,
          p.residual,
          p.out,
          p.w1,
          p.w2,
          p.w1_scales,
          p.w2_scales,
          p.b1,
          p.b2,
          p.weights_tiled,
          p.num_tokens,
          p.num_experts,
          p.expert_begin,
          p.num_local_experts,
          p.hidden,
          p.inter,
          &p,
          p.gemm_tile,
          p.phase_events,
          p.w4a16_narrow_max_rows};
}

MoeBlock block_of(const MoeBf16Params& p) {
  return {ExpertStep::kBf16Gemm,
          p.x,
          p.logits,
          p.residual,
          p.out,
          p.w1,
          p.w2,
          nullptr,
          nullptr,
          p.b1,
          p.b2,
          false,
          p.num_tokens,
          p.num_experts,
          p.expert_begin,
          p.num_local_experts,
          p.hidden,
          p.inter};
}

// ---- expert steps: gate_up + bias + SwiGLU → w.h, then down + bias → w.y ----

// The plan's tile list in w (launch_moe_plan, tiles of MoeBlock::tile_rows() rows) as every grouped GEMM reads it.
GroupedTiles plan_tiles(const MoeBlock& b, const MoeWorkspace& w) {
  GroupedTiles t;
  t.group_offsets = w.group_offsets;
  t.tile_group = w.tile_group;
  t.tile_m0 = w.tile_m0;
  t.num_tiles = w.num_tiles;
  t.max_tiles = moe_max_tiles(b.T, b.E, b.tile_rows());
  t.num_groups = b.E;
  return t;
}

// The grouped GEMM of one projection, for GemmFp8Params or GemmBf16Params:
// gate_up reads A rows gathered through row_token and writes h with the SwiGLU epilogue; down reads h's
// rows in place and writes y.
template <typename Gemm, typename A, typename Weight>
Gemm grouped_projection(const MoeBlock& b, const MoeWorkspace& w, bool gate_up, const A* a, int64_t lda,
                        const void* weights, const uint16_t* bias) {
  Gemm g;
  g.a = a;
  g.lda = lda;
  g.a_row_index = gate_up ? w.row_token : nullptr;
  g.b = static_cast<const Weight*>(weights);
  g.bias = bias;
  g.out = gate_up ? w.h : w.y;
  g.ldc = gate_up ? b.inter : b.hidden;
  g.M = b.T * kMoeTopK;
  g.N = gate_up ? 2 * b.inter : b.hidden;
  g.K = gate_up ? b.hidden : b.inter;
  g.epilogue = gate_up ? GemmEpilogue::kSwiGlu : GemmEpilogue::kBias;
  g.grouped = plan_tiles(b, w);
  return g;
}

// kMxfp4Gemm: gemm_w4a16.h's kernel on bf16 activations. The tokens, in its register order, are scattered into expert
// order in w.y (down writes y only after gate_up has read them); gate_up writes h in bf16 and register order; down
// reads it and writes y.
void experts_mxfp4_w4a16(const MoeBlock& b, const MoeWorkspace& w, cudaStream_t stream) {
  mark(b, MoePhase::kQuantizeTokens, stream);
  launch_w4a16_activations(b.x, b.hidden, b.T, b.hidden, w.pair_row, w.y, b.hidden, stream);
  GemmW4A16Params g;
  g.M = b.T * kMoeTopK;
  g.grouped = plan_tiles(b, w);
  g.tile_rows = b.tile_rows();
  GemmW4A16Params g1 = g;
  g1.a = w.y;
  g1.lda = b.hidden;
  g1.b = static_cast<const uint8_t*>(b.w1);
  g1.bias = b.b1;
  g1.out = w.h;
  g1.ldc = b.inter;
  g1.out_register_order = true;
  g1.N = 2 * b.inter;
  g1.K = b.hidden;
  g1.epilogue = GemmEpilogue::kSwiGlu;
  mark(b, MoePhase::kGateUp, stream);
  launch_gemm_w4a16(g1, stream);
  mark(b, MoePhase::kQuantizeHidden, stream);
  GemmW4A16Params g2 = g;
  g2.a = w.h;
  g2.lda = b.inter;
  g2.b = static_cast<const uint8_t*>(b.w2);
  g2.bias = b.b2;
  g2.out = w.y;
  g2.ldc = b.hidden;
  g2.N = b.hidden;
  g2.K = b.inter;
  mark(b, MoePhase::kDown, stream);
  launch_gemm_w4a16(g2, stream);
}

// kMxfp4W4A8: gemm_w4a8.h's kernel on e4m3 activations. The tokens are quantized per row into expert order and
// register order (x_q, x_scales); gate_up writes h in e4m3 (fixed scale) and register order; down reads it and
// writes y.
void experts_mxfp4_w4a8(const MoeBlock& b, const MoeWorkspace& w, cudaStream_t stream) {
  mark(b, MoePhase::kQuantizeTokens, stream);
  launch_w4a8_activations(b.x, b.hidden, b.T, b.hidden, w.pair_row, w.x_q, ld16(b.hidden), w.x_scales, stream);
  GemmW4A8Params g;
  g.M = b.T * kMoeTopK;
  g.grouped = plan_tiles(b, w);
  GemmW4A8Params g1 = g;
  g1.a = w.x_q;
  g1.lda = ld16(b.hidden);
  g1.a_scales = w.x_scales;
  g1.b = static_cast<const uint8_t*>(b.w1);
  g1.b_row_exponents = b.fp8->w1_row_exponents;
  g1.bias = b.b1;
  g1.out = w.h_q;
  g1.ldc = ld16(b.inter);
  g1.N = 2 * b.inter;
  g1.K = b.hidden;
  g1.epilogue = GemmEpilogue::kSwiGluFp8;
  mark(b, MoePhase::kGateUp, stream);
  launch_gemm_w4a8(g1, stream);
  mark(b, MoePhase::kQuantizeHidden, stream);
  GemmW4A8Params g2 = g;
  g2.a = w.h_q;
  g2.lda = ld16(b.inter);
  g2.a_scale = 1.0f / kW4A8HiddenScale;
  g2.b = static_cast<const uint8_t*>(b.w2);
  g2.b_row_exponents = b.fp8->w2_row_exponents;
  g2.bias = b.b2;
  g2.out = w.y;
  g2.ldc = b.hidden;
  g2.N = b.hidden;
  g2.K = b.inter;
  mark(b, MoePhase::kDown, stream);
  launch_gemm_w4a8(g2, stream);
}

void experts_fp8_gemm(const MoeBlock& b, const MoeWorkspace& w, cudaStream_t stream) {
  const int rows_hint = ceil_div(b.T * kMoeTopK, b.E);
  // Tokens permuted into expert order while quantized (rows past group_offsets[E] are left untouched): each
  // expert-order row gathers its token, or (quantize_tokens_once) each token is quantized once and scattered
  // to its rows through pair_row.
  mark(b, MoePhase::kQuantizeTokens, stream);
  QuantizeFp8Params qx{b.x, b.hidden, w.x_q, ld16(b.hidden), w.x_scales, b.T * kMoeTopK, b.hidden};
  if (b.fp8->quantize_tokens_once) {
    qx.M = b.T;
    qx.scatter_rows = w.pair_row;
    qx.scatter_width = kMoeTopK;
  } else {
    qx.row_index = w.row_token;
    qx.num_valid_rows = w.group_offsets + b.E;
  }
  launch_quantize_fp8(qx, stream);
  auto g1 = grouped_projection<GemmFp8Params, uint8_t, uint8_t>(b, w, true, w.x_q, ld16(b.hidden), b.w1, b.b1);
  g1.a_row_index = nullptr;
  g1.a_scales = w.x_scales;
  g1.b_tiled = b.weights_tiled;
  g1.b_scales = b.w1_scales;
  const bool rows_128 = b.tile_rows() == 128;
  if (rows_128) g1.tile = b.gemm_tile;
  const GemmTile tile = g1.tile;  // both GEMMs' tile (gate_up's may become 128×256 below)
  // h quantized in gate_up's epilogue: tile-major experts at 128-row tiles (a TMA 128×256 tile).
  const bool fuse_quantization = rows_128 && b.weights_tiled;
  if (fuse_quantization) {
    g1.epilogue = GemmEpilogue::kSwiGluFp8;
    g1.out_q = w.h_q;
    g1.ldq = ld16(b.inter);
    g1.out_scales = w.h_scales;
    g1.tile = tile == GemmTile::k128x256tma2b ? GemmTile::k128x256tma2b : GemmTile::k128x256tma2;
  }
  mark(b, MoePhase::kGateUp, stream);
  launch_gemm_fp8(g1, rows_hint, stream);
  // NOTE: rows past group_offsets[E] (pairs routed to other ranks) are quantized but never read.
  mark(b, MoePhase::kQuantizeHidden, stream);
  if (!fuse_quantization) {
    launch_quantize_fp8({w.h, b.inter, w.h_q, ld16(b.inter), w.h_scales, b.T * kMoeTopK, b.inter}, stream);
  }
  auto g2 = grouped_projection<GemmFp8Params, uint8_t, uint8_t>(b, w, false, w.h_q, ld16(b.inter), b.w2, b.b2);
  g2.a_scales = w.h_scales;
  g2.b_tiled = b.weights_tiled;
  g2.b_scales = b.w2_scales;
  g2.tile = tile;
  mark(b, MoePhase::kDown, stream);
  launch_gemm_fp8(g2, rows_hint, stream);
}

void experts_bf16_gemm(const MoeBlock& b, const MoeWorkspace& w, cudaStream_t stream) {
  launch_gemm_bf16(grouped_projection<GemmBf16Params, uint16_t, uint16_t>(b, w, true, b.x, b.hidden, b.w1, b.b1),
                   stream);
  // NOTE: rows of h past group_offsets[E] (pairs routed to other ranks) are never written nor read.
  launch_gemm_bf16(grouped_projection<GemmBf16Params, uint16_t, uint16_t>(b, w, false, w.h, b.inter, b.w2, b.b2),
                   stream);
}

void experts_fp8_gemv(const MoeParams& p, const MoeWorkspace& w, cudaStream_t stream) {
  // MXFP4 experts (weights_mxfp4) go through their own GEMV with the same grouped contract.
  const auto gemv = [&](const GemvFp8Params& g, bool gate_up) {
    if (p.weights_mxfp4) {
      GemvMxfp4Params q = gemv_mxfp4_params_of(g);
      q.shape = p.gemv_mxfp4_shape;
      q.single_row = p.gemv_single_row;
      q.x_shared = gate_up && p.gemv_x_shared;
      q.x_from_earlier_kernel = gate_up;  // x precedes the route launch; h is the kernel before's
      launch_gemv_mxfp4(q, stream);
    } else {
      launch_gemv_fp8(g, stream);
    }
  };
  gemv(moe_decode_projection(p, true, w.topk_ids, w.h, w.pair_row, w.y), true);
  gemv(moe_decode_projection(p, false, w.topk_ids, w.h, w.pair_row, w.y), false);
}

// The weight-streaming grouped GEMMs over the plan (FP8 tile-major or MXFP4 experts, b.fp8's format).
void experts_stream(const MoeBlock& b, const MoeWorkspace& w, cudaStream_t stream) {
  GemmStreamParams g;
  g.w_mxfp4 = b.fp8->weights_mxfp4;
  g.grouped = plan_tiles(b, w);
  g.tile_rows = b.tile_rows();
  // Every tile holds ≥ 1 of the T·4 pairs.
  g.grouped.max_tiles = std::min(b.T * kMoeTopK, g.grouped.max_tiles);
  GemmStreamParams up = g;  // x [T, hidden] → h [T·4, inter] (plan order)
  up.x = b.x;
  up.ldx = b.hidden;
  up.x_row_index = w.row_token;
  up.w = static_cast<const uint8_t*>(b.w1);
  up.w_scales = b.w1_scales;
  up.bias = b.b1;
  up.out = w.h;
  up.ldc = b.inter;
  up.N = 2 * b.inter;
  up.K = b.hidden;
  up.epilogue = GemmEpilogue::kSwiGlu;
  launch_gemm_stream(up, stream);
  GemmStreamParams down = g;  // h → y [T·4, hidden] (plan order)
  down.x = w.h;
  down.ldx = b.inter;
  down.w = static_cast<const uint8_t*>(b.w2);
  down.w_scales = b.w2_scales;
  down.bias = b.b2;
  down.out = w.y;
  down.ldc = b.hidden;
  down.N = b.hidden;
  down.K = b.inter;
  down.epilogue = GemmEpilogue::kBias;
  down.plan_from_earlier_kernel = true;
  launch_gemm_stream(down, stream);
}

// The composition (b.T > 0; the caller checked the step's contract).
void launch_moe_block(const MoeBlock& b, void* workspace, cudaStream_t stream) {
  const MoeWorkspace w = carve(static_cast<uint8_t*>(workspace), b.step, b.T, b.E, b.hidden, b.inter);
  // ---- route ----
  mark(b, MoePhase::kRoute, stream);
  launch_moe_route({b.logits, w.topk_ids, w.topk_weights, b.T, b.num_experts}, stream);
  // ---- plan: pairs grouped by local expert, the GEMMs' tile list ----
  mark(b, MoePhase::kPlan, stream);
  if (b.step != ExpertStep::kFp8Gemv) {
    launch_moe_plan({w.topk_ids, b.T, b.expert_begin, b.E, b.tile_rows(), w.group_offsets, w.row_token, w.pair_row,
                     w.tile_group, w.tile_m0, w.num_tiles},
                    stream);
  }
  // ---- experts ----
  switch (b.step) {
    case ExpertStep::kFp8Gemm: experts_fp8_gemm(b, w, stream); break;
    case ExpertStep::kMxfp4Gemm: experts_mxfp4_w4a16(b, w, stream); break;
    case ExpertStep::kMxfp4W4A8: experts_mxfp4_w4a8(b, w, stream); break;
    case ExpertStep::kBf16Gemm: experts_bf16_gemm(b, w, stream); break;
    case ExpertStep::kFp8Gemv: experts_fp8_gemv(*b.fp8, w, stream); break;
    case ExpertStep::kStream: experts_stream(b, w, stream); break;
  }
  // ---- weighted combine (+ residual) back to token order, unless the next norm does it ----
  if (b.fp8 != nullptr && b.fp8->combine_deferred) return;
  mark(b, MoePhase::kCombine, stream);
  launch_moe_combine({w.y, w.pair_row, w.topk_weights, b.residual, b.out, b.T, b.hidden}, stream);
  mark(b, kNumMoePhases, stream);
}

}  // namespace

const char* moe_phase_name(MoePhase phase) {
  switch (phase) {
    case MoePhase::kRoute: return "route";
    case MoePhase::kPlan: return "plan";
    case MoePhase::kQuantizeTokens: return "quantize tokens";
    case MoePhase::kGateUp: return "gate_up GEMM";
    case MoePhase::kQuantizeHidden: return "quantize h";
    case MoePhase::kDown: return "down GEMM";
    case MoePhase::kCombine: return "combine";
  }
  return "?";
}

size_t moe_workspace_bytes(int num_tokens, int num_local_experts, int hidden, int inter) {
  // Either expert format (FP8 or MXFP4 experts plan different tile rows).
  return std::max({carve(nullptr, ExpertStep::kFp8Gemm, num_tokens, num_local_experts, hidden, inter).bytes,
                   carve(nullptr, ExpertStep::kMxfp4Gemm, num_tokens, num_local_experts, hidden, inter).bytes,
                   carve(nullptr, ExpertStep::kMxfp4W4A8, num_tokens, num_local_experts, hidden, inter).bytes});
}

void launch_moe(const MoeParams& p, void* workspace, cudaStream_t stream) {
  GOSSAMER_CHECK(!p.combine_deferred || p.residual == nullptr, "moe: a deferred combine takes no residual");
  const int mult = p.weights_mxfp4 ? 32 : 16;
  GOSSAMER_CHECK(p.hidden % mult == 0 && p.inter % mult == 0, "moe: hidden (", p.hidden, ") and inter (", p.inter,
                 ") must be multiples of ", mult);
  if (p.num_tokens == 0) return;
  GOSSAMER_CHECK(!p.mxfp4_w4a8 || (p.weights_mxfp4 && p.w1_row_exponents && p.w2_row_exponents),
                 "moe: mxfp4_w4a8 needs MXFP4 experts and both row exponents");
  const ExpertStep step = !p.weights_mxfp4 ? ExpertStep::kFp8Gemm
                          : p.mxfp4_w4a8   ? ExpertStep::kMxfp4W4A8
                                           : ExpertStep::kMxfp4Gemm;
  launch_moe_block(block_of(p, step), workspace, stream);
}

size_t moe_bf16_workspace_bytes(int num_tokens, int num_local_experts, int hidden, int inter) {
  return carve(nullptr, ExpertStep::kBf16Gemm, num_tokens, num_local_experts, hidden, inter).bytes;
}

void launch_moe_bf16(const MoeBf16Params& p, void* workspace, cudaStream_t stream) {
  GOSSAMER_CHECK(p.hidden % 16 == 0 && p.inter % 16 == 0, "moe_bf16: hidden (", p.hidden, ") and inter (", p.inter,
                 ") must be multiples of 16");
  GOSSAMER_CHECK(
      p.num_local_experts > 0 && p.expert_begin >= 0 && p.expert_begin + p.num_local_experts <= p.num_experts,
      "moe_bf16: local experts [", p.expert_begin, ", +", p.num_local_experts, ") outside ", p.num_experts);
  if (p.num_tokens == 0) return;
  GOSSAMER_CHECK(workspace != nullptr && reinterpret_cast<uintptr_t>(workspace) % 16 == 0,
                 "moe_bf16: workspace must be a 16-byte aligned buffer of moe_bf16_workspace_bytes()");
  launch_moe_block(block_of(p), workspace, stream);
}

size_t moe_decode_workspace_bytes(int num_tokens, int hidden, int inter) {
  return carve(nullptr, ExpertStep::kFp8Gemv, num_tokens, 1, hidden, inter).bytes;
}

void launch_moe_decode(const MoeParams& p, void* workspace, cudaStream_t stream) {
  GOSSAMER_CHECK(p.phase_events == nullptr, "moe_decode: phase_events are launch_moe's");
  GOSSAMER_CHECK(p.num_tokens >= 0 && p.num_tokens <= kGemvMaxRows, "moe_decode: ", p.num_tokens, " tokens (at most ",
                 kGemvMaxRows, "; use launch_moe)");
  GOSSAMER_CHECK(p.hidden % 16 == 0 && p.inter % 16 == 0, "moe_decode: hidden and inter must be multiples of 16");
  GOSSAMER_CHECK(p.num_local_experts >= 1, "moe_decode: no local experts");
  if (p.num_tokens == 0) return;
  launch_moe_block(block_of(p, ExpertStep::kFp8Gemv), workspace, stream);
}

MoeCombineParams moe_decode_deferred_combine(void* workspace, int num_tokens, int hidden, int inter) {
  const MoeWorkspace w = carve(static_cast<uint8_t*>(workspace), ExpertStep::kFp8Gemv, num_tokens, 1, hidden, inter);
  return {w.y, w.pair_row, w.topk_weights, nullptr, nullptr, num_tokens, hidden};
}

MoeCombineParams moe_deferred_combine(void* workspace, int num_tokens, int num_local_experts, int hidden, int inter,
                                      bool weights_mxfp4, bool mxfp4_w4a8) {
  const ExpertStep step = !weights_mxfp4 ? ExpertStep::kFp8Gemm
                          : mxfp4_w4a8   ? ExpertStep::kMxfp4W4A8
                                         : ExpertStep::kMxfp4Gemm;
  const MoeWorkspace w = carve(static_cast<uint8_t*>(workspace), step, num_tokens, num_local_experts, hidden, inter);
  return {w.y, w.pair_row, w.topk_weights, nullptr, nullptr, num_tokens, hidden};
}

size_t moe_stream_workspace_bytes(int num_tokens, int num_local_experts, int hidden, int inter) {
  return carve(nullptr, ExpertStep::kStream, num_tokens, num_local_experts, hidden, inter).bytes;
}

void launch_moe_stream(const MoeParams& p, void* workspace, cudaStream_t stream) {
  GOSSAMER_CHECK(p.phase_events == nullptr, "moe_stream: phase_events are launch_moe's");
  GOSSAMER_CHECK(!p.combine_deferred, "moe_stream: combine_deferred is launch_moe_decode's");
  GOSSAMER_CHECK(p.weights_mxfp4 || p.weights_tiled, "moe_stream: FP8 experts must be tile-major (weights_tiled)");
  const int mult = p.weights_mxfp4 ? 32 : 16;
  GOSSAMER_CHECK(p.hidden % mult == 0 && p.inter % mult == 0, "moe_stream: hidden (", p.hidden, ") and inter (",
                 p.inter, ") must be multiples of ", mult);
  GOSSAMER_CHECK(p.num_local_experts > 0 && p.num_local_experts <= kMoeMaxExperts && p.expert_begin >= 0 &&
                     p.expert_begin + p.num_local_experts <= p.num_experts,
                 "moe_stream: local experts [", p.expert_begin, ", +", p.num_local_experts, ") outside ",
                 p.num_experts);
  GOSSAMER_CHECK(p.num_tokens >= 0, "moe_stream: ", p.num_tokens, " tokens");
  if (p.num_tokens == 0) return;
  GOSSAMER_CHECK(workspace != nullptr && reinterpret_cast<uintptr_t>(workspace) % 16 == 0,
                 "moe_stream: workspace must be a 16-byte aligned buffer of moe_stream_workspace_bytes()");
  launch_moe_block(block_of(p, ExpertStep::kStream), workspace, stream);
}

}  // namespace gossamer::kernels
