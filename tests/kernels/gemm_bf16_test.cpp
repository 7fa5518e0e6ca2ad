// bf16 GEMM (plain, bias / no bias, SwiGLU, gathered and strided A) and the bf16 MoE block against the
// CPU references (gemm_bf16_cpu, moe_bf16_cpu).
//
// Relative-error bounds (‖out − ref‖/‖ref‖, kernel_test_utils.h):
//   - bf16 out of a bf16 GEMM: kTolBf16 = 1e-2. GPU and reference both accumulate in fp32 and round once
//     to bf16; they differ only in summation order, so most outputs are bit-identical and the rest one
//     bf16 ulp (2^-8 relative) apart. Expected ~1e-4…1e-3.
//   - bf16 out of the bf16 MoE block: kTolBf16 = 1e-2. The reference rounds h and y to bf16 at the same
//     points as the GPU, so the only extra error is an occasional one-ulp difference in h carried through
//     the down projection (no fp8 re-quantization here, unlike the FP8 MoE's kTolBf16Requant).
//   - CPU reference on small integers: exact (0).
#include "kernels/gemm_bf16.h"

#include <algorithm>
#include <numeric>

#include "gpt_oss_cases.h"
#include "kernel_test_utils.h"
#include "kernels/moe.h"

namespace gossamer::kernels {
namespace {

using namespace test;

// ---- reference sanity (no GPU needed) ----------------------------------------------------------------

TEST(GemmBf16Cpu, ExactOnSmallIntegersAndSwiGluFormula) {
  const int M = 3, N = 8, K = 16;
  std::vector<uint16_t> a(M * K), b(N * K), bias(N), out(M * N);
  for (int i = 0; i < M * K; ++i) a[i] = float_to_bf16(float(i % 5 - 2));
  for (int i = 0; i < N * K; ++i) b[i] = float_to_bf16(float(i % 3 - 1));
  for (int n = 0; n < N; ++n) bias[n] = float_to_bf16(float(n - 4));
  GemmBf16Params p;
  p.a = a.data();
  p.lda = K;
  p.b = b.data();
  p.bias = bias.data();
  p.out = out.data();
  p.ldc = N;
  p.M = M;
  p.N = N;
  p.K = K;
  gemm_bf16_cpu(p);
  for (int m = 0; m < M; ++m) {
    for (int n = 0; n < N; ++n) {
      double want = n - 4;
      for (int k = 0; k < K; ++k) want += double(bf16_to_float(a[m * K + k])) * bf16_to_float(b[n * K + k]);
      EXPECT_EQ(bf16_to_float(out[m * N + n]), float(want)) << m << "," << n;
    }
  }
  // SwiGLU on one (gate, up) pair through the bias: gate 10 → 7, up −9 → −7.
  std::vector<uint16_t> a1(16, 0), b8(8 * 16, 0), bias8(8, 0), out8(4);
  bias8[0] = float_to_bf16(10.f);
  bias8[1] = float_to_bf16(-9.f);
  bias8[2] = float_to_bf16(1.f);  // gate 1, up 0.5 → σ(1.702)·1.5
  bias8[3] = float_to_bf16(0.5f);
  GemmBf16Params s = p;
  s.a = a1.data();
  s.b = b8.data();
  s.bias = bias8.data();
  s.out = out8.data();
  s.ldc = 4;
  s.M = 1;
  s.K = 16;
  s.epilogue = GemmEpilogue::kSwiGlu;
  gemm_bf16_cpu(s);
  EXPECT_EQ(out8[0], float_to_bf16(7.f / (1.f + std::exp(-1.702f * 7.f)) * -6.f));
  EXPECT_EQ(out8[1], float_to_bf16(1.f / (1.f + std::exp(-1.702f)) * 1.5f));
  EXPECT_EQ(out8[2], float_to_bf16(0.f));
}

// ---- plain GEMM --------------------------------------------------------------------------------------

struct GemmCase {
  int m, n, k;
  GemmEpilogue epi;
  bool bias;
  bool gather_and_pad;  // A rows through a_row_index (with repeats), lda > K, ldc > out columns
};

std::string gemm_shape(const GemmCase& c) {
  return std::to_string(c.m) + "x" + std::to_string(c.n) + "x" + std::to_string(c.k) +
         (c.epi == GemmEpilogue::kSwiGlu ? " swiglu" : "") + (c.bias ? " bias" : " nobias") +
         (c.gather_and_pad ? " gather+stride" : "");
}

// One GEMM against gemm_bf16_cpu: the written columns within kTolBf16, the ldc padding never written.
void check_gemm(const GemmCase& c, std::mt19937& rng) {
  constexpr auto kS = GemmEpilogue::kSwiGlu;
  const int out_cols = c.epi == kS ? c.n / 2 : c.n;
  const int64_t lda = c.gather_and_pad ? c.k + 24 : c.k;
  const int64_t ldc = c.gather_and_pad ? out_cols + 6 : out_cols;
  const int rows_a = c.gather_and_pad ? c.m + 5 : c.m;
  auto a = random_bf16(size_t(rows_a) * lda, rng, 1.0f);
  auto b = random_bf16(size_t(c.n) * c.k, rng, 2.0f / std::sqrt(float(c.k)));
  auto bias = random_bf16(c.n, rng, 1.0f);
  std::vector<int32_t> index(c.gather_and_pad ? c.m : 1, 0);  // unused (size 1) without gather
  std::uniform_int_distribution<int> pick(0, rows_a - 1);
  if (c.gather_and_pad) {
    for (auto& i : index) i = pick(rng);
  }
  DeviceBuffer<uint16_t> da(a), db(b), dbias(bias), dout(size_t(c.m) * ldc);
  DeviceBuffer<int32_t> dindex(index);
  GemmBf16Params p;
  p.a = da.get();
  p.lda = lda;
  p.a_row_index = c.gather_and_pad ? dindex.get() : nullptr;
  p.b = db.get();
  p.bias = c.bias ? dbias.get() : nullptr;
  p.out = dout.get();
  p.ldc = ldc;
  p.M = c.m;
  p.N = c.n;
  p.K = c.k;
  p.epilogue = c.epi;
  std::vector<uint16_t> ref(dout.size(), 0);
  GemmBf16Params r = p;
  r.a = a.data();
  r.a_row_index = c.gather_and_pad ? index.data() : nullptr;
  r.b = b.data();
  r.bias = c.bias ? bias.data() : nullptr;
  r.out = ref.data();
  gemm_bf16_cpu(r);

  dout.poison();
  launch_gemm_bf16(p, nullptr);
  const std::vector<uint16_t> out = dout.download();
  // Compare the written columns; the ldc padding must still hold the poison (never written).
  std::vector<uint16_t> got, want;
  bool pad_untouched = true;
  for (int m = 0; m < c.m; ++m) {
    for (int64_t j = 0; j < ldc; ++j) {
      const uint16_t v = out[m * ldc + j];
      if (j < out_cols) {
        got.push_back(v);
        want.push_back(ref[m * ldc + j]);
      } else if (v != 0xFFFF) {
        pad_untouched = false;
      }
    }
  }
  const std::string shape = gemm_shape(c);
  const double err = rel_error_bf16(got, want);
  report("gemm_bf16", shape, err, kTolBf16);
  EXPECT_LT(err, kTolBf16) << shape;
  EXPECT_TRUE(pad_untouched) << shape << ": wrote past the output columns";
}

TEST(GemmBf16Kernel, MatchesReference) {
  GOSSAMER_REQUIRE_GPU();
  std::mt19937 rng(20);
  constexpr auto kB = GemmEpilogue::kBias;
  constexpr auto kS = GemmEpilogue::kSwiGlu;
  // M ∈ {1, 7, 130, 1000} (partial and multi-tile rows), N ∈ {8, 136, 5120} (partial / whole column tiles),
  // K ∈ {16, 48, 272, 2880} (16 and 48 and 272: a half-filled last 32-wide K tile), plus exact tiles. N ≤ 128
  // takes the 64-row tiles, the rest 128.
  const GemmCase cases[] = {
      {1, 8, 16, kB, true, false},
      {1, 5120, 2880, kB, true, false},
      {1, 136, 272, kS, false, false},
      {1, 5120, 272, kS, true, true},
      {7, 136, 2880, kB, true, false},
      {7, 8, 272, kB, false, false},
      {7, 5120, 16, kS, true, false},
      {7, 136, 48, kB, true, true},
      {130, 136, 16, kB, true, false},
      {130, 5120, 2880, kB, true, false},
      {130, 8, 2880, kS, true, false},
      {130, 136, 272, kB, false, true},
      {130, 5120, 272, kS, false, false},
      {1000, 136, 2880, kB, true, false},
      {1000, 5120, 272, kS, true, false},
      {1000, 8, 16, kB, true, false},
      {1000, 136, 272, kB, false, true},
      {1000, 136, 2880, kS, true, true},
      {256, 256, 64, kB, true, false},
      {128, 128, 32, kS, false, false},
      // One column tile (N ≤ 128, plain: the 64-row tiles): the routers at prefill, rows past the last tile.
      {4100, 32, 2880, kB, true, false},
      {2000, 128, 2880, kB, true, false},
      {65, 120, 48, kS, true, false},
  };
  for (const auto& c : cases) check_gemm(c, rng);
}

// The bench's gpt-oss cases (gpt_oss_cases.h) whose reference fits the budget: the prefill rows of the
// dense linears at 16 rows and the routers (the large ones take the single-threaded reference minutes).
TEST(GemmBf16Kernel, GptOssCasesMatchReference) {
  GOSSAMER_REQUIRE_GPU();
  constexpr double kReferenceBudget = double(1 << 28);  // multiply-adds
  std::mt19937 rng(23);
  int checked = 0;
  for (const gpt_oss::GemmBf16Case& g : gpt_oss::kGemmBf16) {
    const gpt_oss::LinearCase& l = gpt_oss::linear(g.linear);
    if (double(g.rows) * l.n * l.k > kReferenceBudget) continue;
    check_gemm({g.rows, l.n, l.k, l.epilogue, true, false}, rng);
    ++checked;
  }
  EXPECT_GE(checked, 5);
}

TEST(GemmBf16Kernel, EmptyProblemsAreNoOps) {
  GOSSAMER_REQUIRE_GPU();
  DeviceBuffer<uint16_t> buf(64);
  buf.poison();
  GemmBf16Params p;
  p.a = buf.get();
  p.b = buf.get();
  p.out = buf.get();
  p.lda = 16;
  p.ldc = 8;
  p.M = 0;
  p.N = 8;
  p.K = 16;
  launch_gemm_bf16(p, nullptr);
  GOSSAMER_CUDA_CHECK(cudaDeviceSynchronize());
  for (const uint16_t v : buf.download()) EXPECT_EQ(v, 0xFFFF);
}

// ---- MoE block ---------------------------------------------------------------------------------------

struct MoeCase {
  int tokens, experts, expert_begin, local, hidden, inter;
  bool residual;
};

std::string moe_shape(const MoeCase& c) {
  return std::to_string(c.tokens) + "tok E" + std::to_string(c.experts) + " local[" + std::to_string(c.expert_begin) +
         "+" + std::to_string(c.local) + "] h" + std::to_string(c.hidden) + " i" + std::to_string(c.inter) +
         (c.residual ? " +res" : "");
}

struct MoeData {
  std::vector<uint16_t> x, logits, res, w1, b1, w2, b2;
};

MoeData moe_data(const MoeCase& c, std::mt19937& rng) {
  const int H = c.hidden, I = c.inter, E = c.local;
  MoeData d;
  d.x = random_bf16(size_t(c.tokens) * H, rng, 1.0f);
  d.logits = random_bf16(size_t(c.tokens) * c.experts, rng, 2.0f);
  d.res = random_bf16(size_t(c.tokens) * H, rng, 1.0f);
  // Weight scale 2/√K: pre-activations ~N(0, 4), so the ±7 SwiGLU clamps are exercised.
  d.w1 = random_bf16(size_t(E) * 2 * I * H, rng, 2.0f / std::sqrt(float(H)));
  d.b1 = random_bf16(size_t(E) * 2 * I, rng, 0.5f);
  d.w2 = random_bf16(size_t(E) * H * I, rng, 1.0f / std::sqrt(float(I)));
  d.b2 = random_bf16(size_t(E) * H, rng, 0.5f);
  return d;
}

MoeBf16Params moe_params(const MoeCase& c) {
  MoeBf16Params p;
  p.num_tokens = c.tokens;
  p.num_experts = c.experts;
  p.expert_begin = c.expert_begin;
  p.num_local_experts = c.local;
  p.hidden = c.hidden;
  p.inter = c.inter;
  return p;
}

std::vector<uint16_t> moe_reference(const MoeCase& c, const MoeData& d) {
  MoeBf16Params r = moe_params(c);
  std::vector<uint16_t> ref(d.x.size());
  r.x = d.x.data();
  r.logits = d.logits.data();
  r.residual = c.residual ? d.res.data() : nullptr;
  r.out = ref.data();
  r.w1 = d.w1.data();
  r.b1 = d.b1.data();
  r.w2 = d.w2.data();
  r.b2 = d.b2.data();
  moe_bf16_cpu(r);
  return ref;
}

TEST(MoeBf16Kernel, MatchesReference) {
  GOSSAMER_REQUIRE_GPU();
  std::mt19937 rng(21);
  // E = 8 and 32 at T = 1, 5, 300 (300 tokens over 8 experts: ~150 rows each → two 128-row tiles, the
  // second partial); 528/272 are multiples of 16 but not 32 (half-filled last K tile); expert parallelism;
  // and the 20b shape (hidden = inter = 2880) on a 4-of-8 local slice.
  const MoeCase cases[] = {{1, 8, 0, 8, 576, 320, true},      {5, 8, 0, 8, 528, 272, false},
                           {300, 8, 0, 8, 528, 272, true},    {1, 32, 0, 32, 576, 320, false},
                           {5, 32, 0, 32, 576, 320, true},    {300, 32, 0, 32, 576, 320, true},
                           {300, 32, 8, 16, 576, 272, false}, {5, 8, 4, 4, 2880, 2880, true}};
  for (const auto& c : cases) {
    const MoeData d = moe_data(c, rng);
    DeviceBuffer<uint16_t> dx(d.x), dl(d.logits), dres(d.res), dw1(d.w1), db1(d.b1), dw2(d.w2), db2(d.b2),
        dout(d.x.size());
    DeviceBuffer<uint8_t> ws(moe_bf16_workspace_bytes(c.tokens, c.local, c.hidden, c.inter));
    dout.poison();
    ws.poison();
    MoeBf16Params p = moe_params(c);
    p.x = dx.get();
    p.logits = dl.get();
    p.residual = c.residual ? dres.get() : nullptr;
    p.out = dout.get();
    p.w1 = dw1.get();
    p.b1 = db1.get();
    p.w2 = dw2.get();
    p.b2 = db2.get();
    launch_moe_bf16(p, ws.get(), nullptr);
    const std::vector<uint16_t> ref = moe_reference(c, d);
    const std::string shape = moe_shape(c);
    const double err = rel_error_bf16(dout.download(), ref);
    report("moe_bf16", shape, err, kTolBf16);
    EXPECT_LT(err, kTolBf16) << shape;
  }
}

// The whole block captured into a CUDA graph (no host sync or allocation inside), replayed twice, with the
// output aliasing the residual as the model uses it.
TEST(MoeBf16Kernel, GraphCaptureWithResidualAlias) {
  GOSSAMER_REQUIRE_GPU();
  std::mt19937 rng(22);
  const MoeCase c{37, 32, 0, 32, 576, 320, true};
  const MoeData d = moe_data(c, rng);
  DeviceBuffer<uint16_t> dx(d.x), dl(d.logits), dio(d.res), dw1(d.w1), db1(d.b1), dw2(d.w2), db2(d.b2);
  DeviceBuffer<uint8_t> ws(moe_bf16_workspace_bytes(c.tokens, c.local, c.hidden, c.inter));
  ws.poison();
  MoeBf16Params p = moe_params(c);
  p.x = dx.get();
  p.logits = dl.get();
  p.residual = dio.get();
  p.out = dio.get();
  p.w1 = dw1.get();
  p.b1 = db1.get();
  p.w2 = dw2.get();
  p.b2 = db2.get();
  cudaStream_t stream;
  GOSSAMER_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  GOSSAMER_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  launch_moe_bf16(p, ws.get(), stream);
  GOSSAMER_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  GOSSAMER_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  const std::vector<uint16_t> ref = moe_reference(c, d);
  for (int replay = 0; replay < 2; ++replay) {
    dio.upload(d.res);  // the block adds into its residual in place: restore it before each replay
    GOSSAMER_CUDA_CHECK(cudaGraphLaunch(exec, stream));
    GOSSAMER_CUDA_CHECK(cudaStreamSynchronize(stream));
    const double err = rel_error_bf16(dio.download(), ref);
    report("moe_bf16", moe_shape(c) + " graph replay " + std::to_string(replay), err, kTolBf16);
    EXPECT_LT(err, kTolBf16) << "replay " << replay;
  }
  GOSSAMER_CUDA_CHECK(cudaGraphExecDestroy(exec));
  GOSSAMER_CUDA_CHECK(cudaGraphDestroy(graph));
  GOSSAMER_CUDA_CHECK(cudaStreamDestroy(stream));
}

}  // namespace
}  // namespace gossamer::kernels
