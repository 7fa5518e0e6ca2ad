// bf16 GEMV (router, bf16-mode decode) against its host reference on random inputs, outputs poisoned.
#include "kernels/gemv_bf16.h"

#include <gtest/gtest.h>

#include "kernel_test_utils.h"
#include "kernels/rmsnorm.h"

namespace gossamer::kernels {
namespace {

using namespace test;

GemvBf16Params gemv_params(const uint16_t* x, int64_t ldx, const uint16_t* w, const uint16_t* bias, uint16_t* out,
                           int64_t ldc, int m, int n, int k) {
  GemvBf16Params p;
  p.x = x;
  p.ldx = ldx;
  p.w = w;
  p.bias = bias;
  p.out = out;
  p.ldc = ldc;
  p.M = m;
  p.N = n;
  p.K = k;
  return p;
}

void check(int m, int n, int k, bool with_bias, uint32_t seed) {
  std::mt19937 rng(seed);
  const int64_t ldx = k + 8, ldc = n + 8;  // strided rows: the launcher must honour ldx/ldc
  const auto x = random_bf16(static_cast<size_t>(m * ldx), rng);
  const auto w = random_bf16(static_cast<size_t>(n) * k, rng, 1.0f / std::sqrt(static_cast<float>(k)));
  const auto bias = random_bf16(static_cast<size_t>(n), rng, 0.5f);
  DeviceBuffer<uint16_t> dx(x), dw(w), dbias(bias), dout(static_cast<size_t>(m * ldc));
  dout.poison();
  GemvBf16Params p = gemv_params(dx.get(), ldx, dw.get(), with_bias ? dbias.get() : nullptr, dout.get(), ldc, m, n, k);
  launch_gemv_bf16(p, nullptr);
  const auto got = dout.download();
  std::vector<uint16_t> ref(got.size(), 0);
  GemvBf16Params h = p;
  h.x = x.data();
  h.w = w.data();
  h.bias = with_bias ? bias.data() : nullptr;
  h.out = ref.data();
  gemv_bf16_cpu(h);
  std::vector<uint16_t> got_rows, ref_rows;  // only the written columns of each row
  for (int r = 0; r < m; ++r) {
    got_rows.insert(got_rows.end(), got.begin() + r * ldc, got.begin() + r * ldc + n);
    ref_rows.insert(ref_rows.end(), ref.begin() + r * ldc, ref.begin() + r * ldc + n);
  }
  const double err = rel_error_bf16(got_rows, ref_rows);
  const std::string shape = std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
  report("gemv_bf16", shape, err, kTolBf16);
  EXPECT_LE(err, kTolBf16) << shape;
}

TEST(GemvBf16Test, MatchesReferenceAcrossShapes) {
  GOSSAMER_REQUIRE_GPU();
  uint32_t seed = 1;
  for (int m : {1, 2, 3, 4, 5, 8}) {
    for (auto [n, k] : {std::pair{32, 2880}, std::pair{128, 2880}, std::pair{8, 8}, std::pair{136, 272},
                        std::pair{5120, 2880}, std::pair{1032, 64}}) {
      check(m, n, k, (seed % 2) == 0, seed);
      ++seed;
    }
  }
  // Chunks of 8 rows (the router at decode batches), with a partial last chunk.
  for (int m : {9, 16, 61, 256, 1024}) {
    for (auto [n, k] : {std::pair{32, 2880}, std::pair{128, 2880}, std::pair{136, 272}}) {
      check(m, n, k, (seed % 2) == 0, seed);
      ++seed;
    }
  }
}

// The norm prologue (GemvBf16Params::norm_prologue: the decode MLP norm and router in one launch) is launch_rmsnorm
// then the GEMV, bit for bit: the logits, the normed rows and the residual's sums CTA 0 writes (the input residual read
// only), with and without the residual, M = 1, 2, the router's column counts; and near the CPU reference.
TEST(GemvBf16Test, NormPrologueIsNormThenGemv) {
  GOSSAMER_REQUIRE_GPU();
  std::mt19937 rng(41);
  const int k = 2880;
  const auto norm_w = random_bf16(k, rng, 1.0f);
  DeviceBuffer<uint16_t> dnorm_w(norm_w);
  for (const int n : {32, 128}) {
    const auto w = random_bf16(static_cast<size_t>(n) * k, rng, 1.0f / std::sqrt(static_cast<float>(k)));
    const auto bias = random_bf16(static_cast<size_t>(n), rng, 0.5f);
    DeviceBuffer<uint16_t> dw(w), dbias(bias);
    for (const int m : {1, 2}) {
      for (const bool with_residual : {false, true}) {
        const auto x = random_bf16(static_cast<size_t>(m) * k, rng, 1.0f);
        const auto residual = random_bf16(static_cast<size_t>(m) * k, rng, 4.0f);
        DeviceBuffer<uint16_t> dx(x), dres0(residual), dres1(residual), dres1_out(residual.size());
        DeviceBuffer<uint16_t> dnormed0(x.size()), dnormed1(x.size()), dout0(size_t(m) * n), dout1(size_t(m) * n);
        for (auto* b : {&dres1_out, &dnormed1, &dout0, &dout1}) b->poison();
        RmsNormParams norm;
        norm.x = dx.get();
        norm.weight = dnorm_w.get();
        norm.num_tokens = m;
        norm.hidden = k;
        RmsNormParams separate = norm;
        separate.residual = with_residual ? dres0.get() : nullptr;
        separate.out = dnormed0.get();
        launch_rmsnorm(separate, nullptr);
        GemvBf16Params p = gemv_params(dnormed0.get(), k, dw.get(), dbias.get(), dout0.get(), n, m, n, k);
        launch_gemv_bf16(p, nullptr);
        GemvBf16Params fused = p;
        fused.x = nullptr;
        fused.ldx = 0;
        fused.out = dout1.get();
        fused.norm_prologue = true;
        fused.norm = norm;
        fused.norm.residual = with_residual ? dres1.get() : nullptr;
        fused.norm.residual_out = with_residual ? dres1_out.get() : nullptr;
        fused.norm.out = dnormed1.get();
        launch_gemv_bf16(fused, nullptr);
        const std::string shape =
            "M=" + std::to_string(m) + " N=" + std::to_string(n) + (with_residual ? " + residual" : "");
        EXPECT_EQ(dout1.download(), dout0.download()) << shape << ": the logits";
        EXPECT_EQ(dnormed1.download(), dnormed0.download()) << shape << ": the normed rows CTA 0 writes";
        if (with_residual) {
          EXPECT_EQ(dres1_out.download(), dres0.download()) << shape << ": the residual sums";
          EXPECT_EQ(dres1.download(), residual) << shape << ": the input residual is read only";
        }
        std::vector<uint16_t> res_ref = residual, res_ref_out(residual.size()), normed_ref(x.size()),
                              ref(size_t(m) * n);
        GemvBf16Params h = fused;
        h.w = w.data();
        h.bias = bias.data();
        h.out = ref.data();
        h.norm.x = x.data();
        h.norm.weight = norm_w.data();
        h.norm.residual = with_residual ? res_ref.data() : nullptr;
        h.norm.residual_out = with_residual ? res_ref_out.data() : nullptr;
        h.norm.out = normed_ref.data();
        gemv_bf16_cpu(h);
        const double err = rel_error_bf16(dout1.download(), ref);
        report("gemv_bf16", "norm prologue " + shape, err, kTolBf16);
        EXPECT_LE(err, kTolBf16) << shape;
      }
    }
  }
}

TEST(GemvBf16Test, RejectsBadShapes) {
  GOSSAMER_REQUIRE_GPU();
  GemvBf16Params p;
  p.M = kGemvBf16MaxRows + 1;
  p.N = 8;
  p.K = 16;
  p.ldx = 16;
  EXPECT_THROW(launch_gemv_bf16(p, nullptr), Error);
  p.M = 1;
  p.K = 12;
  EXPECT_THROW(launch_gemv_bf16(p, nullptr), Error);
}

}  // namespace
}  // namespace gossamer::kernels
