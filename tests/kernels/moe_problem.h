// A random MoE block for the kernel tests (gemm_fp8_test, gemv_fp8_test, gemm_w4a16_test): host data, its device
// copies, and MoeParams for both (the output pointers are the caller's). FP8 experts with block scales, or MXFP4
// experts in the tiled layout (weights_mxfp4, no scales).
#pragma once

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "kernel_test_utils.h"
#include "kernels/moe.h"
#include "kernels/rmsnorm.h"

namespace gossamer::kernels::test {

struct MoeProblemCase {
  int tokens, experts, expert_begin, local, hidden, inter;
  bool residual;
  int distinct_logit_rows = 0;  // 0: every token its own logits; d > 0: token t uses logits row t % d
};

using Fp8Generator = std::vector<uint8_t> (*)(size_t, std::mt19937&);

// MXFP4 experts: random_mxfp4_tiled's codes from `seed` (w1) and seed + 1 (w2), exponents in [e_lo, e_hi].
struct Mxfp4Experts {
  uint64_t seed;
  int e_lo, e_hi;
};

struct MoeProblem {
  MoeProblem(const MoeProblemCase& c, std::mt19937& rng, Fp8Generator fp8 = random_fp8_bytes)
      : MoeProblem(c, rng, fp8, nullptr) {}
  MoeProblem(const MoeProblemCase& c, std::mt19937& rng, const Mxfp4Experts& mxfp4)
      : MoeProblem(c, rng, nullptr, &mxfp4) {}

 private:
  MoeProblem(const MoeProblemCase& c, std::mt19937& rng, Fp8Generator fp8, const Mxfp4Experts* mx)
      : x(random_bf16(size_t(c.tokens) * c.hidden, rng, 1.0f)),
        logits(make_logits(c, rng)),
        res(random_bf16(size_t(c.tokens) * c.hidden, rng, 1.0f)),
        b1(random_bf16(size_t(c.local) * 2 * c.inter, rng, 0.5f)),
        b2(random_bf16(size_t(c.local) * c.hidden, rng, 0.5f)),
        w1(mx ? random_mxfp4_tiled(c.local, 2 * c.inter, c.hidden, mx->seed, mx->e_lo, mx->e_hi)
              : fp8(size_t(c.local) * 2 * c.inter * c.hidden, rng)),
        w2(mx ? random_mxfp4_tiled(c.local, c.hidden, c.inter, mx->seed + 1, mx->e_lo, mx->e_hi)
              : fp8(size_t(c.local) * c.hidden * c.inter, rng)),
        w1s(mx ? std::vector<float>()
               : random_scales(scale_count(c.local, 2 * c.inter, c.hidden), rng, 0.0002f, 0.0006f)),
        w2s(mx ? std::vector<float>() : random_scales(scale_count(c.local, c.hidden, c.inter), rng, 0.0002f, 0.0006f)),
        dx(x),
        dl(logits),
        dres(res),
        db1(b1),
        db2(b2),
        dw1(w1),
        dw2(w2),
        dw1s(w1s),
        dw2s(w2s) {
    host.num_tokens = c.tokens;
    host.num_experts = c.experts;
    host.expert_begin = c.expert_begin;
    host.num_local_experts = c.local;
    host.hidden = c.hidden;
    host.inter = c.inter;
    host.weights_mxfp4 = mx != nullptr;
    dev = host;
    host.x = x.data();
    host.logits = logits.data();
    host.residual = c.residual ? res.data() : nullptr;
    host.w1 = w1.data();
    host.w1_scales = mx ? nullptr : w1s.data();
    host.b1 = b1.data();
    host.w2 = w2.data();
    host.w2_scales = mx ? nullptr : w2s.data();
    host.b2 = b2.data();
    dev.x = dx.get();
    dev.logits = dl.get();
    dev.residual = c.residual ? dres.get() : nullptr;
    dev.w1 = dw1.get();
    dev.w1_scales = mx ? nullptr : dw1s.get();
    dev.b1 = db1.get();
    dev.w2 = dw2.get();
    dev.w2_scales = mx ? nullptr : dw2s.get();
    dev.b2 = db2.get();
  }

 public:
  // Router logits; with distinct_logit_rows = d > 0 token t copies row t % d (tokens share experts).
  static std::vector<uint16_t> make_logits(const MoeProblemCase& c, std::mt19937& rng) {
    const int rows = c.distinct_logit_rows > 0 ? c.distinct_logit_rows : c.tokens;
    const auto base = random_bf16(size_t(rows) * c.experts, rng, 2.0f);
    std::vector<uint16_t> l(size_t(c.tokens) * c.experts);
    for (int t = 0; t < c.tokens; ++t) {
      std::copy_n(base.begin() + size_t(t % rows) * c.experts, c.experts, l.begin() + size_t(t) * c.experts);
    }
    return l;
  }

  std::vector<uint16_t> x, logits, res, b1, b2;
  std::vector<uint8_t> w1, w2;
  std::vector<float> w1s, w2s;
  DeviceBuffer<uint16_t> dx, dl, dres, db1, db2;
  DeviceBuffer<uint8_t> dw1, dw2;
  DeviceBuffer<float> dw1s, dw2s;
  MoeParams host, dev;
};

// combine_deferred into the next norm, for either MoE launch: `launch(params, workspace)` with the combine (residual
// null: the model's form) then launch_rmsnorm, against the same launch with combine_deferred then the norm summing
// `pieces(workspace)`; the residual and normed rows must match bit for bit. Tile-major FP8 experts (the model's).
template <typename Launch, typename Pieces>
void expect_deferred_combine_into_norm(const MoeProblemCase& c, MoeProblem& m, size_t workspace_bytes, Launch launch,
                                       Pieces pieces, std::mt19937& rng) {
  const int tokens = c.tokens, hidden = c.hidden;
  DeviceBuffer<uint8_t> dw1t(tiled(m.w1, c.local, 2 * c.inter, hidden)), dw2t(tiled(m.w2, c.local, hidden, c.inter));
  DeviceBuffer<uint8_t> ws(workspace_bytes);
  auto norm_w = random_bf16(hidden, rng, 0.3f, 1.0f);
  DeviceBuffer<uint16_t> dnorm_w(norm_w), ddelta(size_t(tokens) * hidden), dres_split(m.res), dres_fused(m.res),
      dout_split(m.res.size()), dout_fused(m.res.size());
  for (auto* b : {&ddelta, &dout_split, &dout_fused}) b->poison();
  ws.poison();
  MoeParams p = m.dev;
  p.w1 = dw1t.get();
  p.w2 = dw2t.get();
  p.weights_tiled = true;
  p.residual = nullptr;  // the model's: the residual enters in the norm
  p.out = ddelta.get();
  launch(p, ws.get());
  launch_rmsnorm({ddelta.get(), dres_split.get(), dnorm_w.get(), dout_split.get(), tokens, hidden, 1e-5f}, nullptr);
  ws.poison();
  MoeParams d = p;
  d.out = nullptr;
  d.combine_deferred = true;
  launch(d, ws.get());
  const MoeCombineParams y = pieces(ws.get());
  RmsNormParams fused{nullptr, dres_fused.get(), dnorm_w.get(), dout_fused.get(), tokens, hidden, 1e-5f};
  fused.moe_y = y.y;
  fused.moe_pair_row = y.pair_row;
  fused.moe_topk_weights = y.topk_weights;
  launch_rmsnorm(fused, nullptr);
  const std::string shape = std::to_string(tokens) + "tok E" + std::to_string(c.experts) + " local[" +
                            std::to_string(c.expert_begin) + "+" + std::to_string(c.local) + "]";
  EXPECT_EQ(dres_fused.download(), dres_split.download()) << shape << ": residual";
  EXPECT_EQ(dout_fused.download(), dout_split.download()) << shape << ": normed output";
}

}  // namespace gossamer::kernels::test
