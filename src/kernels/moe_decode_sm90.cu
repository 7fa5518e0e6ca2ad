// MoE expert block for decode batches (≤ kGemvMaxRows tokens) on the weight-only GEMV (gemv_fp8.h):
// route → grouped gate_up GEMV + bias + SwiGLU → grouped down GEMV + bias → weighted combine.
//
// The grouped GEMVs group the T·4 (token, k) pairs by expert on the device (each used expert's weights are
// read once for all its pairs) and keep everything in pair order: act and y have one row per pair, so the
// combine's pair_row is the identity (−1 for pairs whose expert lives on another rank), written by the
// gate_up launch. Four launches, fixed grids for a given (T, shapes): graph capturable. The down GEMV
// reads the routing before its PDL wait (it was written two launches back), so its weights stream while
// gate_up finishes.
#include "kernels/cuda_utils.h"
#include "kernels/gemv_fp8.h"
#include "kernels/moe.h"

namespace gossamer::kernels {
namespace {

size_t align_up(size_t v) {
  return (v + 255) & ~size_t(255);
}

struct MoeDecodeWorkspace {
  int32_t* topk_ids;    // [T·4]
  float* topk_weights;  // [T·4]
  int32_t* pair_row;    // [T·4]: p, or −1 for pairs of non-local experts
  uint16_t* act;        // [T·4, inter] bf16: SwiGLU output per pair
  uint16_t* y;          // [T·4, hidden] bf16: down projection + bias per pair
  size_t bytes;
};

MoeDecodeWorkspace carve(uint8_t* base, int T, int hidden, int inter) {
  MoeDecodeWorkspace w{};
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
  w.act = reinterpret_cast<uint16_t*>(take(pairs * inter * 2));
  w.y = reinterpret_cast<uint16_t*>(take(pairs * hidden * 2));
  w.bytes = off;
  return w;
}

}  // namespace

size_t moe_decode_workspace_bytes(int num_tokens, int hidden, int inter) {
  return carve(nullptr, num_tokens, hidden, inter).bytes;
}

void launch_moe_decode(const MoeParams& p, void* workspace, cudaStream_t stream) {
  GOSSAMER_CHECK(p.num_tokens >= 0 && p.num_tokens <= kGemvMaxRows, "moe_decode: ", p.num_tokens, " tokens (at most ",
                 kGemvMaxRows, "; use launch_moe)");
  GOSSAMER_CHECK(p.hidden % 16 == 0 && p.inter % 16 == 0, "moe_decode: hidden and inter must be multiples of 16");
  GOSSAMER_CHECK(p.num_local_experts >= 1, "moe_decode: no local experts");
  if (p.num_tokens == 0) return;
  const int T = p.num_tokens;
  const MoeDecodeWorkspace w = carve(static_cast<uint8_t*>(workspace), T, p.hidden, p.inter);

  // ---- route ----
  launch_moe_route({p.logits, w.topk_ids, w.topk_weights, T, p.num_experts}, stream);

  // ---- gate_up + bias + SwiGLU: pair q reads token q / 4, writes act row q ----
  GemvFp8Params g1;
  g1.x = p.x;
  g1.ldx = p.hidden;
  g1.w = p.w1;
  g1.w_tiled = p.weights_tiled;
  g1.w_scales = p.w1_scales;
  g1.bias = p.b1;
  g1.out = w.act;
  g1.ldc = p.inter;
  g1.N = 2 * p.inter;
  g1.K = p.hidden;
  g1.epilogue = GemmEpilogue::kSwiGlu;
  g1.topk_ids = w.topk_ids;
  g1.num_pairs = T * kMoeTopK;
  g1.expert_begin = p.expert_begin;
  g1.num_local_experts = p.num_local_experts;
  g1.x_pair_divisor = kMoeTopK;
  g1.pair_row = w.pair_row;
  launch_gemv_fp8(g1, stream);

  // ---- down + bias: pair q reads act row q, writes y row q ----
  GemvFp8Params g2 = g1;
  g2.x = w.act;
  g2.ldx = p.inter;
  g2.w = p.w2;
  g2.w_scales = p.w2_scales;
  g2.bias = p.b2;
  g2.out = w.y;
  g2.ldc = p.hidden;
  g2.N = p.hidden;
  g2.K = p.inter;
  g2.epilogue = GemmEpilogue::kBias;
  g2.x_pair_divisor = 1;
  g2.pair_row = nullptr;
  g2.topk_from_earlier_kernel = true;  // routed two launches back: the experts' weights stream before the wait
  launch_gemv_fp8(g2, stream);

  // ---- weighted combine (+ residual) back to token order ----
  launch_moe_combine({w.y, w.pair_row, w.topk_weights, p.residual, p.out, T, p.hidden}, stream);
}

}  // namespace gossamer::kernels
