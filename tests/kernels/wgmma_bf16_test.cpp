// The bf16 wgmma wrappers under the prefill attention (wgmma_bf16_sm90.cuh), one warpgroup against a
// double-precision matmul: S = A·Bᵀ (K-major descriptors) and O = P·V (P through the D → A fragment
// conversion, V through the N-major descriptor with imm-trans-b). When the attention test fails and this
// passes, look at the pipeline (barriers, masks, tile ranges), not the layouts.
#include <gtest/gtest.h>

#include "kernel_test_utils.h"
#include "wgmma_bf16_probe.h"

namespace gossamer::kernels {
namespace {

using namespace test;

TEST(WgmmaBf16, QkAndPvMatchMatmul) {
  GOSSAMER_REQUIRE_GPU();
  std::mt19937 rng(24);
  const auto a = random_bf16(64 * 64, rng), b = random_bf16(128 * 64, rng), v = random_bf16(128 * 64, rng);
  std::vector<float> p(64 * 128);
  std::uniform_real_distribution<float> unit(0.f, 1.f);
  for (auto& x : p) x = unit(rng);  // probabilities, as in attention
  DeviceBuffer<uint16_t> da(a), db(b), dv(v);
  DeviceBuffer<float> dp(p), ds(64 * 128), dout(64 * 64);
  ds.poison();
  dout.poison();
  wgmma_bf16_probe(da.get(), db.get(), dp.get(), dv.get(), ds.get(), dout.get());
  std::vector<float> s_ref(64 * 128), o_ref(64 * 64);
  for (int i = 0; i < 64; ++i) {
    for (int j = 0; j < 128; ++j) {
      double acc = 0;
      for (int k = 0; k < 64; ++k) acc += double(bf16_to_float(a[i * 64 + k])) * bf16_to_float(b[j * 64 + k]);
      s_ref[i * 128 + j] = static_cast<float>(acc);
    }
    for (int n = 0; n < 64; ++n) {
      double acc = 0;  // p rounded to bf16 as the kernel's A fragments hold it
      for (int k = 0; k < 128; ++k)
        acc += double(bf16_to_float(float_to_bf16(p[i * 128 + k]))) * bf16_to_float(v[k * 64 + n]);
      o_ref[i * 64 + n] = static_cast<float>(acc);
    }
  }
  // fp32 accumulation of exact bf16 products: only the summation order differs.
  const double err_s = rel_error(ds.download(), s_ref), err_o = rel_error(dout.download(), o_ref);
  report("wgmma_bf16", "S = A·Bᵀ m64n128k16 ×4", err_s, 1e-5);
  report("wgmma_bf16", "O = P·V m64n64k16 ×8 (trans-b)", err_o, 1e-5);
  EXPECT_LT(err_s, 1e-5);
  EXPECT_LT(err_o, 1e-5);
}

}  // namespace
}  // namespace gossamer::kernels
