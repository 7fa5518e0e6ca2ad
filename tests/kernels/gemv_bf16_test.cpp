// bf16 GEMV (router, bf16-mode decode) against its host reference on random inputs, outputs poisoned.
#include "kernels/gemv_bf16.h"

#include <gtest/gtest.h>

#include "kernel_test_utils.h"

namespace gossamer::kernels {
namespace {

using namespace test;

void check(int m, int n, int k, bool with_bias, uint32_t seed) {
  std::mt19937 rng(seed);
  const int64_t ldx = k + 8, ldc = n + 8;  // strided rows: the launcher must honour ldx/ldc
  const auto x = random_bf16(static_cast<size_t>(m * ldx), rng);
  const auto w = random_bf16(static_cast<size_t>(n) * k, rng, 1.0f / std::sqrt(static_cast<float>(k)));
  const auto bias = random_bf16(static_cast<size_t>(n), rng, 0.5f);
  DeviceBuffer<uint16_t> dx(x), dw(w), dbias(bias), dout(static_cast<size_t>(m * ldc));
  dout.poison();
  GemvBf16Params p;
  p.x = dx.get();
  p.ldx = ldx;
  p.w = dw.get();
  p.bias = with_bias ? dbias.get() : nullptr;
  p.out = dout.get();
  p.ldc = ldc;
  p.M = m;
  p.N = n;
  p.K = k;
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
