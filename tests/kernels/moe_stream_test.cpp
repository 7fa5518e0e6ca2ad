// The weight-streaming grouped GEMM (gemm_stream.h) against gemm_stream_cpu at edge shapes, and the MoE
// decode block on it (launch_moe_stream) against moe_decode_cpu at gpt-oss's expert shapes (E = 32 and 128,
// hidden = inter = 2880, top-4), FP8 and MXFP4 experts, 1–64 tokens, expert subsets (expert parallelism),
// experts shared by every token (tiles split past 32 rows) and CUDA-graph replay.
//
// Error bound: ‖out − ref‖/‖ref‖ < kTolBf16. The kernel and moe_decode_cpu compute with the exact fp8/fp4
// values and block scales in fp32 and round h and y to bf16 at the same points; they differ in fp32
// summation order and in the f16 staging of x (exact for elements ≥ 2^-28 of their 64-column chunk's
// largest), so the error is bf16 rounding (≈ 2e-3). The references run over token slices on all cores.
#include <algorithm>
#include <cstring>
#include <string>
#include <thread>

#include "kernel_test_utils.h"
#include "kernels/fp8_tiled.h"
#include "kernels/gemm_stream.h"
#include "kernels/moe.h"
#include "kernels/mxfp4_tiled.h"

namespace gossamer::kernels {
namespace {

using namespace test;

constexpr int kH = 2880, kI = 2880;  // gpt-oss hidden and intermediate sizes

// FP8 experts [G, N, K] directly in the tile-major layout (N and K multiples of 64: no padding): e4m3 over
// the finite range (the NaN codes 0x7F/0xFF become ±448).
std::vector<uint8_t> random_fp8_tiled(int groups, int n, int k, uint64_t seed) {
  std::vector<uint8_t> w(size_t(groups) * fp8_tiled_group_bytes(n, k));
  fill_random(w, seed);
  for (uint8_t& b : w) b = (b & 0x7F) == 0x7F ? static_cast<uint8_t>(b ^ 1) : b;
  return w;
}

// One layer's experts at a gpt-oss shape, host and device, FP8 (tile-major, block scales) or MXFP4.
struct ExpertSet {
  ExpertSet(int experts, bool mxfp4, uint64_t seed) : E(experts), mxfp4(mxfp4) {
    std::mt19937 rng(static_cast<uint32_t>(seed));
    if (mxfp4) {
      w1 = random_mxfp4_tiled(E, 2 * kI, kH, seed + 1, 112, 118);
      w2 = random_mxfp4_tiled(E, kH, kI, seed + 2, 112, 118);
    } else {
      w1 = random_fp8_tiled(E, 2 * kI, kH, seed + 1);
      w2 = random_fp8_tiled(E, kH, kI, seed + 2);
      w1s = random_scales(scale_count(E, 2 * kI, kH), rng, 0.0002f, 0.0006f);
      w2s = random_scales(scale_count(E, kH, kI), rng, 0.0002f, 0.0006f);
    }
    b1 = random_bf16(size_t(E) * 2 * kI, rng, 0.5f);
    b2 = random_bf16(size_t(E) * kH, rng, 0.5f);
    dw1 = DeviceBuffer<uint8_t>(w1);
    dw2 = DeviceBuffer<uint8_t>(w2);
    if (!mxfp4) {
      dw1s = DeviceBuffer<float>(w1s);
      dw2s = DeviceBuffer<float>(w2s);
    }
    db1 = DeviceBuffer<uint16_t>(b1);
    db2 = DeviceBuffer<uint16_t>(b2);
  }
  // Weight pointers of local experts [begin, begin + local) into `p` (host or device copies).
  void bind(MoeParams& p, bool device, int begin, int local) const {
    const int64_t g1 = mxfp4 ? mxfp4_tiled_group_bytes(2 * kI, kH) : fp8_tiled_group_bytes(2 * kI, kH);
    const int64_t g2 = mxfp4 ? mxfp4_tiled_group_bytes(kH, kI) : fp8_tiled_group_bytes(kH, kI);
    p.num_experts = E;
    p.expert_begin = begin;
    p.num_local_experts = local;
    p.hidden = kH;
    p.inter = kI;
    p.weights_tiled = !mxfp4;
    p.weights_mxfp4 = mxfp4;
    p.w1 = (device ? dw1.get() : w1.data()) + begin * g1;
    p.w2 = (device ? dw2.get() : w2.data()) + begin * g2;
    p.w1_scales = mxfp4 ? nullptr : (device ? dw1s.get() : w1s.data()) + begin * scale_count(1, 2 * kI, kH);
    p.w2_scales = mxfp4 ? nullptr : (device ? dw2s.get() : w2s.data()) + begin * scale_count(1, kH, kI);
    p.b1 = (device ? db1.get() : b1.data()) + int64_t(begin) * 2 * kI;
    p.b2 = (device ? db2.get() : b2.data()) + int64_t(begin) * kH;
  }
  int E;
  bool mxfp4;
  std::vector<uint8_t> w1, w2;
  std::vector<float> w1s, w2s;
  std::vector<uint16_t> b1, b2;
  DeviceBuffer<uint8_t> dw1, dw2;
  DeviceBuffer<float> dw1s, dw2s;
  DeviceBuffer<uint16_t> db1, db2;
};

// moe_decode_cpu over token slices on all cores (tokens are independent): [T, hidden] bf16.
std::vector<uint16_t> decode_reference(const MoeParams& host) {
  const int T = host.num_tokens;
  std::vector<uint16_t> out(size_t(T) * host.hidden);
  const int threads = std::clamp(static_cast<int>(std::thread::hardware_concurrency()), 1, T);
  std::vector<std::thread> pool;
  for (int i = 0; i < threads; ++i) {
    const int t0 = T * i / threads, t1 = T * (i + 1) / threads;
    MoeParams s = host;
    s.num_tokens = t1 - t0;
    s.x += int64_t(t0) * host.hidden;
    s.logits += int64_t(t0) * host.num_experts;
    if (s.residual) s.residual += int64_t(t0) * host.hidden;
    s.out = out.data() + int64_t(t0) * host.hidden;
    pool.emplace_back([s] { moe_decode_cpu(s); });
  }
  for (std::thread& t : pool) t.join();
  return out;
}

struct StreamCase {
  int tokens, expert_begin, local;
  bool residual;
  int distinct_logit_rows;  // 0: every token its own logits; d > 0: token t uses row t % d (shared experts)
  bool graph = false;       // also captured into a CUDA graph and replayed twice
};

// One block on the GPU against moe_decode_cpu.
void check(const ExpertSet& set, const StreamCase& c, std::mt19937& rng) {
  const int T = c.tokens;
  const auto x = random_bf16(size_t(T) * kH, rng, 1.0f), res = random_bf16(size_t(T) * kH, rng, 1.0f);
  const int rows = c.distinct_logit_rows > 0 ? c.distinct_logit_rows : T;
  const auto base = random_bf16(size_t(rows) * set.E, rng, 2.0f);
  std::vector<uint16_t> logits(size_t(T) * set.E);
  for (int t = 0; t < T; ++t)
    std::copy_n(base.begin() + size_t(t % rows) * set.E, set.E, logits.begin() + size_t(t) * set.E);
  DeviceBuffer<uint16_t> dx(x), dres(res), dl(logits), dout(size_t(T) * kH);
  DeviceBuffer<uint8_t> ws(moe_stream_workspace_bytes(T, c.local, kH, kI));
  MoeParams h, d;
  set.bind(h, false, c.expert_begin, c.local);
  set.bind(d, true, c.expert_begin, c.local);
  h.num_tokens = d.num_tokens = T;
  h.x = x.data(), h.logits = logits.data(), h.residual = c.residual ? res.data() : nullptr;
  d.x = dx.get(), d.logits = dl.get(), d.residual = c.residual ? dres.get() : nullptr, d.out = dout.get();
  dout.poison();
  ws.poison();
  launch_moe_stream(d, ws.get(), nullptr);
  const auto out = dout.download();
  const auto ref = decode_reference(h);
  const std::string shape = std::to_string(T) + "tok E" + std::to_string(set.E) + " local[" +
                            std::to_string(c.expert_begin) + "+" + std::to_string(c.local) + "]" +
                            (c.distinct_logit_rows ? " shared-experts" : "") + (c.residual ? " +res" : "");
  const char* kernel = set.mxfp4 ? "moe_stream mxfp4" : "moe_stream fp8";
  const double err = rel_error_bf16(out, ref);
  report(kernel, shape, err, kTolBf16);
  EXPECT_LT(err, kTolBf16) << kernel << " " << shape;
  if (!c.graph) return;
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  launch_moe_stream(d, ws.get(), stream);
  ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  for (int i = 0; i < 2; ++i) {
    dout.poison();
    ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    const double e = rel_error_bf16(dout.download(), ref);
    report(kernel, shape + " graph replay " + std::to_string(i), e, kTolBf16);
    EXPECT_LT(e, kTolBf16) << kernel << " " << shape << ": graph replay " << i;
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

// The tokens of the brief (1, 3, 8, 16, 64) with all experts local, then shared experts (every token the
// same 4: 64 rows per expert → two 32-row tiles; or 3 routings) and expert subsets.
std::vector<StreamCase> cases_for(int E) {
  std::vector<StreamCase> cases;
  for (const int t : {1, 3, 8, 16, 64}) cases.push_back({t, 0, E, t % 2 == 1, 0, t == 16});
  cases.push_back({64, 0, E, true, 1});
  cases.push_back({64, 0, E, false, 3});
  cases.push_back({16, E / 4, E / 4, true, 0});       // local [E/4, E/2)
  cases.push_back({64, E - E / 4, E / 4, false, 0});  // the last quarter
  cases.push_back({3, E / 2, E / 8, true, 0});
  return cases;
}

void run_set(int E, bool mxfp4, uint32_t seed) {
  const ExpertSet set(E, mxfp4, seed);
  std::mt19937 rng(seed);
  for (const StreamCase& c : cases_for(E)) check(set, c, rng);
}

TEST(MoeStreamKernel, Fp8E32MatchesDecodeReference) {
  GOSSAMER_REQUIRE_GPU();
  run_set(32, false, 41);
}
TEST(MoeStreamKernel, Fp8E128MatchesDecodeReference) {
  GOSSAMER_REQUIRE_GPU();
  run_set(128, false, 42);
}
TEST(MoeStreamKernel, Mxfp4E32MatchesDecodeReference) {
  GOSSAMER_REQUIRE_GPU();
  run_set(32, true, 43);
}
TEST(MoeStreamKernel, Mxfp4E128MatchesDecodeReference) {
  GOSSAMER_REQUIRE_GPU();
  run_set(128, true, 44);
}

// All of every token's experts on other ranks: no tile, the output is the residual alone.
TEST(MoeStreamKernel, NoLocalExperts) {
  GOSSAMER_REQUIRE_GPU();
  const ExpertSet set(32, false, 45);
  std::mt19937 rng(46);
  const int T = 5;
  std::vector<uint16_t> logits = random_bf16(size_t(T) * 32, rng, 2.0f);
  for (int t = 0; t < T; ++t)
    for (int e = 0; e < 4; ++e) logits[size_t(t) * 32 + e] = float_to_bf16(10.0f + e);  // experts 0..3
  const auto x = random_bf16(size_t(T) * kH, rng, 1.0f), res = random_bf16(size_t(T) * kH, rng, 1.0f);
  DeviceBuffer<uint16_t> dx(x), dres(res), dl(logits), dout(size_t(T) * kH);
  DeviceBuffer<uint8_t> ws(moe_stream_workspace_bytes(T, 16, kH, kI));
  MoeParams d;
  set.bind(d, true, 16, 16);
  d.num_tokens = T;
  d.x = dx.get(), d.logits = dl.get(), d.residual = dres.get(), d.out = dout.get();
  dout.poison();
  ws.poison();
  launch_moe_stream(d, ws.get(), nullptr);
  EXPECT_EQ(dout.download(), res);
}

// ---- the grouped GEMM alone, at edge shapes, with a plan made here ----

struct GemmCase {
  int n, k, tile_rows;
  std::vector<int> group_rows;  // rows per group (0 allowed)
  GemmEpilogue epilogue;
  bool mxfp4, bias, gather, plan_from_earlier;
};

TEST(MoeStreamGemm, MatchesReference) {
  GOSSAMER_REQUIRE_GPU();
  std::mt19937 rng(47);
  const auto S = GemmEpilogue::kSwiGlu, B = GemmEpilogue::kBias;
  const GemmCase cases[] = {
      // N not a multiple of 64 or 128, K of one partial stage, of 1.5 stages, of gpt-oss.
      {336, 64, 8, {1, 0, 8, 3}, B, false, true, true, false},
      {336, 96, 16, {9, 16, 1}, S, false, true, false, true},
      {256, 2880, 32, {32, 33, 1, 0, 64}, S, false, true, true, false},
      {2880, 2880, 24, {24, 25, 7}, B, false, false, false, true},
      {336, 64, 8, {1, 0, 8, 3}, B, true, true, true, false},
      {336, 96, 16, {9, 16, 1}, S, true, true, false, true},
      {256, 2880, 32, {32, 33, 1, 0, 64}, S, true, true, true, false},
      {2880, 2880, 24, {24, 25, 7}, B, true, false, false, true},
      {5760, 2880, 8, {1, 1, 2}, S, true, true, true, false},
      {5760, 2880, 8, {1, 1, 2}, S, false, true, true, false},
  };
  for (const GemmCase& c : cases) {
    const int G = static_cast<int>(c.group_rows.size());
    // The plan: rows of group g are [offsets[g], offsets[g + 1]), tiles of tile_rows.
    std::vector<int32_t> offsets{0}, tile_group, tile_m0;
    for (int g = 0; g < G; ++g) {
      for (int r = 0; r < c.group_rows[g]; r += c.tile_rows) {
        tile_group.push_back(g);
        tile_m0.push_back(offsets.back() + r);
      }
      offsets.push_back(offsets.back() + c.group_rows[g]);
    }
    const int rows = offsets.back(), tiles = static_cast<int>(tile_group.size());
    const int max_tiles = tiles + 2;  // slack: CTAs past num_tiles must exit
    tile_group.resize(max_tiles, -1);
    tile_m0.resize(max_tiles, -1);
    const std::vector<int32_t> num_tiles{tiles};
    // x rows: gathered through a permutation of 2·rows + 1 rows, or the rows in order.
    const int x_rows = c.gather ? 2 * rows + 1 : rows;
    std::vector<int32_t> row_index(rows);
    for (int r = 0; r < rows; ++r) row_index[r] = (7 * r + 3) % x_rows;
    const int64_t ldx = c.k + 8, out_cols = c.epilogue == S ? c.n / 2 : c.n, ldc = out_cols + 8;
    const auto x = random_bf16(size_t(x_rows) * ldx, rng, 1.0f);
    std::vector<uint8_t> w;
    std::vector<float> scales;
    if (c.mxfp4) {
      std::vector<uint8_t> blocks(size_t(G) * c.n * c.k / 2), mx_scales(size_t(G) * c.n * c.k / 32);
      for (auto& b : blocks) b = static_cast<uint8_t>(rng());
      for (auto& s : mx_scales) s = static_cast<uint8_t>(112 + rng() % 7);
      w.resize(size_t(G) * mxfp4_tiled_group_bytes(c.n, c.k));
      mxfp4_to_tiled_cpu(blocks.data(), mx_scales.data(), w.data(), G, c.n, c.k);
    } else {
      w = tiled(random_fp8_bytes(size_t(G) * c.n * c.k, rng), G, c.n, c.k);
      scales = random_scales(scale_count(G, c.n, c.k), rng, 0.0002f, 0.0006f);
    }
    const auto bias = random_bf16(size_t(G) * c.n, rng, 0.5f);
    DeviceBuffer<uint16_t> dx(x), dbias(bias), dout(size_t(std::max(rows, 1)) * ldc);
    DeviceBuffer<uint8_t> dw(w);
    DeviceBuffer<float> dscales;
    if (!c.mxfp4) dscales = DeviceBuffer<float>(scales);
    DeviceBuffer<int32_t> doff(offsets), dgroup(tile_group), dm0(tile_m0), dnum(num_tiles), drow(row_index);
    GemmStreamParams p;
    p.ldx = ldx;
    p.w_mxfp4 = c.mxfp4;
    p.ldc = ldc;
    p.N = c.n;
    p.K = c.k;
    p.epilogue = c.epilogue;
    p.tile_rows = c.tile_rows;
    p.plan_from_earlier_kernel = c.plan_from_earlier;
    GemmStreamParams hp = p, dp = p;
    hp.x = x.data(), hp.x_row_index = c.gather ? row_index.data() : nullptr, hp.w = w.data();
    hp.w_scales = c.mxfp4 ? nullptr : scales.data(), hp.bias = c.bias ? bias.data() : nullptr;
    hp.grouped = {offsets.data(), tile_group.data(), tile_m0.data(), num_tiles.data(), max_tiles, G};
    dp.x = dx.get(), dp.x_row_index = c.gather ? drow.get() : nullptr, dp.w = dw.get();
    dp.w_scales = c.mxfp4 ? nullptr : dscales.get(), dp.bias = c.bias ? dbias.get() : nullptr;
    dp.grouped = {doff.get(), dgroup.get(), dm0.get(), dnum.get(), max_tiles, G};
    dp.out = dout.get();
    dout.poison();
    std::vector<uint16_t> ref(dout.size(), 0xFFFF);
    hp.out = ref.data();
    launch_gemm_stream(dp, nullptr);
    gemm_stream_cpu(hp);
    const auto out = dout.download();
    std::vector<float> got, want;
    bool padding_untouched = true;
    for (int r = 0; r < rows; ++r) {
      for (int64_t col = 0; col < ldc; ++col) {
        const size_t i = size_t(r) * ldc + col;
        if (col >= out_cols) {
          padding_untouched &= out[i] == 0xFFFF;
          continue;
        }
        got.push_back(bf16_to_float(out[i]));
        want.push_back(bf16_to_float(ref[i]));
      }
    }
    std::string shape = std::string(c.mxfp4 ? "mxfp4" : "fp8") + " N=" + std::to_string(c.n) +
                        " K=" + std::to_string(c.k) + " tile_rows=" + std::to_string(c.tile_rows) + " groups";
    for (const int g : c.group_rows) shape.append(" ").append(std::to_string(g));
    shape += c.epilogue == S ? " swiglu" : " bias";
    const double err = rel_error(got, want);
    report("gemm_stream", shape, err, kTolBf16);
    EXPECT_LT(err, kTolBf16) << shape;
    EXPECT_TRUE(padding_untouched) << shape << ": wrote past N";
  }
}

}  // namespace
}  // namespace gossamer::kernels
