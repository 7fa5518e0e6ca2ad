// MXFP4 decode GEMV (dense, SwiGLU, grouped by expert with EP slices) against gemv_mxfp4_cpu, the GPU
// relayout against the CPU one, and the MoE decode block with MXFP4 experts against moe_decode_cpu.
//
// Error bound: ‖out − ref‖/‖ref‖ < kTolBf16 (1e-2). Both sides compute with the exact fp4 values and exact
// power-of-two block scales in fp32 and round once to bf16; they differ only in fp32 summation order and
// in the f16 staging of x (exact for elements ≥ 2^-28 of their 128-column chunk's largest), so the
// measured error is the bf16 rounding (≈2e-3 rms). Every launch shape (GemvMxfp4Shape) is checked against
// the reference with that bound; shapes with the same warps and cluster (the ring depth aside) sum in the
// same order and must agree bit for bit.
#include "kernels/gemv_mxfp4.h"

#include <algorithm>
#include <iterator>
#include <string>

#include "kernel_test_utils.h"
#include "kernels/moe.h"
#include "kernels/mxfp4_convert.h"
#include "kernels/mxfp4_tiled.h"

namespace gossamer::kernels {
namespace {

using namespace test;

struct Mx {
  std::vector<uint8_t> blocks, scales, tiled;  // checkpoint [G, N, K/32, 16] / [G, N, K/32]; tiled
};
// Random codes; E8M0 exponents in [e_lo, e_hi] (the checkpoints' experts use ≈ 110..127).
Mx random_mx(int groups, int n, int k, std::mt19937& rng, int e_lo = 116, int e_hi = 124) {
  Mx m{std::vector<uint8_t>(size_t(groups) * n * k / 2), std::vector<uint8_t>(size_t(groups) * n * k / 32), {}};
  for (auto& b : m.blocks) b = static_cast<uint8_t>(rng());
  std::uniform_int_distribution<int> e(e_lo, e_hi);
  for (auto& s : m.scales) s = static_cast<uint8_t>(e(rng));
  m.tiled.resize(size_t(groups) * mxfp4_tiled_group_bytes(n, k));
  mxfp4_to_tiled_cpu(m.blocks.data(), m.scales.data(), m.tiled.data(), groups, n, k);
  return m;
}

// A dense (ungrouped) GEMV: x [m, ldx] bf16, w [n, k] tiled MXFP4 (one group), bias [n] bf16 or null,
// out [m, ldc] bf16.
GemvMxfp4Params dense_gemv(const uint16_t* x, int ldx, const uint8_t* w, const uint16_t* bias, uint16_t* out, int ldc,
                           int m, int n, int k, GemmEpilogue epilogue) {
  GemvMxfp4Params p;
  p.x = x;
  p.ldx = ldx;
  p.w = w;
  p.bias = bias;
  p.out = out;
  p.ldc = ldc;
  p.M = m;
  p.N = n;
  p.K = k;
  p.epilogue = epilogue;
  return p;
}

// gemv_mxfp4_cpu of the dense launch `p` on host copies of its operands (x, w's tiled bytes, bias or null):
// out [out_elements] bf16, any element it does not write left 0xFFFF.
std::vector<uint16_t> dense_reference(GemvMxfp4Params p, const std::vector<uint16_t>& x, const Mx& w,
                                      const uint16_t* bias, size_t out_elements) {
  std::vector<uint16_t> ref(out_elements, 0xFFFF);
  p.x = x.data();
  p.w = w.tiled.data();
  p.bias = bias;
  p.out = ref.data();
  gemv_mxfp4_cpu(p);
  return ref;
}

std::vector<float> block(const std::vector<uint16_t>& v, int rows, int cols, int64_t ld) {
  std::vector<float> f;
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) f.push_back(bf16_to_float(v[r * ld + c]));
  return f;
}
const char* name(GemvMxfp4Shape s) {
  return gemv_mxfp4_shape_name(s);
}

// The shape whose reduction order `s` shares (its ring depth dropped), or s itself.
GemvMxfp4Shape same_order_as(GemvMxfp4Shape s) {
  if (s == GemvMxfp4Shape::kWarps4Stages4) return GemvMxfp4Shape::kWarps4;
  return s;
}

bool padding_untouched(const std::vector<uint16_t>& v, int rows, int cols, int64_t ld) {
  for (int r = 0; r < rows; ++r)
    for (int64_t c = cols; c < ld; ++c)
      if (v[r * ld + c] != 0xFFFF) return false;
  return true;
}

TEST(Mxfp4TiledKernel, MatchesCpuRelayout) {
  GOSSAMER_REQUIRE_GPU();
  std::mt19937 rng(30);
  for (const auto& [groups, n, k] : {std::tuple{2, 136, 416}, std::tuple{1, 5760, 2880}, std::tuple{3, 8, 32}}) {
    const Mx m = random_mx(groups, n, k, rng, 0, 255);
    DeviceBuffer<uint8_t> db(m.blocks), ds(m.scales), dt(m.tiled.size());
    dt.poison();
    launch_mxfp4_to_tiled(db.get(), ds.get(), dt.get(), groups, n, k, nullptr);
    EXPECT_TRUE(dt.download() == m.tiled) << groups << "×" << n << "×" << k;
  }
}

// The random weights' conversion (tiled MXFP4 → tile-major FP8 + 128×128 scales) is bit-identical to the
// checkpoint's (mxfp4_to_fp8 on the checkpoint layout, then fp8_to_tiled), wide exponent spans included.
TEST(Mxfp4TiledKernel, ToFp8MatchesCheckpointConversion) {
  GOSSAMER_REQUIRE_GPU();
  std::mt19937 rng(35);
  for (const auto& [groups, n, k, lo, hi] :
       {std::tuple{2, 136, 416, 116, 124}, std::tuple{1, 5760, 2880, 110, 127}, std::tuple{3, 200, 96, 60, 200}}) {
    const Mx m = random_mx(groups, n, k, rng, lo, hi);
    std::vector<uint8_t> fp8(size_t(groups) * n * k);
    std::vector<float> scales(size_t(groups) * ((n + 127) / 128) * ((k + 127) / 128));
    Mxfp4ToFp8Params c;
    c.blocks = m.blocks.data();
    c.scales = m.scales.data();
    c.out = fp8.data();
    c.out_scales = scales.data();
    c.num_experts = groups;
    c.rows = n;
    c.cols = k;
    mxfp4_to_fp8_cpu(c);
    const auto want = tiled(fp8, groups, n, k);
    DeviceBuffer<uint8_t> dsrc(m.tiled), dout(want.size());
    DeviceBuffer<float> dscales(scales.size());
    dout.poison();
    dscales.poison();
    launch_mxfp4_tiled_to_fp8(dsrc.get(), dout.get(), dscales.get(), groups, n, k, nullptr);
    EXPECT_TRUE(dout.download() == want) << groups << "×" << n << "×" << k << " e in [" << lo << ", " << hi << "]";
    EXPECT_EQ(dscales.download(), scales) << groups << "×" << n << "×" << k;
  }
}

struct DenseShape {
  const char* name;
  int n, k;
  GemmEpilogue epi;
  std::vector<int> ms;
  bool bias;
  int ldx_pad, ldc_pad;
  int e_lo = 116, e_hi = 124;
};

// x staged in shared memory (GemvMxfp4Params::x_shared), copied before or after the PDL wait (before only where
// every pair reads x row 0; the launch decides): the same bits as `out`, the per-step loads' result (which it also
// is where the shape cannot spare the bytes). p is a single-row launch writing into dout.
void expect_x_shared_same_bits(GemvMxfp4Params p, DeviceBuffer<uint16_t>& dout, const std::vector<uint16_t>& out,
                               const std::string& shape) {
  for (const bool early : {false, true}) {
    dout.poison();
    p.x_shared = true;
    p.x_from_earlier_kernel = early;
    launch_gemv_mxfp4(p, nullptr);
    EXPECT_EQ(dout.download(), out) << shape << " x shared" << (early ? " before the wait" : "");
  }
}

TEST(GemvMxfp4Kernel, MatchesReference) {
  GOSSAMER_REQUIRE_GPU();
  std::mt19937 rng(31);
  const std::vector<int> all = {1, 2, 3, 4, 5, 6, 7, 8};
  const DenseShape shapes[] = {
      {"gate_up", 5760, 2880, GemmEpilogue::kSwiGlu, all, true, 0, 0},
      {"down", 2880, 2880, GemmEpilogue::kBias, all, true, 0, 0},
      {"n8k32", 8, 32, GemmEpilogue::kBias, {1, 8}, true, 8, 8},
      {"n136k416", 136, 416, GemmEpilogue::kBias, all, true, 16, 8},  // partial row and column tiles
      {"n24k96", 24, 96, GemmEpilogue::kSwiGlu, {1, 3, 8}, true, 0, 4},
      {"k1056", 200, 1056, GemmEpilogue::kBias, {2, 7}, false, 24, 0},
      {"cluster2", 1024, 4096, GemmEpilogue::kBias, {1, 8}, true, 0, 0},
      {"cluster4", 512, 8192, GemmEpilogue::kSwiGlu, {1, 5}, true, 0, 0},
      {"cluster8", 256, 16384, GemmEpilogue::kBias, {1, 8}, true, 0, 0},
      {"wide", 16384, 256, GemmEpilogue::kBias, {1, 8}, true, 0, 0},
      {"scale spread", 264, 2880, GemmEpilogue::kBias, {1, 4}, true, 0, 0, 90, 160},   // 70 binades in a row
      {"extreme scales", 136, 1056, GemmEpilogue::kBias, {1, 8}, true, 0, 0, 0, 220},  // E8M0 codes 0..220
  };
  for (const auto& s : shapes) {
    const bool swiglu = s.epi == GemmEpilogue::kSwiGlu;
    const int out_cols = swiglu ? s.n / 2 : s.n;
    const int64_t ldx = s.k + s.ldx_pad, ldc = out_cols + s.ldc_pad;
    const Mx w = random_mx(1, s.n, s.k, rng, s.e_lo, s.e_hi);
    auto bias = random_bf16(s.n, rng, 1.0f);
    DeviceBuffer<uint8_t> dw(w.tiled);
    DeviceBuffer<uint16_t> dbias(bias);
    for (const int m : s.ms) {
      auto x = random_bf16(size_t(m) * ldx, rng, 1.0f);
      for (int r = 0; r < m; ++r) std::fill(x.begin() + r * ldx + s.k, x.begin() + (r + 1) * ldx, 0xFFFF);  // NaN
      DeviceBuffer<uint16_t> dx(x), dout(size_t(m) * ldc);
      GemvMxfp4Params p =
          dense_gemv(dx.get(), ldx, dw.get(), s.bias ? dbias.get() : nullptr, dout.get(), ldc, m, s.n, s.k, s.epi);
      const auto ref = dense_reference(p, x, w, s.bias ? bias.data() : nullptr, dout.size());
      for (const GemvMxfp4Shape launch : kGemvMxfp4Shapes) {
        for (const bool pdl : {true, false}) {
          for (const bool single_row : {false, true}) {  // GemvMxfp4Params::single_row: M = 1 only
            if (single_row && m != 1) continue;
            dout.poison();
            p.programmatic_launch = pdl;
            p.shape = launch;
            p.single_row = single_row;
            launch_gemv_mxfp4(p, nullptr);
            const auto out = dout.download();
            const double err = rel_error(block(out, m, out_cols, ldc), block(ref, m, out_cols, ldc));
            const std::string shape = std::string(s.name) + " M=" + std::to_string(m) + " N=" + std::to_string(s.n) +
                                      " K=" + std::to_string(s.k) + (swiglu ? " swiglu" : "") +
                                      (s.bias ? " bias" : "") + (pdl ? "" : " no-pdl") +
                                      (single_row ? " single row" : "") + " [" + name(launch) + "]";
            report("gemv_mxfp4", shape, err, kTolBf16);
            EXPECT_LT(err, kTolBf16) << shape;
            EXPECT_TRUE(padding_untouched(out, m, out_cols, ldc)) << shape << ": wrote past the output columns";
            if (single_row) expect_x_shared_same_bits(p, dout, out, shape);
          }
        }
      }
    }
  }
}

// Every launch shape the bench sweeps (the rule's cluster sizes, GemvMxfp4Params::cluster, and every
// GemvMxfp4Shape) gives the reference's result, at a small shape and at the batch-1 / batch-8 expert shapes
// of `gemv-tune` (one token's 4 experts as one matrix); shapes sharing a reduction order agree bit for bit.
TEST(GemvMxfp4Kernel, EveryLaunchShapeMatchesReference) {
  GOSSAMER_REQUIRE_GPU();
  std::mt19937 rng(37);
  struct Case {
    int n, k, m;
    GemmEpilogue epi;
  };
  for (const Case& c : {Case{1000, 2880, 3, GemmEpilogue::kBias}, Case{4 * 5760, 2880, 1, GemmEpilogue::kSwiGlu},
                        Case{4 * 2880, 2880, 8, GemmEpilogue::kBias}, Case{4 * 2880, 2880, 1, GemmEpilogue::kBias}}) {
    const int n = c.n, k = c.k, m = c.m;
    const bool swiglu = c.epi == GemmEpilogue::kSwiGlu;
    const int out_cols = swiglu ? n / 2 : n;
    const Mx w = random_mx(1, n, k, rng);
    auto bias = random_bf16(n, rng, 1.0f);
    auto x = random_bf16(size_t(m) * k, rng, 1.0f);
    DeviceBuffer<uint8_t> dw(w.tiled);
    DeviceBuffer<uint16_t> dbias(bias), dx(x), dout(size_t(m) * out_cols);
    GemvMxfp4Params p = dense_gemv(dx.get(), k, dw.get(), dbias.get(), dout.get(), out_cols, m, n, k, c.epi);
    const auto ref = dense_reference(p, x, w, bias.data(), dout.size());
    const std::string problem = std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) + " ";
    auto check = [&](const std::string& shape) {
      const auto out = dout.download();
      const double err = rel_error(block(out, m, out_cols, out_cols), block(ref, m, out_cols, out_cols));
      report("gemv_mxfp4 launch shape", problem + shape, err, kTolBf16);
      EXPECT_LT(err, kTolBf16) << problem << shape;
      return out;
    };
    for (const int cluster : {1, 2, 4, 8}) {
      dout.poison();
      p.cluster = cluster;
      launch_gemv_mxfp4(p, nullptr);
      check("rule cluster=" + std::to_string(cluster));
    }
    p.cluster = 0;
    std::vector<std::vector<uint16_t>> outs;
    for (const GemvMxfp4Shape launch : kGemvMxfp4Shapes) {
      dout.poison();
      p.shape = launch;
      launch_gemv_mxfp4(p, nullptr);
      outs.push_back(check(name(launch)));
      const GemvMxfp4Shape twin = same_order_as(launch);
      if (twin != launch) {
        EXPECT_TRUE(outs.back() == outs[static_cast<size_t>(twin)])
            << problem << name(launch) << " differs from " << name(twin) << " (same summation order)";
      }
    }
    p.shape = GemvMxfp4Shape::kRule;
  }
}

// Rows of very different magnitudes and chunks of very different magnitudes inside a row.
TEST(GemvMxfp4Kernel, ActivationRange) {
  GOSSAMER_REQUIRE_GPU();
  std::mt19937 rng(32);
  const int M = 8, N = 264, K = 2880;
  const float row_scale[M] = {1e-30f, 1e-12f, 1e-5f, 1.0f, 300.0f, 1e5f, 1e12f, 1e30f};
  std::vector<uint16_t> x(size_t(M) * K);
  std::normal_distribution<float> nd(0.f, 1.f);
  for (int m = 0; m < M; ++m)
    for (int k = 0; k < K; ++k)
      x[size_t(m) * K + k] = float_to_bf16(nd(rng) * row_scale[m] * (m == 3 ? ((k / 128) % 2 ? 1e4f : 1e-4f) : 1.f));
  const Mx w = random_mx(1, N, K, rng);
  DeviceBuffer<uint16_t> dx(x), dout(size_t(M) * N);
  DeviceBuffer<uint8_t> dw(w.tiled);
  GemvMxfp4Params p = dense_gemv(dx.get(), K, dw.get(), nullptr, dout.get(), N, M, N, K, GemmEpilogue::kBias);
  const auto ref = dense_reference(p, x, w, nullptr, size_t(M) * N);
  for (const GemvMxfp4Shape launch : kGemvMxfp4Shapes) {
    dout.poison();
    p.shape = launch;
    launch_gemv_mxfp4(p, nullptr);
    const auto out = dout.download();
    for (int m = 0; m < M; ++m) {
      const std::vector<uint16_t> o(out.begin() + m * N, out.begin() + (m + 1) * N);
      const std::vector<uint16_t> e(ref.begin() + m * N, ref.begin() + (m + 1) * N);
      const double err = rel_error_bf16(o, e);
      const std::string shape = "range row " + std::to_string(m) + " [" + name(launch) + "]";
      report("gemv_mxfp4", shape, err, kTolBf16);
      EXPECT_LT(err, kTolBf16) << shape;
    }
  }
}

struct GroupedCase {
  const char* name;
  std::vector<int32_t> ids;
  int divisor;
  int expert_begin, local;
  int n, k;
  GemmEpilogue epi;
};

TEST(GemvMxfp4Kernel, GroupedMatchesReference) {
  GOSSAMER_REQUIRE_GPU();
  std::mt19937 rng(33);
  std::vector<int32_t> same32(32, 3), mixed32(32), spread12 = {5, 1, 9, 2, 1, 5, 7, 0, 9, 1, 6, 3};
  for (int i = 0; i < 32; ++i) mixed32[i] = static_cast<int32_t>((i * 7 + i / 5) % 12);
  const GroupedCase cases[] = {
      {"T1 distinct", {4, 0, 7, 2}, 4, 0, 8, 576, 320, GemmEpilogue::kSwiGlu},
      {"4 pairs, an expert thrice", {3, 6, 3, 3}, 1, 0, 8, 2880, 2880, GemmEpilogue::kBias},
      {"T1 local [2, 5)", {4, 0, 2, 6}, 4, 2, 3, 576, 2880, GemmEpilogue::kSwiGlu},
      {"32 pairs one expert (4 slots of 8)", same32, 1, 0, 8, 320, 576, GemmEpilogue::kBias},
      {"32 pairs, local [4, 8)", mixed32, 1, 4, 4, 264, 288, GemmEpilogue::kBias},
      {"T3 shared experts", spread12, 4, 0, 10, 512, 2880, GemmEpilogue::kSwiGlu},
      {"T3 local [5, 10)", spread12, 4, 5, 5, 2880, 512, GemmEpilogue::kBias},
      {"none local", {0, 1, 2, 3}, 4, 4, 4, 128, 256, GemmEpilogue::kBias},
  };
  for (const auto& c : cases) {
    for (const GemvMxfp4Shape launch : kGemvMxfp4Shapes) {
      for (const int variant : {0, 1, 2, 3}) {
        // pair_row written, or topk_from_earlier_kernel (no pair_row); each with single_row (≤ 4 pairs only).
        const bool earlier = variant % 2 == 1, single_row = variant >= 2;
        const int pairs = static_cast<int>(c.ids.size());
        if (single_row && pairs > kMoeTopK) continue;
        const bool swiglu = c.epi == GemmEpilogue::kSwiGlu;
        const int out_cols = swiglu ? c.n / 2 : c.n;
        const int x_rows = (pairs + c.divisor - 1) / c.divisor;
        auto x = random_bf16(size_t(x_rows) * c.k, rng, 1.0f);
        const Mx w = random_mx(c.local, c.n, c.k, rng);
        auto bias = random_bf16(size_t(c.local) * c.n, rng, 1.0f);
        DeviceBuffer<uint16_t> dx(x), dbias(bias), dout(size_t(pairs) * out_cols);
        DeviceBuffer<uint8_t> dw(w.tiled);
        DeviceBuffer<int32_t> dids(c.ids), dpair_row(pairs);
        dout.poison();
        dpair_row.poison();
        GemvMxfp4Params p;
        p.x = dx.get();
        p.ldx = c.k;
        p.w = dw.get();
        p.bias = dbias.get();
        p.out = dout.get();
        p.ldc = out_cols;
        p.N = c.n;
        p.K = c.k;
        p.epilogue = c.epi;
        p.topk_ids = dids.get();
        p.num_pairs = pairs;
        p.expert_begin = c.expert_begin;
        p.num_local_experts = c.local;
        p.x_pair_divisor = c.divisor;
        p.pair_row = earlier ? nullptr : dpair_row.get();
        p.topk_from_earlier_kernel = earlier;
        p.shape = launch;
        p.single_row = single_row;
        launch_gemv_mxfp4(p, nullptr);
        std::vector<uint16_t> ref(dout.size(), 0xFFFF);
        std::vector<int32_t> ref_pair_row(pairs);
        GemvMxfp4Params r = p;
        r.x = x.data();
        r.w = w.tiled.data();
        r.bias = bias.data();
        r.out = ref.data();
        r.topk_ids = c.ids.data();
        r.pair_row = ref_pair_row.data();
        r.topk_from_earlier_kernel = false;
        gemv_mxfp4_cpu(r);
        const auto out = dout.download();
        const std::string shape = std::string(c.name) + (earlier ? " (topk from earlier kernel)" : "") +
                                  (single_row ? " single row" : "") + " [" + name(launch) + "]";
        if (!earlier) {
          EXPECT_EQ(dpair_row.download(), ref_pair_row) << shape;
        }
        // Rows of pairs routed elsewhere stay poisoned in both.
        EXPECT_TRUE(std::equal(out.begin(), out.end(), ref.begin(),
                               [](uint16_t a, uint16_t b) { return (a == 0xFFFF) == (b == 0xFFFF); }))
            << shape << ": written rows differ";
        std::vector<float> o, e;
        for (size_t i = 0; i < out.size(); ++i) {
          if (ref[i] == 0xFFFF) continue;
          o.push_back(bf16_to_float(out[i]));
          e.push_back(bf16_to_float(ref[i]));
        }
        const double err = o.empty() ? 0.0 : rel_error(o, e);
        report("gemv_mxfp4 grouped", shape, err, kTolBf16);
        EXPECT_LT(err, kTolBf16) << shape;
        if (single_row) expect_x_shared_same_bits(p, dout, out, shape);
      }
    }
  }
}

// ---- MoE decode with MXFP4 experts (launch_moe_decode, weights_mxfp4) ----

struct MoeCase {
  int tokens, experts, expert_begin, local, hidden, inter;
  bool residual;
  int distinct_logit_rows;  // 0: every token its own logits; d > 0: token t uses logits row t % d
};

TEST(MoeDecodeMxfp4Kernel, MatchesReferenceAndGraphReplay) {
  GOSSAMER_REQUIRE_GPU();
  std::mt19937 rng(34);
  const MoeCase cases[] = {
      {8, 32, 0, 32, 576, 320, true, 1},     {8, 32, 0, 32, 576, 320, false, 3},   {4, 32, 8, 8, 576, 320, true, 0},
      {3, 32, 28, 4, 576, 320, true, 0},     {8, 128, 64, 32, 512, 256, false, 0}, {1, 32, 0, 32, 2880, 2880, true, 0},
      {1, 128, 0, 128, 2880, 2880, true, 0}, {4, 32, 0, 32, 2880, 2880, true, 0},  {2, 32, 16, 16, 576, 320, true, 0},
  };
  for (const auto& c : cases) {
    const int rows = c.distinct_logit_rows > 0 ? c.distinct_logit_rows : c.tokens;
    const auto base = random_bf16(size_t(rows) * c.experts, rng, 2.0f);
    std::vector<uint16_t> logits(size_t(c.tokens) * c.experts);
    for (int t = 0; t < c.tokens; ++t)
      std::copy_n(base.begin() + size_t(t % rows) * c.experts, c.experts, logits.begin() + size_t(t) * c.experts);
    const auto x = random_bf16(size_t(c.tokens) * c.hidden, rng, 1.0f);
    const auto res = random_bf16(size_t(c.tokens) * c.hidden, rng, 1.0f);
    const auto b1 = random_bf16(size_t(c.local) * 2 * c.inter, rng, 0.5f);
    const auto b2 = random_bf16(size_t(c.local) * c.hidden, rng, 0.5f);
    const Mx w1 = random_mx(c.local, 2 * c.inter, c.hidden, rng, 112, 118);
    const Mx w2 = random_mx(c.local, c.hidden, c.inter, rng, 112, 118);
    DeviceBuffer<uint16_t> dx(x), dl(logits), dres(res), db1(b1), db2(b2), dout(size_t(c.tokens) * c.hidden);
    DeviceBuffer<uint8_t> dw1(w1.tiled), dw2(w2.tiled), ws(moe_decode_workspace_bytes(c.tokens, c.hidden, c.inter));
    MoeParams h;
    h.num_tokens = c.tokens;
    h.num_experts = c.experts;
    h.expert_begin = c.expert_begin;
    h.num_local_experts = c.local;
    h.hidden = c.hidden;
    h.inter = c.inter;
    h.weights_mxfp4 = true;
    MoeParams d = h;
    h.x = x.data(), h.logits = logits.data(), h.residual = c.residual ? res.data() : nullptr;
    h.w1 = w1.tiled.data(), h.b1 = b1.data(), h.w2 = w2.tiled.data(), h.b2 = b2.data();
    d.x = dx.get(), d.logits = dl.get(), d.residual = c.residual ? dres.get() : nullptr;
    d.w1 = dw1.get(), d.b1 = db1.get(), d.w2 = dw2.get(), d.b2 = db2.get(), d.out = dout.get();
    std::vector<uint16_t> ref(size_t(c.tokens) * c.hidden);
    h.out = ref.data();
    moe_decode_cpu(h);
    constexpr int kShapes = static_cast<int>(std::size(kGemvMxfp4Shapes));
    for (int variant = 0; variant <= kShapes; ++variant) {  // every launch shape, then the rule single-row
      const bool single_row = variant == kShapes;
      if (single_row && c.tokens != 1) continue;
      const GemvMxfp4Shape launch = single_row ? GemvMxfp4Shape::kRule : kGemvMxfp4Shapes[variant];
      d.gemv_mxfp4_shape = launch;
      d.gemv_single_row = single_row;
      dout.poison();
      ws.poison();
      launch_moe_decode(d, ws.get(), nullptr);
      const auto out = dout.download();
      const std::string shape = std::to_string(c.tokens) + "tok E" + std::to_string(c.experts) + " local[" +
                                std::to_string(c.expert_begin) + "+" + std::to_string(c.local) + "] h" +
                                std::to_string(c.hidden) + " i" + std::to_string(c.inter) +
                                (c.distinct_logit_rows ? " shared-experts" : "") + (c.residual ? " +res" : "") +
                                (d.gemv_single_row ? " single row" : "") + " [" + name(launch) + "]";
      const double err = rel_error_bf16(out, ref);
      report("moe_decode mxfp4", shape, err, kTolBf16);
      EXPECT_LT(err, kTolBf16) << shape;
      if (single_row) {  // MoeParams::gemv_x_shared off (on by default): the same bits
        dout.poison();
        d.gemv_x_shared = false;
        launch_moe_decode(d, ws.get(), nullptr);
        d.gemv_x_shared = true;
        EXPECT_EQ(dout.download(), out) << shape << " x per K step";
      }
      // Captured into a CUDA graph and replayed twice: bit-identical to the stream launch.
      cudaStream_t stream;
      ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
      cudaGraph_t graph;
      cudaGraphExec_t exec;
      ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), cudaSuccess);
      launch_moe_decode(d, ws.get(), stream);
      ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
      ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
      for (int i = 0; i < 2; ++i) {
        dout.poison();
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // the poison (legacy stream) before the replay
        ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
        ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
        EXPECT_EQ(dout.download(), out) << shape << ": graph replay " << i;
      }
      cudaGraphExecDestroy(exec);
      cudaGraphDestroy(graph);
      cudaStreamDestroy(stream);
    }
  }
}

}  // namespace
}  // namespace gossamer::kernels
