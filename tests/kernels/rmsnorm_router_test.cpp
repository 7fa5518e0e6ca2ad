// The fused MLP norm + router + route (rmsnorm_router.h): every output bit for bit equal to the unfused
// kernels it replaces (launch_rmsnorm → launch_gemv_bf16 → launch_moe_route) and within tolerance of its
// CPU reference (rmsnorm_router_cpu), at random shapes with 32 and 128 experts (and the edges 4 and 256),
// 1..8 tokens, outputs poisoned; captured in a CUDA graph and replayed (the arrival counter must reset
// itself); and ahead of launch_moe_decode with MoeParams::routed, as the model's decode step runs them.
#include "kernels/rmsnorm_router.h"

#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "gpt_oss_cases.h"
#include "kernel_test_utils.h"
#include "kernels/gemv_bf16.h"
#include "kernels/moe.h"
#include "kernels/rmsnorm.h"
#include "moe_problem.h"

namespace gossamer::kernels {
namespace {

using namespace test;

struct RouterCase {
  int tokens, hidden, experts;
  bool bias = true;
  bool ties = false;  // experts E/2.. copy the rows (and biases) of experts 0..: every logit appears twice
};

std::string name_of(const RouterCase& c) {
  return std::to_string(c.tokens) + "tok h" + std::to_string(c.hidden) + " E" + std::to_string(c.experts) +
         (c.bias ? "" : " no-bias") + (c.ties ? " ties" : "");
}

// Host inputs, their device copies, and both paths' outputs.
struct RouterProblem {
  RouterProblem(const RouterCase& c, std::mt19937& rng)
      : c(c),
        x(random_bf16(size_t(c.tokens) * c.hidden, rng, 1.0f)),
        res(random_bf16(size_t(c.tokens) * c.hidden, rng, 1.0f)),
        norm_w(random_bf16(c.hidden, rng, 0.3f, 1.0f)),
        router_w(random_bf16(size_t(c.experts) * c.hidden, rng, 0.05f)),
        bias(random_bf16(c.experts, rng, 0.1f)) {
    if (c.ties) {
      const int half = c.experts / 2;
      for (int e = half; e < 2 * half; ++e) {
        std::copy_n(router_w.begin() + size_t(e - half) * c.hidden, c.hidden, router_w.begin() + size_t(e) * c.hidden);
        bias[e] = bias[e - half];
      }
    }
    dx.upload(x);
    dnorm_w.upload(norm_w);
    drouter_w.upload(router_w);
    dbias.upload(bias);
  }

  // The unfused chain into the *_unfused buffers (residual from the host copy).
  void run_unfused(cudaStream_t stream) {
    dres_unfused.upload(res);
    launch_rmsnorm({dx.get(), dres_unfused.get(), dnorm_w.get(), dnormed_unfused.get(), c.tokens, c.hidden, 1e-5f},
                   stream);
    GemvBf16Params g;
    g.x = dnormed_unfused.get();
    g.ldx = c.hidden;
    g.w = drouter_w.get();
    g.bias = c.bias ? dbias.get() : nullptr;
    g.out = dlogits_unfused.get();
    g.ldc = c.experts;
    g.M = c.tokens;
    g.N = c.experts;
    g.K = c.hidden;
    launch_gemv_bf16(g, stream);
    launch_moe_route({dlogits_unfused.get(), dids_unfused.get(), dweights_unfused.get(), c.tokens, c.experts}, stream);
  }

  RmsNormRouterParams fused_params(int32_t* topk_ids, float* topk_weights) {
    RmsNormRouterParams p;
    p.x = dx.get();
    p.residual = dres.get();
    p.norm_weight = dnorm_w.get();
    p.normed = dnormed.get();
    p.router_w = drouter_w.get();
    p.router_bias = c.bias ? dbias.get() : nullptr;
    p.logits = dlogits.get();
    p.topk_ids = topk_ids;
    p.topk_weights = topk_weights;
    p.arrivals = darrivals.get();
    p.num_tokens = c.tokens;
    p.hidden = c.hidden;
    p.num_experts = c.experts;
    return p;
  }
  RmsNormRouterParams fused_params() { return fused_params(dids.get(), dweights.get()); }

  // The fused kernel's outputs poisoned, its residual reset.
  void reset_fused() {
    dres.upload(res);
    for (auto* b : {&dnormed, &dlogits}) b->poison();
    dids.poison();
    dweights.poison();
  }

  // Fused outputs equal the unfused ones bit for bit.
  void expect_fused_equals_unfused(const std::string& how) {
    const std::string shape = name_of(c) + " " + how;
    EXPECT_EQ(dres.download(), dres_unfused.download()) << shape << ": residual";
    EXPECT_EQ(dnormed.download(), dnormed_unfused.download()) << shape << ": normed";
    EXPECT_EQ(dlogits.download(), dlogits_unfused.download()) << shape << ": logits";
    EXPECT_EQ(dids.download(), dids_unfused.download()) << shape << ": topk_ids";
    EXPECT_EQ(dweights.download(), dweights_unfused.download()) << shape << ": topk_weights";
    EXPECT_EQ(darrivals.download(), std::vector<int32_t>{0}) << shape << ": arrival counter left set";
  }

  RouterCase c;
  std::vector<uint16_t> x, res, norm_w, router_w, bias;
  const size_t rows = size_t(c.tokens) * c.hidden, logits = size_t(c.tokens) * c.experts,
               pairs = size_t(c.tokens) * kMoeTopK;
  DeviceBuffer<uint16_t> dx{rows}, dnorm_w{size_t(c.hidden)}, drouter_w{size_t(c.experts) * c.hidden},
      dbias{size_t(c.experts)};
  DeviceBuffer<uint16_t> dres{rows}, dnormed{rows}, dlogits{logits};
  DeviceBuffer<int32_t> dids{pairs};
  DeviceBuffer<float> dweights{pairs};
  DeviceBuffer<int32_t> darrivals{std::vector<int32_t>{0}};
  DeviceBuffer<uint16_t> dres_unfused{rows}, dnormed_unfused{rows}, dlogits_unfused{logits};
  DeviceBuffer<int32_t> dids_unfused{pairs};
  DeviceBuffer<float> dweights_unfused{pairs};
};

std::vector<RouterCase> cases() {
  std::vector<RouterCase> out;
  for (int t = 1; t <= kGemvMaxRows; ++t) {
    out.push_back({t, gpt_oss::kHidden, 32});
    out.push_back({t, gpt_oss::kHidden, 128, t % 2 == 0});
  }
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> tokens(1, kGemvMaxRows), vecs(1, kRmsNormRouterMaxHidden / 8);
  for (int i = 0; i < 6; ++i) out.push_back({tokens(rng), 8 * vecs(rng), i % 2 == 0 ? 32 : 128, i % 3 != 0});
  out.push_back({3, 8, 4});                              // the smallest row and expert count
  out.push_back({8, kRmsNormRouterMaxHidden, 256});      // the largest
  out.push_back({5, 2048, 40, true});                    // an expert count off the powers of two
  out.push_back({4, gpt_oss::kHidden, 32, true, true});  // ties everywhere
  out.push_back({7, 1000, 128, false, true});
  return out;
}

TEST(RmsNormRouterKernel, MatchesUnfusedKernelsAndReference) {
  GOSSAMER_REQUIRE_GPU();
  std::mt19937 rng(31);
  for (const RouterCase& c : cases()) {
    RouterProblem m(c, rng);
    m.run_unfused(nullptr);
    m.reset_fused();
    launch_rmsnorm_router(m.fused_params(), nullptr);
    m.expect_fused_equals_unfused("eager");
    // CPU reference: residual exact, normed and logits within tolerance; the route of the GPU's own
    // logits (the reference's logits round differently, which may reorder near-ties).
    std::vector<uint16_t> ref_res = m.res, ref_normed(m.rows), ref_logits(m.logits);
    std::vector<int32_t> ref_ids(m.pairs);
    std::vector<float> ref_weights(m.pairs);
    RmsNormRouterParams r = m.fused_params(ref_ids.data(), ref_weights.data());
    r.x = m.x.data();
    r.residual = ref_res.data();
    r.norm_weight = m.norm_w.data();
    r.normed = ref_normed.data();
    r.router_w = m.router_w.data();
    r.router_bias = c.bias ? m.bias.data() : nullptr;
    r.logits = ref_logits.data();
    r.arrivals = nullptr;
    rmsnorm_router_cpu(r);
    const std::string shape = name_of(c);
    EXPECT_EQ(m.dres.download(), ref_res) << shape << ": residual sum must be exact";
    const double err_normed = rel_error_bf16(m.dnormed.download(), ref_normed);
    const auto logits = m.dlogits.download();
    const double err_logits = rel_error_bf16(logits, ref_logits);
    report("rmsnorm_router", shape + " normed", err_normed, kTolBf16);
    report("rmsnorm_router", shape + " logits", err_logits, kTolBf16);
    EXPECT_LT(err_normed, kTolBf16) << shape;
    EXPECT_LT(err_logits, kTolBf16) << shape;
    moe_route_cpu({logits.data(), ref_ids.data(), ref_weights.data(), c.tokens, c.experts});
    EXPECT_EQ(m.dids.download(), ref_ids) << shape;
    const double err_weights = rel_error(m.dweights.download(), ref_weights);
    report("rmsnorm_router", shape + " topk_weights", err_weights, 1e-5);
    EXPECT_LT(err_weights, 1e-5) << shape;
  }
}

// Captured once with PDL on a stream and replayed: each replay routes like the unfused kernels, so the
// last CTA of each launch reset the arrival counter for the next.
TEST(RmsNormRouterKernel, GraphReplaysResetTheArrivalCounter) {
  GOSSAMER_REQUIRE_GPU();
  std::mt19937 rng(32);
  cudaStream_t stream;
  GOSSAMER_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  for (const RouterCase& c : {RouterCase{1, gpt_oss::kHidden, 32}, RouterCase{8, gpt_oss::kHidden, 128},
                              RouterCase{3, 1000, 32, true, true}}) {
    RouterProblem m(c, rng);
    m.run_unfused(stream);
    GOSSAMER_CUDA_CHECK(cudaStreamSynchronize(stream));
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    GOSSAMER_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    launch_rmsnorm_router(m.fused_params(), stream);
    GOSSAMER_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
    GOSSAMER_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    for (int replay = 1; replay <= 3; ++replay) {
      m.reset_fused();
      GOSSAMER_CUDA_CHECK(cudaGraphLaunch(exec, stream));
      GOSSAMER_CUDA_CHECK(cudaStreamSynchronize(stream));
      m.expect_fused_equals_unfused("graph replay " + std::to_string(replay));
    }
    GOSSAMER_CUDA_CHECK(cudaGraphExecDestroy(exec));
    GOSSAMER_CUDA_CHECK(cudaGraphDestroy(graph));
    // Two launches back to back in one graph on one counter, the second into its own residual copy and
    // routing: it routes only if the first left the counter zero.
    DeviceBuffer<uint16_t> dres2(m.res);
    DeviceBuffer<int32_t> dids2(m.pairs);
    DeviceBuffer<float> dweights2(m.pairs);
    dids2.poison();
    dweights2.poison();
    RmsNormRouterParams second = m.fused_params(dids2.get(), dweights2.get());
    second.residual = dres2.get();
    GOSSAMER_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    launch_rmsnorm_router(m.fused_params(), stream);
    launch_rmsnorm_router(second, stream);
    GOSSAMER_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
    GOSSAMER_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    m.reset_fused();
    GOSSAMER_CUDA_CHECK(cudaGraphLaunch(exec, stream));
    GOSSAMER_CUDA_CHECK(cudaStreamSynchronize(stream));
    const std::string shape = name_of(c) + " back to back";
    EXPECT_EQ(m.darrivals.download(), std::vector<int32_t>{0}) << shape;
    EXPECT_EQ(dres2.download(), m.dres_unfused.download()) << shape << ": second residual";
    EXPECT_EQ(dids2.download(), m.dids_unfused.download()) << shape << ": second topk_ids";
    EXPECT_EQ(dweights2.download(), m.dweights_unfused.download()) << shape << ": second topk_weights";
    m.expect_fused_equals_unfused("back to back, first");
    GOSSAMER_CUDA_CHECK(cudaGraphExecDestroy(exec));
    GOSSAMER_CUDA_CHECK(cudaGraphDestroy(graph));
  }
  GOSSAMER_CUDA_CHECK(cudaStreamDestroy(stream));
}

// The model's decode chain: the fused kernel leaves the routing in the decode MoE's workspace and
// launch_moe_decode (routed) skips its route: the MoE output equals norm → router GEMV → launch_moe_decode
// (routing itself) bit for bit, eagerly and from a graph replayed twice, with all local experts and with an
// expert-parallel slice; FP8 tile-major experts as the model holds them, the combine in the launch.
TEST(RmsNormRouterKernel, FeedsTheDecodeMoe) {
  GOSSAMER_REQUIRE_GPU();
  std::mt19937 rng(33);
  cudaStream_t stream;
  GOSSAMER_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const MoeProblemCase moe_cases[] = {
      {1, 32, 0, 32, 576, 320, false}, {5, 128, 64, 32, 512, 256, false}, {8, 32, 0, 32, 576, 320, false}};
  for (const MoeProblemCase& mc : moe_cases) {
    RouterProblem m({mc.tokens, mc.hidden, mc.experts}, rng);
    MoeProblem moe(mc, rng);
    DeviceBuffer<uint8_t> dw1t(tiled(moe.w1, mc.local, 2 * mc.inter, mc.hidden)),
        dw2t(tiled(moe.w2, mc.local, mc.hidden, mc.inter));
    DeviceBuffer<uint8_t> ws_unfused(moe_decode_workspace_bytes(mc.tokens, mc.hidden, mc.inter)), ws(ws_unfused.size());
    DeviceBuffer<uint16_t> dout_unfused(m.rows), dout(m.rows);
    MoeParams p = moe.dev;
    p.w1 = dw1t.get();
    p.w2 = dw2t.get();
    p.weights_tiled = true;
    p.residual = nullptr;
    p.x = m.dnormed_unfused.get();
    p.logits = m.dlogits_unfused.get();
    p.out = dout_unfused.get();
    dout_unfused.poison();
    ws_unfused.poison();
    m.run_unfused(stream);
    launch_moe_decode(p, ws_unfused.get(), stream);
    GOSSAMER_CUDA_CHECK(cudaStreamSynchronize(stream));
    const auto expected = dout_unfused.download();

    const MoeRouting routing = moe_decode_routing(ws.get(), mc.tokens, mc.hidden, mc.inter);
    MoeParams routed = p;
    routed.x = m.dnormed.get();
    routed.logits = nullptr;
    routed.out = dout.get();
    routed.routed = true;
    auto enqueue = [&] {
      launch_rmsnorm_router(m.fused_params(routing.topk_ids, routing.topk_weights), stream);
      launch_moe_decode(routed, ws.get(), stream);
    };
    const std::string shape = name_of(m.c) + " local[" + std::to_string(mc.expert_begin) + "+" +
                              std::to_string(mc.local) + "] i" + std::to_string(mc.inter);
    m.reset_fused();
    ws.poison();
    dout.poison();
    enqueue();
    GOSSAMER_CUDA_CHECK(cudaStreamSynchronize(stream));
    EXPECT_EQ(dout.download(), expected) << shape << ": eager";
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    GOSSAMER_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    enqueue();
    GOSSAMER_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
    GOSSAMER_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    for (int replay = 1; replay <= 2; ++replay) {
      m.reset_fused();
      ws.poison();
      dout.poison();
      GOSSAMER_CUDA_CHECK(cudaGraphLaunch(exec, stream));
      GOSSAMER_CUDA_CHECK(cudaStreamSynchronize(stream));
      EXPECT_EQ(dout.download(), expected) << shape << ": graph replay " << replay;
    }
    EXPECT_EQ(m.darrivals.download(), std::vector<int32_t>{0}) << shape;
    GOSSAMER_CUDA_CHECK(cudaGraphExecDestroy(exec));
    GOSSAMER_CUDA_CHECK(cudaGraphDestroy(graph));
  }
  GOSSAMER_CUDA_CHECK(cudaStreamDestroy(stream));
}

}  // namespace
}  // namespace gossamer::kernels
