// The W4A8 MXFP4 GEMM (gemm_w4a8.h), its per-row activation quantization into register order, the row exponents, and
// the prefill MoE block on it (launch_moe with weights_mxfp4 and mxfp4_w4a8).
//
// Exactness: the e5m2 weights and e4m3 activations multiply exactly in fp32, so against gemm_w4a8_cpu (double sums of
// the same values) only the summation order and the output rounding differ: kTolBf16 for bf16 outputs; the e4m3
// SwiGLU output can round the other way where the device's SwiGLU (ex2.approx, __fdividef) differs by an ulp:
// kTolBf16Requant. Against the exact MXFP4 values (moe_cpu: bf16 activations and h) the activations' e4m3 rounding
// adds ≈ 4.5% (two e4m3 roundings; kTolW4A8Exact). Quantization, scatter and row exponents: bit for bit.
#include "kernels/gemm_w4a8.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "kernel_test_utils.h"
#include "kernels/moe.h"
#include "kernels/mxfp4_tiled.h"
#include "moe_problem.h"

namespace gossamer::kernels {
namespace {

using namespace test;

constexpr double kTolW4A8Exact = 6e-2;

struct W4A8Case {
  int n, k;
  std::vector<int> rows;  // per group (0 allowed); one group with tile lists off = a plain GEMM
  GemmEpilogue epi;
  int e_lo, e_hi;
  bool plain = false, row_scales = true;
  int ldc_pad = 0;
};

// The model's gate_up and down, partial 256-token tiles and K blocks, an odd number of 128-row weight tiles (a last
// cluster pair with an inactive rank), N past a 64-row tile, exponent spans past 16 (truncated e5m2) and past 29
// (blocks read as zero), plain GEMMs, a fixed activation scale.
const W4A8Case kCases[] = {
    {5760, 2880, {600, 0, 129, 64, 1}, GemmEpilogue::kSwiGluFp8, 110, 124},
    {2880, 2880, {300, 7, 256, 0}, GemmEpilogue::kBias, 110, 124, false, false},
    {200, 416, {130, 1, 65}, GemmEpilogue::kBias, 116, 124, false, true, 16},
    {384, 224, {3, 500}, GemmEpilogue::kSwiGluFp8, 116, 124},
    {136, 96, {77, 300}, GemmEpilogue::kBias, 90, 124},
    {128, 2880, {40}, GemmEpilogue::kBias, 60, 130},
    {640, 2880, {300}, GemmEpilogue::kBias, 112, 124, true, true, 16},
    {8, 32, {5}, GemmEpilogue::kBias, 116, 124, true},
};

TEST(GemmW4A8Kernel, MatchesReference) {
  GOSSAMER_REQUIRE_GPU();
  std::mt19937 rng(61);
  uint64_t seed = 71;
  const int tile_rows = gemm_w4a8_tile_rows();
  for (const W4A8Case& c : kCases) {
    const int groups = static_cast<int>(c.rows.size());
    const GroupedTileLists lists(c.rows, tile_rows);
    const int M = lists.M();
    const int64_t lda = (c.k + 15) / 16 * 16 + 16;  // padded rows
    const auto a = random_fp8_bytes(size_t(M) * lda, rng);
    const auto a_scales = random_scales(size_t(M), rng, 1e-3f, 4e-3f);
    const auto w = random_mxfp4_tiled(groups, c.n, c.k, seed++, c.e_lo, c.e_hi);
    std::vector<uint8_t> row_exp(size_t(groups) * c.n);
    mxfp4_tiled_row_exponents_cpu(w.data(), groups, c.n, c.k, row_exp.data());
    const auto bias = random_bf16(size_t(groups) * c.n, rng, 1.0f);
    const bool fp8_out = c.epi == GemmEpilogue::kSwiGluFp8;
    const int out_cols = fp8_out ? c.n / 2 : c.n;
    const int64_t ldc = out_cols + c.ldc_pad;
    const size_t out_bytes = size_t(M) * ldc * (fp8_out ? 1 : 2);
    DeviceBuffer<uint8_t> da(a), dw(w), drow(row_exp), dout(out_bytes);
    DeviceBuffer<float> dscales(a_scales);
    DeviceBuffer<uint16_t> dbias(bias);
    GemmW4A8Params p;
    p.a = da.get();
    p.lda = lda;
    p.a_scales = c.row_scales ? dscales.get() : nullptr;
    p.a_scale = 2.5e-3f;
    p.b = dw.get();
    p.b_row_exponents = drow.get();
    p.bias = dbias.get();
    p.out = dout.get();
    p.ldc = ldc;
    p.M = M;
    p.N = c.n;
    p.K = c.k;
    p.epilogue = c.epi;
    if (!c.plain) {
      p.grouped = lists.params();
    }
    const std::string shape = std::to_string(groups) + "x[" + std::to_string(c.n) + "x" + std::to_string(c.k) + "] M" +
                              std::to_string(M) + (fp8_out ? " swiglu-fp8" : " bias") + " e[" + std::to_string(c.e_lo) +
                              "," + std::to_string(c.e_hi) + "]" + (c.plain ? " plain" : "") +
                              (c.row_scales ? "" : " fixed scale");
    dout.poison();
    const std::vector<uint8_t> poisoned = dout.download();
    launch_gemm_w4a8(p, nullptr);
    const auto out = dout.download();
    std::vector<uint8_t> host = poisoned;
    GemmW4A8Params h = p;
    h.a = a.data();
    h.a_scales = c.row_scales ? a_scales.data() : nullptr;
    h.b = w.data();
    h.b_row_exponents = row_exp.data();
    h.bias = bias.data();
    h.out = host.data();
    h.grouped.group_offsets = c.plain ? nullptr : lists.offsets.data();
    gemm_w4a8_cpu(h);
    std::vector<float> got, want;
    const size_t elem = fp8_out ? 1 : 2;
    auto value = [&](const std::vector<uint8_t>& v, size_t i) {
      if (fp8_out) return fp8e4m3_to_float(v[i]);
      uint16_t b;
      std::memcpy(&b, v.data() + 2 * i, 2);
      return bf16_to_float(b);
    };
    for (int m = 0; m < M; ++m) {
      for (int j = 0; j < out_cols; ++j) {
        got.push_back(value(out, size_t(m) * ldc + j));
        want.push_back(value(host, size_t(m) * ldc + j));
      }
      for (int64_t j = out_cols * int64_t(elem); j < ldc * int64_t(elem); ++j) {
        EXPECT_EQ(out[size_t(m) * ldc * elem + j], poisoned[size_t(m) * ldc * elem + j]) << shape << ": ldc padding";
      }
    }
    const double err = rel_error(got, want), tol = fp8_out ? kTolBf16Requant : kTolBf16;
    report("gemm_w4a8", shape, err, tol);
    EXPECT_LT(err, tol) << shape;
  }
}

// The per-row quantization into expert order in register order, bit for bit against its reference: rows skipped
// (−1), rows no input names left untouched (poisoned), padded row strides, a zero row (amax floor).
TEST(GemmW4A8Kernel, ActivationsQuantizeIsTheRule) {
  GOSSAMER_REQUIRE_GPU();
  std::mt19937 rng(5);
  for (const auto& [rows, K] : {std::pair{37, 2880}, std::pair{5, 64}, std::pair{300, 352}}) {
    const int64_t ldx = K + 8, ldo = K + 16;
    auto x = random_bf16(size_t(rows) * ldx, rng, 3.0f);
    std::fill_n(x.begin() + ldx, K, uint16_t{0});  // row 1: all zero
    std::vector<int32_t> dst(size_t(rows) * 4);
    const int out_rows = rows * 4 + 3;
    for (size_t i = 0; i < dst.size(); ++i)
      dst[i] = i % 7 == 3 ? -1 : static_cast<int32_t>((i * 7) % (rows * 4));  // a permutation
    DeviceBuffer<uint16_t> dx(x);
    DeviceBuffer<uint8_t> dout(size_t(out_rows) * ldo);
    DeviceBuffer<float> dscales(static_cast<size_t>(out_rows));
    DeviceBuffer<int32_t> ddst(dst);
    dout.poison();
    dscales.poison();
    std::vector<uint8_t> host = dout.download();
    std::vector<float> host_scales = dscales.download();
    launch_w4a8_activations(dx.get(), ldx, rows, K, ddst.get(), dout.get(), ldo, dscales.get(), nullptr);
    w4a8_activations_cpu(x.data(), ldx, rows, K, dst.data(), host.data(), ldo, host_scales.data());
    EXPECT_TRUE(dout.download() == host) << rows << " rows, K " << K;
    const auto got_scales = dscales.download();
    EXPECT_EQ(std::memcmp(got_scales.data(), host_scales.data(), host_scales.size() * 4), 0) << rows << " rows";
  }
}

TEST(GemmW4A8Kernel, RowExponentsAreTheRowMaxima) {
  GOSSAMER_REQUIRE_GPU();
  for (const auto& [groups, n, k] : {std::tuple{3, 200, 416}, std::tuple{2, 5760, 2880}, std::tuple{1, 8, 32}}) {
    const auto w = random_mxfp4_tiled(groups, n, k, 9 + n, 60, 200);
    DeviceBuffer<uint8_t> dw(w), dout(size_t(groups) * n);
    launch_mxfp4_tiled_row_exponents(dw.get(), groups, n, k, dout.get(), nullptr);
    std::vector<uint8_t> host(size_t(groups) * n);
    mxfp4_tiled_row_exponents_cpu(w.data(), groups, n, k, host.data());
    EXPECT_TRUE(dout.download() == host) << groups << "x[" << n << "x" << k << "]";
  }
}

// launch_moe with weights_mxfp4 and mxfp4_w4a8 against moe_cpu with the same quantization points, and against the
// exact MXFP4 values (bf16 activations and h): the e4m3 activations' rounding (measured 4.4–4.9e-2 on these cases,
// H100, 2026-12-07), the bound the cuda model tests hold FP8 modes to.
TEST(MoeKernel, Mxfp4W4A8MatchesReference) {
  GOSSAMER_REQUIRE_GPU();
  std::mt19937 rng(59);
  const MoeProblemCase cases[] = {
      {200, 32, 0, 32, 2880, 2880, true},   {3000, 32, 0, 32, 576, 320, true},   {512, 128, 0, 128, 576, 320, false},
      {3000, 128, 0, 128, 352, 224, false}, {2048, 128, 32, 64, 576, 320, true},
  };
  uint64_t seed = 300;
  for (const MoeProblemCase& c : cases) {
    const int T = c.tokens, H = c.hidden;
    MoeProblem m(c, rng, Mxfp4Experts{seed, 110, 124});
    seed += 2;
    DeviceBuffer<uint8_t> ws(moe_workspace_bytes(T, c.local, H, c.inter));
    DeviceBuffer<uint8_t> rows1(size_t(c.local) * 2 * c.inter), rows2(size_t(c.local) * H);
    launch_mxfp4_tiled_row_exponents(m.dev.w1, c.local, 2 * c.inter, H, rows1.get(), nullptr);
    launch_mxfp4_tiled_row_exponents(m.dev.w2, c.local, H, c.inter, rows2.get(), nullptr);
    DeviceBuffer<uint16_t> dout(size_t(T) * H);
    MoeParams d = m.dev;
    d.out = dout.get();
    d.mxfp4_w4a8 = true;
    d.w1_row_exponents = rows1.get();
    d.w2_row_exponents = rows2.get();
    const std::string shape = std::to_string(T) + "tok E" + std::to_string(c.experts) + " local[" +
                              std::to_string(c.expert_begin) + "+" + std::to_string(c.local) + "] h" +
                              std::to_string(H) + " i" + std::to_string(c.inter);
    dout.poison();
    ws.poison();
    launch_moe(d, ws.get(), nullptr);
    const auto out = dout.download();
    std::vector<uint16_t> ref(size_t(T) * H), exact(size_t(T) * H);
    std::vector<uint8_t> host_rows1(size_t(c.local) * 2 * c.inter), host_rows2(size_t(c.local) * H);
    mxfp4_tiled_row_exponents_cpu(m.w1.data(), c.local, 2 * c.inter, H, host_rows1.data());
    mxfp4_tiled_row_exponents_cpu(m.w2.data(), c.local, H, c.inter, host_rows2.data());
    MoeParams h = m.host;
    h.out = ref.data();
    h.mxfp4_w4a8 = true;
    h.w1_row_exponents = host_rows1.data();
    h.w2_row_exponents = host_rows2.data();
    moe_cpu(h);  // the W4A8 quantization points
    h.out = exact.data();
    h.mxfp4_w4a8 = false;
    moe_cpu(h);  // the exact MXFP4 values, bf16 activations and h
    const double err = rel_error_bf16(out, ref), err_exact = rel_error_bf16(out, exact);
    report("moe mxfp4 w4a8", shape, err, kTolBf16);
    report("moe mxfp4 w4a8 vs exact values", shape, err_exact, kTolW4A8Exact);
    EXPECT_LT(err, kTolBf16) << shape;
    EXPECT_LT(err_exact, kTolW4A8Exact) << shape;
  }
}

}  // namespace
}  // namespace gossamer::kernels
