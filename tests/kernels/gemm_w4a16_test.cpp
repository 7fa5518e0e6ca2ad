// The W4A16 MXFP4 GEMM (gemm_w4a16.h), its activations' scatter into register order, and the prefill MoE block on
// it (launch_moe with weights_mxfp4).
//
// Exactness: the weights decode exactly (fp4 · 2^(e − 127) is a bf16), the products of bf16 values are exact in
// fp32, so against the references (gemm_w4a16_cpu: double sums; moe_cpu: moe_bf16_cpu on the decoded experts) only the
// fp32 summation order and the bf16 roundings differ: kTolBf16. The scatter is a permutation: bit for bit.
#include "kernels/gemm_w4a16.h"

#include <algorithm>
#include <string>
#include <vector>

#include "kernel_test_utils.h"
#include "kernels/moe.h"
#include "kernels/mxfp4_tiled.h"
#include "moe_problem.h"

namespace gossamer::kernels {
namespace {

using namespace test;

// The stored (register-order) rows of natural rows [rows, k] with row stride ld: stored column c holds column
// w4a16_source_column(c).
std::vector<uint16_t> register_order(const std::vector<uint16_t>& natural, int rows, int k, int64_t ld) {
  std::vector<uint16_t> stored(natural.size());
  for (int m = 0; m < rows; ++m)
    for (int c = 0; c < k; ++c) stored[m * ld + c] = natural[m * ld + w4a16_source_column(c)];
  return stored;
}

struct W4A16Case {
  int n, k;
  std::vector<int> rows;  // per group (0 allowed); one group with tile lists off = a plain GEMM
  GemmEpilogue epi;
  int e_lo, e_hi;
  bool plain = false, register_order = false;
  int ldc_pad = 0;
};

// The model's gate_up (h in register order, as the MoE stores it) and down, partial row tiles and K blocks, an odd
// number of 256-row weight tiles (a last cluster pair with an inactive rank), N past a 64-row tile, exponents
// from 60 to 200 (the two-multiply path past 128), plain GEMMs; each with every token tile (128, 64, 32 and 16).
const W4A16Case kCases[] = {
    {5760, 2880, {300, 0, 129, 64, 1}, GemmEpilogue::kSwiGlu, 110, 124, false, true},
    {2880, 2880, {200, 7, 256, 0}, GemmEpilogue::kBias, 110, 124},
    {200, 416, {130, 1, 65}, GemmEpilogue::kBias, 116, 124, false, false, 8},
    {352, 224, {3, 500}, GemmEpilogue::kSwiGlu, 116, 124},
    {384, 96, {77, 128}, GemmEpilogue::kSwiGlu, 116, 124, false, true},
    {136, 96, {77, 128}, GemmEpilogue::kBias, 60, 200},
    {640, 2880, {300}, GemmEpilogue::kBias, 112, 124, true, false, 16},
    {8, 32, {5}, GemmEpilogue::kBias, 116, 124, true},
};

TEST(GemmW4A16Kernel, MatchesReference) {
  GOSSAMER_REQUIRE_GPU();
  std::mt19937 rng(47);
  uint64_t seed = 31;
  for (const int tile_rows : {gemm_w4a16_tile_rows(kW4A16NarrowMaxRows + 1), gemm_w4a16_tile_rows(kW4A16NarrowMaxRows),
                              gemm_w4a16_tile_rows(16), gemm_w4a16_tile_rows(1)})
    for (const W4A16Case& c : kCases) {
      const int groups = static_cast<int>(c.rows.size());
      const GroupedTileLists lists(c.rows, tile_rows);
      const int M = lists.M();
      const int64_t lda = (c.k + 7) / 8 * 8 + 8;  // padded rows
      const auto a = register_order(random_bf16(size_t(M) * lda, rng, 1.0f), M, c.k, lda);
      const auto w = random_mxfp4_tiled(groups, c.n, c.k, seed++, c.e_lo, c.e_hi);
      const auto bias = random_bf16(size_t(groups) * c.n, rng, 1.0f);
      const int out_cols = c.epi == GemmEpilogue::kSwiGlu ? c.n / 2 : c.n;
      const int64_t ldc = out_cols + c.ldc_pad;
      DeviceBuffer<uint16_t> da(a), dbias(bias), dout(size_t(M) * ldc);
      DeviceBuffer<uint8_t> dw(w);
      GemmW4A16Params p;
      p.a = da.get();
      p.lda = lda;
      p.b = dw.get();
      p.bias = dbias.get();
      p.out = dout.get();
      p.ldc = ldc;
      p.out_register_order = c.register_order;
      p.M = M;
      p.N = c.n;
      p.K = c.k;
      p.epilogue = c.epi;
      p.tile_rows = tile_rows;
      if (!c.plain) {
        p.grouped = lists.params();
      }
      const std::string shape = std::to_string(groups) + "x[" + std::to_string(c.n) + "x" + std::to_string(c.k) +
                                "] M" + std::to_string(M) + (c.epi == GemmEpilogue::kSwiGlu ? " swiglu" : " bias") +
                                (c.register_order ? " (register order)" : "") + " e[" + std::to_string(c.e_lo) + "," +
                                std::to_string(c.e_hi) + "]" + (c.plain ? " plain" : "") + " tiles of " +
                                std::to_string(tile_rows);
      dout.poison();
      launch_gemm_w4a16(p, nullptr);
      const auto out = dout.download();
      std::vector<uint16_t> host(size_t(M) * ldc, 0xFFFF);
      GemmW4A16Params h = p;
      h.a = a.data();
      h.b = w.data();
      h.bias = bias.data();
      h.out = host.data();
      h.grouped.group_offsets = c.plain ? nullptr : lists.offsets.data();
      gemm_w4a16_cpu(h);
      std::vector<uint16_t> got, want;
      for (int m = 0; m < M; ++m) {
        got.insert(got.end(), out.begin() + m * ldc, out.begin() + m * ldc + out_cols);
        want.insert(want.end(), host.begin() + m * ldc, host.begin() + m * ldc + out_cols);
        for (int64_t j = out_cols; j < ldc; ++j)
          EXPECT_EQ(out[m * ldc + j], 0xFFFF) << shape << ": ldc padding written";
      }
      const double err = rel_error_bf16(got, want);
      report("gemm_w4a16", shape, err, kTolBf16);
      EXPECT_LT(err, kTolBf16) << shape;
    }
}

// The scatter into expert order in register order, bit for bit against its reference: rows skipped (−1), rows no
// input names left untouched (poisoned), padded row strides.
TEST(GemmW4A16Kernel, ActivationsScatterIsThePermutation) {
  GOSSAMER_REQUIRE_GPU();
  std::mt19937 rng(5);
  for (const auto& [rows, K] : {std::pair{37, 2880}, std::pair{5, 64}, std::pair{300, 352}}) {
    const int64_t ldx = K + 8, ldo = K + 16;
    const auto x = random_bf16(size_t(rows) * ldx, rng, 1.0f);
    std::vector<int32_t> dst(size_t(rows) * 4);
    const int out_rows = rows * 4 + 3;
    for (size_t i = 0; i < dst.size(); ++i)
      dst[i] = i % 7 == 3 ? -1 : static_cast<int32_t>((i * 7) % (rows * 4));  // a permutation
    DeviceBuffer<uint16_t> dx(x), dout(size_t(out_rows) * ldo);
    DeviceBuffer<int32_t> ddst(dst);
    dout.poison();
    const std::vector<uint16_t> poisoned = dout.download();
    launch_w4a16_activations(dx.get(), ldx, rows, K, ddst.get(), dout.get(), ldo, nullptr);
    std::vector<uint16_t> host = poisoned;
    w4a16_activations_cpu(x.data(), ldx, rows, K, dst.data(), host.data(), ldo);
    EXPECT_TRUE(dout.download() == host) << rows << " rows, K " << K;
  }
}

// launch_moe with weights_mxfp4 (the W4A16 GEMMs) against moe_cpu: moe_bf16_cpu on the experts decoded to bf16 (the
// same values; bf16 h and y).
TEST(MoeKernel, Mxfp4MatchesReference) {
  GOSSAMER_REQUIRE_GPU();
  std::mt19937 rng(53);
  const MoeProblemCase cases[] = {
      {200, 32, 0, 32, 2880, 2880, true},   {3000, 32, 0, 32, 576, 320, true},   {512, 128, 0, 128, 576, 320, false},
      {3000, 128, 0, 128, 352, 224, false}, {2048, 128, 32, 64, 576, 320, true},
  };
  uint64_t seed = 200;
  for (const MoeProblemCase& c : cases) {
    const int T = c.tokens, H = c.hidden;
    MoeProblem m(c, rng, Mxfp4Experts{seed, 110, 124});
    seed += 2;
    DeviceBuffer<uint8_t> ws(moe_workspace_bytes(T, c.local, H, c.inter));
    DeviceBuffer<uint16_t> dout(size_t(T) * H);
    MoeParams d = m.dev;
    d.out = dout.get();
    const std::string shape = std::to_string(T) + "tok E" + std::to_string(c.experts) + " local[" +
                              std::to_string(c.expert_begin) + "+" + std::to_string(c.local) + "] h" +
                              std::to_string(H) + " i" + std::to_string(c.inter);
    dout.poison();
    ws.poison();
    launch_moe(d, ws.get(), nullptr);
    const auto out = dout.download();
    std::vector<uint16_t> ref(size_t(T) * H);
    MoeParams h = m.host;
    h.out = ref.data();
    moe_cpu(h);  // MXFP4 experts: moe_bf16_cpu on the experts decoded to bf16
    const double err = rel_error_bf16(out, ref);
    report("moe mxfp4 w4a16", shape, err, kTolBf16);
    EXPECT_LT(err, kTolBf16) << shape;
  }
}

}  // namespace
}  // namespace gossamer::kernels
