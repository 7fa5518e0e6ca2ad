// Weight-only FP8 decode GEMV (dense, SwiGLU, grouped by expert) and the MoE decode block against CPU
// references; PDL chains and CUDA-graph capture.
#include "kernels/gemv_fp8.h"

#include <algorithm>
#include <numeric>
#include <tuple>

#include "gpt_oss_cases.h"
#include "kernel_test_utils.h"
#include "kernels/fp8_tiled.h"
#include "kernels/moe.h"
#include "kernels/rmsnorm.h"
#include "kernels/rope.h"
#include "moe_problem.h"

namespace gossamer::kernels {
namespace {

using namespace test;

// MoE decode against moe_cpu, which quantizes x and the SwiGLU output to fp8 e4m3 (≈2.5% rms relative
// error each, in series) where the decode path keeps them bf16: a sanity bound on the semantics; the
// tight check is against the reference with the decode path's own rounding points (kTolBf16).
constexpr double kTolVsFp8Activations = 8e-2;

// Rows [0, rows) × columns [0, cols) of a row-major [·, ld] bf16 matrix, as floats.
std::vector<float> block(const std::vector<uint16_t>& v, int rows, int cols, int64_t ld) {
  std::vector<float> f;
  f.reserve(size_t(rows) * cols);
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) f.push_back(bf16_to_float(v[r * ld + c]));
  }
  return f;
}

// True when every element outside [0, cols) of rows [0, rows) (the padding up to ld) is still poisoned.
bool padding_untouched(const std::vector<uint16_t>& v, int rows, int cols, int64_t ld) {
  for (int r = 0; r < rows; ++r) {
    for (int64_t c = cols; c < ld; ++c) {
      if (v[r * ld + c] != 0xFFFF) return false;
    }
  }
  return true;
}

// ---- dense ----

// A dense kBias GEMV over tile-major weights (the model's layout): x [m, k] and out [m, n], unpadded rows.
GemvFp8Params dense_tiled_gemv(const uint16_t* x, const uint8_t* w_tiled, const float* w_scales, const uint16_t* bias,
                               uint16_t* out, int m, int n, int k) {
  GemvFp8Params p;
  p.x = x;
  p.ldx = k;
  p.w = w_tiled;
  p.w_tiled = true;
  p.w_scales = w_scales;
  p.bias = bias;
  p.out = out;
  p.ldc = n;
  p.M = m;
  p.N = n;
  p.K = k;
  return p;
}

struct DenseShape {
  const char* name;
  int n, k;
  GemmEpilogue epi;
  std::vector<int> ms;
  bool bias;
  int ldx_pad, ldc_pad;  // extra elements per row of x / out
};

TEST(GemvFp8Kernel, MatchesReference) {
  GOSSAMER_REQUIRE_GPU();
  std::mt19937 rng(20);
  const std::vector<int> all = {1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<DenseShape> shapes;
  // The model's linears (the bench's table), every decode row count; the unembedding once, without bias.
  for (const gpt_oss::LinearCase& l : gpt_oss::kLinears) {
    const bool unembed = l.n > 100000;
    shapes.push_back({l.name, l.n, l.k, l.epilogue, unembed ? std::vector<int>{1} : all, !unembed, 0, 0});
  }
  // Odd shapes: partial tiles, strides, K splits.
  const DenseShape odd[] = {
      {"n8", 8, 16, GemmEpilogue::kBias, {1, 8}, true, 8, 8},
      {"n136", 136, 272, GemmEpilogue::kBias, all, true, 16, 8},
      {"n24k48", 24, 48, GemmEpilogue::kSwiGlu, {1, 3, 8}, true, 0, 4},
      {"k1040", 200, 1040, GemmEpilogue::kBias, {2, 7}, false, 24, 0},
      {"k80", 72, 80, GemmEpilogue::kSwiGlu, {1, 5}, false, 0, 0},
      {"cluster8", 1024, 4096, GemmEpilogue::kBias, {1, 8}, true, 0, 0},  // K split over 8 CTAs (132 SMs)
      {"wide", 16384, 272, GemmEpilogue::kBias, {1, 8}, true, 0, 0},      // no K split
  };
  shapes.insert(shapes.end(), std::begin(odd), std::end(odd));
  for (const auto& s : shapes) {
    const bool swiglu = s.epi == GemmEpilogue::kSwiGlu;
    const int out_cols = swiglu ? s.n / 2 : s.n;
    const int64_t ldx = s.k + s.ldx_pad, ldc = out_cols + s.ldc_pad;
    auto w = random_fp8_bytes(size_t(s.n) * s.k, rng);
    auto ws = random_scales(scale_count(1, s.n, s.k), rng, 0.0005f, 0.002f);
    auto bias = random_bf16(s.n, rng, 1.0f);
    DeviceBuffer<uint8_t> dw(w), dwt(tiled(w, 1, s.n, s.k));
    DeviceBuffer<float> dws(ws);
    DeviceBuffer<uint16_t> dbias(bias);
    for (const int m : s.ms) {
      auto x = random_bf16(size_t(m) * ldx, rng, 1.0f);
      for (int r = 0; r < m; ++r)
        std::fill(x.begin() + r * ldx + s.k, x.begin() + (r + 1) * ldx, 0xFFFF);  // NaN: never read
      DeviceBuffer<uint16_t> dx(x), dout(size_t(m) * ldc);
      GemvFp8Params p;
      p.x = dx.get();
      p.ldx = ldx;
      p.w = dw.get();
      p.w_scales = dws.get();
      p.bias = s.bias ? dbias.get() : nullptr;
      p.out = dout.get();
      p.ldc = ldc;
      p.M = m;
      p.N = s.n;
      p.K = s.k;
      p.epilogue = s.epi;
      std::vector<uint16_t> ref(dout.size(), 0xFFFF);
      GemvFp8Params r = p;
      r.x = x.data();
      r.w = w.data();
      r.w_scales = ws.data();
      r.bias = s.bias ? bias.data() : nullptr;
      r.out = ref.data();
      gemv_fp8_cpu(r);
      const auto ref_block = block(ref, m, out_cols, ldc);
      // Row-major with and without PDL, and the model's tile-major layout (same reference), filled by bulk copies
      // and by the cp.async ring: the same bits.
      std::vector<uint16_t> tile_major_out;
      for (const auto& [pdl, tile_major, bulk] : {std::tuple{true, false, true}, std::tuple{false, false, true},
                                                  std::tuple{true, true, true}, std::tuple{true, true, false}}) {
        dout.poison();
        p.programmatic_launch = pdl;
        p.w = tile_major ? dwt.get() : dw.get();
        p.w_tiled = tile_major;
        p.bulk_copies = bulk;
        launch_gemv_fp8(p, nullptr);
        const auto out = dout.download();
        if (tile_major && bulk) tile_major_out = out;
        if (tile_major && !bulk) {
          EXPECT_EQ(out, tile_major_out) << s.name << " M=" << m << ": cp.async vs bulk copies";
        }
        const double err = rel_error(block(out, m, out_cols, ldc), ref_block);
        const std::string shape = std::string(s.name) + " M=" + std::to_string(m) + " N=" + std::to_string(s.n) +
                                  " K=" + std::to_string(s.k) + (swiglu ? " swiglu" : "") + (s.bias ? " bias" : "") +
                                  (pdl ? "" : " no-pdl") + (tile_major ? " tile-major" : "") +
                                  (tile_major && !bulk ? " cp.async" : "");
        report("gemv_fp8", shape, err, kTolBf16);
        EXPECT_LT(err, kTolBf16) << shape;
        EXPECT_TRUE(padding_untouched(out, m, out_cols, ldc)) << shape << ": wrote past the output columns";
      }
    }
  }
}

// The decode QKV's RoPE (the model's YaRN scaling): positions, slots, heads; no outputs (RopeOutputs::point).
RopeParams decode_rope(const int32_t* positions, const int64_t* slots, int m, int q_heads, int kv_heads) {
  RopeParams r;
  r.positions = positions;
  r.slots = slots;
  r.num_tokens = m;
  r.num_q_heads = q_heads;
  r.num_kv_heads = kv_heads;
  const std::vector<float> inv_freq = rope_inv_freq(RopeScaling{}, kHeadDim);
  std::copy(inv_freq.begin(), inv_freq.end(), r.inv_freq.begin());
  r.concentration = rope_concentration(RopeScaling{});
  return r;
}

// Two poisoned sets ([0], [1]) of the RoPE epilogue's outputs, q [m, q heads, 64] and k / v [m, kv heads, 64] bf16
// and both caches (cache_bytes each), for a bit-for-bit comparison of two ways to the same rows.
struct RopeOutputs {
  std::vector<DeviceBuffer<uint16_t>> q, k, v;
  std::vector<DeviceBuffer<uint8_t>> k_cache, v_cache;
  RopeOutputs(int m, int q_heads, int kv_heads, size_t cache_bytes) {
    for (int i = 0; i < 2; ++i) {
      q.emplace_back(size_t(m) * q_heads * kHeadDim);
      k.emplace_back(size_t(m) * kv_heads * kHeadDim);
      v.emplace_back(size_t(m) * kv_heads * kHeadDim);
      k_cache.emplace_back(cache_bytes);
      v_cache.emplace_back(cache_bytes);
      for (auto* b : {&q[i], &k[i], &v[i]}) b->poison();
      for (auto* b : {&k_cache[i], &v_cache[i]}) b->poison();
    }
  }
  void point(RopeParams& r, int i) {
    r.q_out = q[i].get();
    r.k_out = k[i].get();
    r.v_out = v[i].get();
    r.k_cache = k_cache[i].get();
    r.v_cache = v_cache[i].get();
  }
  // q of set 1 against gemv_fp8_cpu(ref) (host operands in ref, its RoPE outputs pointed here at host buffers).
  void expect_q_near_cpu(GemvFp8Params ref, size_t cache_bytes, const std::string& label) {
    std::vector<uint16_t> q_ref(q[1].size());
    std::vector<uint8_t> kc_ref(cache_bytes), vc_ref(cache_bytes);
    ref.rope.q_out = q_ref.data();
    ref.rope.k_out = ref.rope.v_out = nullptr;
    ref.rope.k_cache = kc_ref.data();
    ref.rope.v_cache = vc_ref.data();
    gemv_fp8_cpu(ref);
    const double err = rel_error_bf16(q[1].download(), q_ref);
    report("gemv_fp8", label, err, kTolBf16);
    EXPECT_LT(err, kTolBf16) << label;
  }
  void expect_same(const std::string& shape) {
    EXPECT_EQ(q[1].download(), q[0].download()) << shape;
    EXPECT_EQ(k[1].download(), k[0].download()) << shape;
    EXPECT_EQ(v[1].download(), v[0].download()) << shape;
    EXPECT_EQ(k_cache[1].download(), k_cache[0].download()) << shape;
    EXPECT_EQ(v_cache[1].download(), v_cache[0].download()) << shape;
  }
};

// The RoPE epilogue (the decode QKV projection) is the GEMV then launch_rope, bit for bit: q, k / v and both caches
// (bf16 and e4m3), with the model's heads and a TP-halved row, every decode row count, padding slots, a position
// 0; and near the CPU reference (libm's sin / cos against CUDA's sincosf).
TEST(GemvFp8Kernel, RopeEpilogueIsGemvThenRope) {
  GOSSAMER_REQUIRE_GPU();
  std::mt19937 rng(27);
  for (const auto& [qh, kvh] : {std::pair{64, 8}, std::pair{32, 4}}) {
    for (const bool kv_fp8 : {false, true}) {
      for (const int m : {1, 3, 8}) {
        const int n = (qh + 2 * kvh) * kHeadDim, k = 2880, cache_rows = 2 * m + 3;
        const size_t cache_bytes = size_t(cache_rows) * kvh * kHeadDim * (kv_fp8 ? 1 : 2);
        auto w = random_fp8_bytes(size_t(n) * k, rng);
        auto ws = random_scales(scale_count(1, n, k), rng, 0.0005f, 0.002f);
        auto bias = random_bf16(n, rng, 1.0f);
        auto x = random_bf16(size_t(m) * k, rng, 1.0f);
        std::vector<int32_t> pos(m);
        std::uniform_int_distribution<int> pd(0, 131071);
        for (auto& v : pos) v = pd(rng);
        pos[0] = 0;
        std::vector<int64_t> slots(m);
        for (int t = 0; t < m; ++t) slots[t] = 2 * ((t * 5 + 1) % m) + 1;
        if (m > 1) slots[1] = -1;
        std::vector<float> kv_scales(2 * kvh);
        std::uniform_real_distribution<float> sd(0.25f, 2.f);
        for (auto& v : kv_scales) v = sd(rng);
        DeviceBuffer<uint8_t> dw(tiled(w, 1, n, k));
        DeviceBuffer<float> dws(ws), dscales(kv_scales);
        DeviceBuffer<uint16_t> dbias(bias), dx(x), dqkv(size_t(m) * n);
        DeviceBuffer<int32_t> dpos(pos);
        DeviceBuffer<int64_t> dslots(slots);
        RopeOutputs outs(m, qh, kvh, cache_bytes);  // [0]: GEMV then launch_rope; [1]: the RoPE epilogue
        GemvFp8Params p = dense_tiled_gemv(dx.get(), dw.get(), dws.get(), dbias.get(), dqkv.get(), m, n, k);
        RopeParams r = decode_rope(dpos.get(), dslots.get(), m, qh, kvh);
        r.kv_fp8 = kv_fp8;
        r.k_scale = kv_fp8 ? dscales.get() : nullptr;
        r.v_scale = kv_fp8 ? dscales.get() + kvh : nullptr;
        launch_gemv_fp8(p, nullptr);
        RopeParams separate = r;
        separate.qkv = dqkv.get();
        separate.qkv_stride = n;
        outs.point(separate, 0);
        launch_rope(separate, nullptr);
        GemvFp8Params fused = p;
        fused.out = nullptr;
        fused.rope_epilogue = true;
        fused.rope = r;
        outs.point(fused.rope, 1);
        launch_gemv_fp8(fused, nullptr);
        const std::string shape = std::to_string(qh) + "/" + std::to_string(kvh) + " heads M=" + std::to_string(m) +
                                  (kv_fp8 ? " fp8 cache" : " bf16 cache");
        outs.expect_same(shape);
        // The CPU reference of the epilogue (q only: the caches follow the same rows).
        GemvFp8Params ref = fused;
        std::vector<uint8_t> w_tiled = tiled(w, 1, n, k);
        ref.x = x.data();
        ref.w = w_tiled.data();
        ref.w_scales = ws.data();
        ref.bias = bias.data();
        ref.rope.positions = pos.data();
        ref.rope.slots = slots.data();
        ref.rope.k_scale = kv_fp8 ? kv_scales.data() : nullptr;
        ref.rope.v_scale = kv_fp8 ? kv_scales.data() + kvh : nullptr;
        outs.expect_q_near_cpu(ref, cache_bytes, "rope epilogue q " + shape);
      }
    }
  }
}

// Every launch shape the bench sweeps (GemvFp8Params::stages × cluster) gives the reference's result.
TEST(GemvFp8Kernel, EveryLaunchShapeMatchesReference) {
  GOSSAMER_REQUIRE_GPU();
  std::mt19937 rng(23);
  const int n = 1000, k = 2880, m = 3;
  auto w = random_fp8_bytes(size_t(n) * k, rng);
  auto ws = random_scales(scale_count(1, n, k), rng, 0.0005f, 0.002f);
  auto bias = random_bf16(n, rng, 1.0f);
  auto x = random_bf16(size_t(m) * k, rng, 1.0f);
  DeviceBuffer<uint8_t> dwt(tiled(w, 1, n, k));
  DeviceBuffer<float> dws(ws);
  DeviceBuffer<uint16_t> dbias(bias), dx(x), dout(size_t(m) * n);
  GemvFp8Params p = dense_tiled_gemv(dx.get(), dwt.get(), dws.get(), dbias.get(), dout.get(), m, n, k);
  std::vector<uint16_t> ref(dout.size(), 0xFFFF);
  GemvFp8Params r = p;
  r.x = x.data();
  r.w = w.data();
  r.w_tiled = false;
  r.w_scales = ws.data();
  r.bias = bias.data();
  r.out = ref.data();
  gemv_fp8_cpu(r);
  for (const int stages : {3, 4}) {
    for (const int cluster : {1, 2, 4, 8}) {
      dout.poison();
      p.stages = stages;
      p.cluster = cluster;
      launch_gemv_fp8(p, nullptr);
      const double err = rel_error(block(dout.download(), m, n, n), block(ref, m, n, n));
      const std::string shape = "stages=" + std::to_string(stages) + " cluster=" + std::to_string(cluster);
      report("gemv_fp8 launch shape", shape, err, kTolBf16);
      EXPECT_LT(err, kTolBf16) << shape;
    }
  }
}

// Activation rows of very different magnitudes (beyond the f16 range and far below it), and chunks of
// very different magnitudes inside one row: the per-chunk power-of-two staging must keep each row exact.
TEST(GemvFp8Kernel, ActivationRange) {
  GOSSAMER_REQUIRE_GPU();
  std::mt19937 rng(21);
  const int M = 8, N = 264, K = 2880;
  const float row_scale[M] = {1e-30f, 1e-12f, 1e-5f, 1.0f, 300.0f, 1e5f, 1e12f, 1e30f};
  std::vector<uint16_t> x(size_t(M) * K);
  std::normal_distribution<float> nd(0.f, 1.f);
  for (int m = 0; m < M; ++m) {
    for (int k = 0; k < K; ++k) {
      // Row 3: alternate 64-column chunks at 1e4 and 1e-4.
      const float chunk = m == 3 ? ((k / 64) % 2 ? 1e4f : 1e-4f) : 1.0f;
      x[size_t(m) * K + k] = float_to_bf16(nd(rng) * row_scale[m] * chunk);
    }
  }
  auto w = random_fp8_bytes(size_t(N) * K, rng);
  auto ws = random_scales(scale_count(1, N, K), rng, 0.0005f, 0.002f);
  DeviceBuffer<uint16_t> dx(x), dout(size_t(M) * N);
  DeviceBuffer<uint8_t> dw(w);
  DeviceBuffer<float> dws(ws);
  dout.poison();
  GemvFp8Params p;
  p.x = dx.get();
  p.ldx = K;
  p.w = dw.get();
  p.w_scales = dws.get();
  p.out = dout.get();
  p.ldc = N;
  p.M = M;
  p.N = N;
  p.K = K;
  launch_gemv_fp8(p, nullptr);
  std::vector<uint16_t> ref(size_t(M) * N);
  GemvFp8Params r = p;
  r.x = x.data();
  r.w = w.data();
  r.w_scales = ws.data();
  r.out = ref.data();
  gemv_fp8_cpu(r);
  const auto out = dout.download();
  for (int m = 0; m < M; ++m) {
    const std::vector<uint16_t> o(out.begin() + m * N, out.begin() + (m + 1) * N);
    const std::vector<uint16_t> e(ref.begin() + m * N, ref.begin() + (m + 1) * N);
    const double err = rel_error_bf16(o, e);
    char shape[64];
    std::snprintf(shape, sizeof shape, "range row %d (|x| ~ %.0e)", m, row_scale[m]);
    report("gemv_fp8", shape, err, kTolBf16);
    EXPECT_LT(err, kTolBf16) << shape;
  }
}

// CPU only (runs without a GPU): the relayout keeps every element, and the references read both layouts
// to the same bits.
TEST(Fp8Tiled, ReferencesReadBothLayoutsAlike) {
  std::mt19937 rng(27);
  for (const auto& [groups, n, k] : {std::tuple{1, 200, 80}, std::tuple{3, 64, 64}, std::tuple{2, 136, 272}}) {
    const auto w = random_fp8_bytes(size_t(groups) * n * k, rng);
    const auto t = tiled(w, groups, n, k);
    ASSERT_EQ(t.size(), size_t(groups) * ((n + 63) / 64 * 64) * ((k + 63) / 64 * 64));
    size_t nonzero_padding = 0;
    for (int g = 0; g < groups; ++g) {
      for (int r = 0; r < (n + 63) / 64 * 64; ++r) {
        for (int c = 0; c < (k + 63) / 64 * 64; ++c) {
          const uint8_t v = t[size_t(g) * fp8_tiled_group_bytes(n, k) + fp8_tiled_offset(r, c, fp8_tiled_pad(k))];
          if (r < n && c < k) {
            ASSERT_EQ(v, w[(size_t(g) * n + r) * k + c]) << g << " " << r << " " << c;
          } else {
            nonzero_padding += v != 0;
          }
        }
      }
    }
    EXPECT_EQ(nonzero_padding, 0u);
    const auto x = random_bf16(size_t(3) * k, rng, 1.0f);
    const auto scales = random_scales(scale_count(groups, n, k), rng, 0.0005f, 0.002f);
    std::vector<int32_t> ids = {groups - 1, 0, groups - 1};
    for (const bool grouped : {false, true}) {
      std::vector<uint16_t> a(size_t(3) * n), b(size_t(3) * n);
      GemvFp8Params p;
      p.x = x.data();
      p.ldx = k;
      p.w = w.data();
      p.w_scales = scales.data();
      p.out = a.data();
      p.ldc = n;
      p.M = 3;
      p.N = n;
      p.K = k;
      if (grouped) {
        p.topk_ids = ids.data();
        p.num_pairs = 3;
        p.num_local_experts = groups;
      }
      gemv_fp8_cpu(p);
      p.w = t.data();
      p.w_tiled = true;
      p.out = b.data();
      gemv_fp8_cpu(p);
      EXPECT_EQ(a, b) << "gemv_fp8_cpu, grouped " << grouped;
    }
  }
}

// ---- grouped (MoE) mode, driven directly with chosen expert ids ----

struct GroupedCase {
  const char* name;
  std::vector<int32_t> ids;  // global expert per pair
  int divisor;               // pair p reads x row p / divisor
  int expert_begin, local;   // local experts [expert_begin, expert_begin + local)
  int n, k;
  GemmEpilogue epi;
};

TEST(GemvFp8Kernel, GroupedMatchesReference) {
  GOSSAMER_REQUIRE_GPU();
  std::mt19937 rng(22);
  std::vector<int32_t> same32(32, 3), mixed32(32), spread12 = {5, 1, 9, 2, 1, 5, 7, 0, 9, 1, 6, 3};
  for (int i = 0; i < 32; ++i) mixed32[i] = static_cast<int32_t>((i * 7 + i / 5) % 12);
  const GroupedCase cases[] = {
      {"T1 distinct", {4, 0, 7, 2}, 4, 0, 8, 576, 320, GemmEpilogue::kSwiGlu},
      {"32 pairs one expert (4 slots of 8)", same32, 1, 0, 8, 320, 576, GemmEpilogue::kBias},
      {"32 pairs, local [4, 8)", mixed32, 1, 4, 4, 264, 272, GemmEpilogue::kBias},
      {"T3 shared experts", spread12, 4, 0, 10, 512, 2880, GemmEpilogue::kSwiGlu},
      {"T3 local [5, 10)", spread12, 4, 5, 5, 2880, 512, GemmEpilogue::kBias},
      {"none local", {0, 1, 2, 3}, 4, 4, 4, 128, 256, GemmEpilogue::kBias},
  };
  for (const auto& c : cases) {
    const int pairs = static_cast<int>(c.ids.size());
    const bool swiglu = c.epi == GemmEpilogue::kSwiGlu;
    const int out_cols = swiglu ? c.n / 2 : c.n;
    const int x_rows = (pairs + c.divisor - 1) / c.divisor;
    auto x = random_bf16(size_t(x_rows) * c.k, rng, 1.0f);
    auto w = random_fp8_bytes(size_t(c.local) * c.n * c.k, rng);
    auto ws = random_scales(scale_count(c.local, c.n, c.k), rng, 0.0005f, 0.002f);
    auto bias = random_bf16(size_t(c.local) * c.n, rng, 1.0f);
    DeviceBuffer<uint16_t> dx(x), dbias(bias), dout(size_t(pairs) * out_cols);
    DeviceBuffer<uint8_t> dw(w);
    DeviceBuffer<float> dws(ws);
    DeviceBuffer<int32_t> dids(c.ids), dpair_row(pairs);
    dout.poison();
    dpair_row.poison();
    GemvFp8Params p;
    p.x = dx.get();
    p.ldx = c.k;
    p.w = dw.get();
    p.w_scales = dws.get();
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
    p.pair_row = dpair_row.get();
    // The tile-major copy first (checked against the same reference below), then row-major.
    DeviceBuffer<uint8_t> dwt(tiled(w, c.local, c.n, c.k));
    p.w = dwt.get();
    p.w_tiled = true;
    launch_gemv_fp8(p, nullptr);
    const auto out_tiled = dout.download();
    dout.poison();
    p.w = dw.get();
    p.w_tiled = false;
    launch_gemv_fp8(p, nullptr);
    std::vector<uint16_t> ref(dout.size(), 0xFFFF);
    std::vector<int32_t> ref_pair_row(pairs);
    GemvFp8Params r = p;
    r.x = x.data();
    r.w = w.data();
    r.w_scales = ws.data();
    r.bias = bias.data();
    r.out = ref.data();
    r.topk_ids = c.ids.data();
    r.pair_row = ref_pair_row.data();
    gemv_fp8_cpu(r);
    const auto out = dout.download();
    EXPECT_EQ(out_tiled, out) << c.name << ": tile-major weights gave other results";
    EXPECT_EQ(dpair_row.download(), ref_pair_row) << c.name;
    // Local pairs' rows against the reference; rows of other ranks' pairs must stay untouched.
    std::vector<float> got, want;
    bool others_untouched = true;
    for (int q = 0; q < pairs; ++q) {
      for (int col = 0; col < out_cols; ++col) {
        const size_t i = size_t(q) * out_cols + col;
        if (ref_pair_row[q] >= 0) {
          got.push_back(bf16_to_float(out[i]));
          want.push_back(bf16_to_float(ref[i]));
        } else if (out[i] != 0xFFFF) {
          others_untouched = false;
        }
      }
    }
    const double err = got.empty() ? 0.0 : rel_error(got, want);
    const std::string shape =
        std::string("grouped ") + c.name + " N=" + std::to_string(c.n) + " K=" + std::to_string(c.k);
    report("gemv_fp8", shape, err, kTolBf16);
    EXPECT_LT(err, kTolBf16) << shape;
    EXPECT_TRUE(others_untouched) << shape << ": wrote rows of non-local pairs";
  }
}

// ---- MoE decode ----

using MoeDecodeCase = MoeProblemCase;  // moe_problem.h

// moe_decode_cpu (moe.h) into a fresh output.
std::vector<uint16_t> moe_decode_ref(MoeParams p) {
  std::vector<uint16_t> out(size_t(p.num_tokens) * p.hidden);
  p.out = out.data();
  moe_decode_cpu(p);
  return out;
}

TEST(MoeDecodeKernel, MatchesReference) {
  GOSSAMER_REQUIRE_GPU();
  std::mt19937 rng(23);
  std::vector<MoeDecodeCase> cases = {
      {8, 32, 0, 32, 576, 320, true, 1},   // every token the same 4 experts: slots of 8 pairs
      {8, 32, 0, 32, 576, 320, false, 3},  // partly shared
      {6, 128, 0, 128, 512, 256, true, 2},  {4, 32, 8, 8, 576, 320, true, 0},  // local range [8, 16)
      {8, 128, 64, 32, 512, 256, false, 0},                                    // local range [64, 96)
      {3, 32, 28, 4, 576, 320, true, 0},                                       // local range at the end
  };
  for (const gpt_oss::MoeCase& m : gpt_oss::kMoeDecode)
    cases.push_back({m.tokens, m.experts, 0, m.experts, 2880, 2880, true, 0});
  for (int t = 1; t <= kGemvMaxRows; ++t) cases.push_back({t, 32, 0, 32, 576, 320, t % 2 == 1, 0});
  for (const int t : {1, 2, 5, 8}) cases.push_back({t, 128, 0, 128, 512, 256, t % 2 == 0, 0});
  for (const auto& c : cases) {
    MoeProblem m(c, rng);
    DeviceBuffer<uint16_t> dout(size_t(c.tokens) * c.hidden);
    DeviceBuffer<uint8_t> ws(moe_decode_workspace_bytes(c.tokens, c.hidden, c.inter));
    dout.poison();
    ws.poison();
    MoeParams p = m.dev;
    p.out = dout.get();
    launch_moe_decode(p, ws.get(), nullptr);
    const auto out = dout.download();
    {  // the same with tile-major weights: bit-identical
      DeviceBuffer<uint8_t> dw1t(tiled(m.w1, c.local, 2 * c.inter, c.hidden)),
          dw2t(tiled(m.w2, c.local, c.hidden, c.inter));
      MoeParams t = p;
      t.w1 = dw1t.get();
      t.w2 = dw2t.get();
      t.weights_tiled = true;
      dout.poison();
      launch_moe_decode(t, ws.get(), nullptr);
      EXPECT_EQ(dout.download(), out) << "tile-major weights, " << c.tokens << " tokens";
    }
    MoeParams r = m.host;
    const auto ref = moe_decode_ref(r);
    std::vector<uint16_t> ref_fp8(ref.size());
    r.out = ref_fp8.data();
    moe_cpu(r);
    const std::string shape = std::to_string(c.tokens) + "tok E" + std::to_string(c.experts) + " local[" +
                              std::to_string(c.expert_begin) + "+" + std::to_string(c.local) + "] h" +
                              std::to_string(c.hidden) + " i" + std::to_string(c.inter) +
                              (c.distinct_logit_rows ? " shared-experts" : "") + (c.residual ? " +res" : "");
    const double err = rel_error_bf16(out, ref);
    report("moe_decode", shape, err, kTolBf16);
    EXPECT_LT(err, kTolBf16) << shape;
    const double err_fp8 = rel_error_bf16(out, ref_fp8);
    report("moe_decode", shape + " vs moe_cpu (fp8 activations)", err_fp8, kTolVsFp8Activations);
    EXPECT_LT(err_fp8, kTolVsFp8Activations) << shape;
  }
}

// combine_deferred: launch_moe_decode stops after the down GEMV and the next norm sums the pieces
// (moe_decode_deferred_combine → RmsNormParams::moe_y); residual and normed output equal the combining
// launch followed by the norm bit for bit, across token counts and local expert ranges (pairs of other
// ranks skipped), FP8 tile-major experts as the model holds them.
TEST(MoeDecodeKernel, DeferredCombineIntoNorm) {
  GOSSAMER_REQUIRE_GPU();
  std::mt19937 rng(26);
  const std::vector<MoeDecodeCase> cases = {
      {1, 8, 0, 8, 2880, 640, true, 0},  {2, 32, 0, 32, 576, 320, false, 0}, {5, 128, 0, 128, 512, 256, true, 2},
      {8, 32, 0, 32, 576, 320, true, 1}, {4, 32, 8, 8, 576, 320, true, 0},  // local range [8, 16)
  };
  for (const auto& c : cases) {
    MoeProblem m(c, rng);
    expect_deferred_combine_into_norm(
        c, m, moe_decode_workspace_bytes(c.tokens, c.hidden, c.inter),
        [](const MoeParams& p, void* ws) { launch_moe_decode(p, ws, nullptr); },
        [&](void* ws) { return moe_decode_deferred_combine(ws, c.tokens, c.hidden, c.inter); }, rng);
  }
}

// All of a token's experts on other ranks: the output is the residual alone.
TEST(MoeDecodeKernel, NoLocalExperts) {
  GOSSAMER_REQUIRE_GPU();
  std::mt19937 rng(24);
  MoeDecodeCase c{2, 32, 16, 16, 576, 320, true, 1};
  MoeProblem m(c, rng);
  // Make experts 0..3 the top 4 of both tokens (outside the local range [16, 32)).
  for (int t = 0; t < c.tokens; ++t) {
    for (int e = 0; e < 4; ++e) m.logits[size_t(t) * c.experts + e] = float_to_bf16(10.0f + e);
  }
  m.dl.upload(m.logits);
  DeviceBuffer<uint16_t> dout(size_t(c.tokens) * c.hidden);
  DeviceBuffer<uint8_t> ws(moe_decode_workspace_bytes(c.tokens, c.hidden, c.inter));
  dout.poison();
  ws.poison();
  MoeParams p = m.dev;
  p.out = dout.get();
  launch_moe_decode(p, ws.get(), nullptr);
  EXPECT_EQ(dout.download(), m.res);
}

// A PDL chain (GEMV → GEMV reading its output → MoE decode) on a stream, then the same captured into a
// CUDA graph and replayed: same results as the CPU.
TEST(GemvFp8Kernel, ChainAndGraphCapture) {
  GOSSAMER_REQUIRE_GPU();
  std::mt19937 rng(25);
  const int M = 4, K1 = 2880, N1 = 2880, N2 = 5120;
  auto x = random_bf16(size_t(M) * K1, rng, 1.0f);
  auto w1 = random_fp8_bytes(size_t(N1) * K1, rng), w2 = random_fp8_bytes(size_t(N2) * N1, rng);
  auto s1 = random_scales(scale_count(1, N1, K1), rng, 0.0002f, 0.0006f);
  auto s2 = random_scales(scale_count(1, N2, N1), rng, 0.0002f, 0.0006f);
  auto b1 = random_bf16(N1, rng, 1.0f), b2 = random_bf16(N2, rng, 1.0f);
  DeviceBuffer<uint16_t> dx(x), db1(b1), db2(b2), dh(size_t(M) * N1), dy(size_t(M) * N2);
  DeviceBuffer<uint8_t> dw1(w1), dw2(w2);
  DeviceBuffer<float> ds1(s1), ds2(s2);
  GemvFp8Params p1;
  p1.x = dx.get();
  p1.ldx = K1;
  p1.w = dw1.get();
  p1.w_scales = ds1.get();
  p1.bias = db1.get();
  p1.out = dh.get();
  p1.ldc = N1;
  p1.M = M;
  p1.N = N1;
  p1.K = K1;
  GemvFp8Params p2 = p1;
  p2.x = dh.get();
  p2.ldx = N1;
  p2.w = dw2.get();
  p2.w_scales = ds2.get();
  p2.bias = db2.get();
  p2.out = dy.get();
  p2.ldc = N2;
  p2.N = N2;
  p2.K = N1;
  // CPU: h = gemv(x), y = gemv(h) with the rounded h.
  std::vector<uint16_t> h_ref(size_t(M) * N1), y_ref(size_t(M) * N2);
  GemvFp8Params r1 = p1, r2 = p2;
  r1.x = x.data();
  r1.w = w1.data();
  r1.w_scales = s1.data();
  r1.bias = b1.data();
  r1.out = h_ref.data();
  gemv_fp8_cpu(r1);
  r2.x = h_ref.data();
  r2.w = w2.data();
  r2.w_scales = s2.data();
  r2.bias = b2.data();
  r2.out = y_ref.data();
  gemv_fp8_cpu(r2);
  MoeDecodeCase mc{3, 32, 0, 32, 576, 320, true, 0};
  MoeProblem moe(mc, rng);
  DeviceBuffer<uint16_t> dmoe_out(size_t(mc.tokens) * mc.hidden);
  DeviceBuffer<uint8_t> ws(moe_decode_workspace_bytes(mc.tokens, mc.hidden, mc.inter));
  MoeParams mp = moe.dev;
  mp.out = dmoe_out.get();
  const auto moe_ref = moe_decode_ref(moe.host);

  cudaStream_t stream;
  GOSSAMER_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  auto enqueue = [&] {
    launch_gemv_fp8(p1, stream);
    launch_gemv_fp8(p2, stream);
    launch_moe_decode(mp, ws.get(), stream);
  };
  auto check = [&](const char* how) {
    GOSSAMER_CUDA_CHECK(cudaStreamSynchronize(stream));
    const double eh = rel_error_bf16(dh.download(), h_ref), ey = rel_error_bf16(dy.download(), y_ref);
    const double em = rel_error_bf16(dmoe_out.download(), moe_ref);
    report("gemv_fp8", std::string("chain h ") + how, eh, kTolBf16);
    report("gemv_fp8", std::string("chain y=gemv(h) ") + how, ey, kTolBf16);
    report("moe_decode", std::string("chain ") + how, em, kTolBf16);
    EXPECT_LT(eh, kTolBf16) << how;
    EXPECT_LT(ey, kTolBf16) << how;
    EXPECT_LT(em, kTolBf16) << how;
  };
  dh.poison();
  dy.poison();
  dmoe_out.poison();
  enqueue();
  check("stream");

  cudaGraph_t graph;
  cudaGraphExec_t exec;
  GOSSAMER_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  enqueue();
  GOSSAMER_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  GOSSAMER_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  dh.poison();
  dy.poison();
  dmoe_out.poison();
  for (int i = 0; i < 3; ++i) GOSSAMER_CUDA_CHECK(cudaGraphLaunch(exec, stream));
  check("graph x3");
  GOSSAMER_CUDA_CHECK(cudaGraphExecDestroy(exec));
  GOSSAMER_CUDA_CHECK(cudaGraphDestroy(graph));
  GOSSAMER_CUDA_CHECK(cudaStreamDestroy(stream));
}

}  // namespace
}  // namespace gossamer::kernels
