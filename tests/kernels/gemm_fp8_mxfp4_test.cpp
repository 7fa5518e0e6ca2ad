// The FP8 GEMM on MXFP4 weights (gemm_fp8.h b_mxfp4: dequantized on chip) and the prefill MoE block on it
// (launch_moe with weights_mxfp4).
//
// Exactness: the kernel (the TMA GEMM's B-sharing pairs, whose producer dequantizes) turns each 128×128 block into
// the e4m3 bytes and fp32 block scale that launch_mxfp4_tiled_to_fp8 writes and runs the FP8 kernels' wgmma and
// promotion arithmetic, so its output must equal "convert, then the FP8 GEMM" bit for bit (EXPECT_EQ, poisoned
// outputs, partial row/column blocks, wide exponent spans that take the rounding path). Against the CPU references
// (gemm_fp8_cpu / moe_cpu on the converted weights) the bounds are the FP8 path's: kTolBf16 for one GEMM (fp32 sums in
// another order, one bf16 rounding), kTolBf16Requant for the block (h re-quantized to fp8).
#include <algorithm>
#include <cstring>
#include <string>
#include <thread>
#include <tuple>

#include "kernel_test_utils.h"
#include "kernels/gemm_fp8.h"
#include "kernels/moe.h"
#include "kernels/mxfp4_tiled.h"

namespace gossamer::kernels {
namespace {

using namespace test;

uint64_t splitmix64(uint64_t& s) {
  uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// MXFP4 weights [G, N, K] directly in the tiled layout of mxfp4_tiled.h: random codes, E8M0 exponents in
// [e_lo, e_hi]; rows ≥ N and columns ≥ K padded with code 0 and exponent 127 as the layout prescribes.
std::vector<uint8_t> random_mxfp4_tiled(int groups, int n, int k, uint64_t seed, int e_lo, int e_hi) {
  const int64_t row_tiles = (n + 63) / 64, k_tiles = (k + 127) / 128;
  std::vector<uint8_t> w(size_t(groups) * mxfp4_tiled_group_bytes(n, k));
  for (size_t i = 0; i < w.size(); i += 8) {
    const uint64_t r = splitmix64(seed);
    std::memcpy(w.data() + i, &r, std::min<size_t>(8, w.size() - i));
  }
  for (int64_t tile = 0; tile < groups * row_tiles * k_tiles; ++tile) {
    uint8_t* p = w.data() + tile * kMxfp4TileBytes;
    const int64_t rt = tile / k_tiles % row_tiles, kt = tile % k_tiles;
    for (int r = 0; r < 64; ++r) {
      const int c = r / 8, g = r % 8;
      for (int j = 0; j < 4; ++j) {
        uint8_t& scale = p[4096 + 32 * g + 4 * c + j];
        scale = static_cast<uint8_t>(e_lo + scale % (e_hi - e_lo + 1));
        if (rt * 64 + r < n && kt * 128 + 32 * j < k) continue;
        scale = 127;
        for (int t = 0; t < 4; ++t) std::fill_n(p + (32 * c + 4 * g + t) * 16 + 4 * j, 4, uint8_t{0});
      }
    }
  }
  return w;
}

struct GroupedCase {
  int n, k;
  std::vector<int> rows;  // per group (0 allowed); one group with tile lists off = a plain GEMM
  GemmEpilogue epi;
  int e_lo, e_hi;
  bool plain = false;
  int ldc_pad = 0;
};

TEST(GemmFp8Mxfp4Kernel, EqualsConvertThenFp8Gemm) {
  GOSSAMER_REQUIRE_GPU();
  std::mt19937 rng(40);
  const GroupedCase cases[] = {
      {5760, 2880, {300, 0, 129, 64, 1}, GemmEpilogue::kSwiGlu, 110, 124},  // gate_up, the model's shape
      {2880, 2880, {200, 7, 256, 0}, GemmEpilogue::kBias, 110, 124},        // down: a 64-row last block
      {200, 416, {130, 1, 65}, GemmEpilogue::kBias, 116, 124, false, 8},    // partial row tile and K block
      {352, 224, {3, 500}, GemmEpilogue::kSwiGlu, 116, 124},                // N = 5.5 row tiles of 64
      {136, 96, {77, 128}, GemmEpilogue::kBias, 60, 200},  // exponents spanning > 14 binades: rounding path
      {2880, 2880, {40, 90}, GemmEpilogue::kBias, 100, 127},
      {640, 2880, {300}, GemmEpilogue::kBias, 112, 124, true, 16},  // plain GEMM (no tile list)
      {8, 32, {5}, GemmEpilogue::kBias, 116, 124, true},
  };
  int seed = 1;
  for (const GroupedCase& c : cases) {
    const int G = static_cast<int>(c.rows.size());
    std::vector<int32_t> offsets{0};
    for (const int r : c.rows) offsets.push_back(offsets.back() + r);
    const int M = offsets.back(), kb = (c.k + 127) / 128;
    std::vector<int32_t> tile_group, tile_m0;
    for (int g = 0; g < G; ++g) {
      for (int m0 = offsets[g]; m0 < offsets[g + 1]; m0 += 128) {
        tile_group.push_back(g);
        tile_m0.push_back(m0);
      }
    }
    const int num_tiles = static_cast<int>(tile_group.size());
    tile_group.resize(tile_group.size() + 3, 0);  // spare slots: CTAs past num_tiles exit
    tile_m0.resize(tile_m0.size() + 3, 0);
    const int64_t lda = (c.k + 15) / 16 * 16;
    const auto a = random_fp8_normal(size_t(M) * lda, rng);
    const auto as = random_scales(size_t(M) * kb, rng, 0.001f, 0.01f);
    const auto w = random_mxfp4_tiled(G, c.n, c.k, seed++, c.e_lo, c.e_hi);
    const auto bias = random_bf16(size_t(G) * c.n, rng, 1.0f);
    const int out_cols = c.epi == GemmEpilogue::kSwiGlu ? c.n / 2 : c.n;
    const int64_t ldc = out_cols + c.ldc_pad;
    DeviceBuffer<uint8_t> da(a), dw(w), dw8(size_t(G) * fp8_tiled_group_bytes(c.n, c.k));
    DeviceBuffer<float> das(as), dw8s(scale_count(G, c.n, c.k));
    DeviceBuffer<uint16_t> dbias(bias), dout(size_t(M) * ldc), dref(size_t(M) * ldc);
    DeviceBuffer<int32_t> doff(offsets), dtg(tile_group), dtm(tile_m0), dnt(std::vector<int32_t>{num_tiles});
    launch_mxfp4_tiled_to_fp8(dw.get(), dw8.get(), dw8s.get(), G, c.n, c.k, nullptr);
    GemmFp8Params p;
    p.a = da.get();
    p.lda = lda;
    p.a_scales = das.get();
    p.bias = dbias.get();
    p.ldc = ldc;
    p.M = M;
    p.N = c.n;
    p.K = c.k;
    p.epilogue = c.epi;
    if (!c.plain) {
      p.group_offsets = doff.get();
      p.tile_group = dtg.get();
      p.tile_m0 = dtm.get();
      p.num_tiles = dnt.get();
      p.max_tiles = static_cast<int>(tile_group.size());
      p.num_groups = G;
    }
    std::string shape = std::to_string(G) + "x[" + std::to_string(c.n) + "x" + std::to_string(c.k) + "] M" +
                        std::to_string(M) + (c.epi == GemmEpilogue::kSwiGlu ? " swiglu" : " bias") + " e[" +
                        std::to_string(c.e_lo) + "," + std::to_string(c.e_hi) + "]" + (c.plain ? " plain" : "");
    // ---- convert, then the FP8 GEMM (the cp.async and TMA kernels: both bit-identical) ----
    std::vector<uint16_t> ref;
    for (const GemmTile tile : {GemmTile::k128x128, GemmTile::k128x192tma2}) {
      GemmFp8Params r = p;
      r.b = dw8.get();
      r.b_tiled = true;
      r.b_scales = dw8s.get();
      r.out = dref.get();
      r.tile = tile;
      dref.poison();
      launch_gemm_fp8(r, 128, nullptr);
      const auto got = dref.download();
      if (!ref.empty()) {
        EXPECT_TRUE(got == ref) << shape << ": the FP8 kernels differ";
      }
      ref = got;
    }
    // ---- the MXFP4 kernel ----
    GemmFp8Params q = p;
    q.b = dw.get();
    q.b_mxfp4 = true;
    q.out = dout.get();
    dout.poison();
    launch_gemm_fp8(q, 128, nullptr);
    const auto out = dout.download();
    size_t diff = 0;
    for (size_t i = 0; i < out.size(); ++i) diff += out[i] != ref[i];
    EXPECT_EQ(diff, 0u) << shape << ": " << diff << " of " << out.size()
                        << " outputs of the MXFP4 kernel differ from convert + FP8 GEMM";
    // ---- the CPU reference (gemm_fp8_cpu converts MXFP4 the same way) ----
    std::vector<uint16_t> host(out.size(), 0xFFFF);
    GemmFp8Params h = q;
    h.a = a.data();
    h.a_scales = as.data();
    h.b = w.data();
    h.bias = bias.data();
    h.out = host.data();
    h.group_offsets = c.plain ? nullptr : offsets.data();
    gemm_fp8_cpu(h);
    std::vector<uint16_t> got, want;
    for (int m = 0; m < M; ++m) {
      got.insert(got.end(), out.begin() + m * ldc, out.begin() + m * ldc + out_cols);
      want.insert(want.end(), host.begin() + m * ldc, host.begin() + m * ldc + out_cols);
      for (int64_t j = out_cols; j < ldc; ++j) EXPECT_EQ(out[m * ldc + j], 0xFFFF) << shape << ": ldc padding written";
    }
    const double err = rel_error_bf16(got, want);
    report("gemm_fp8 mxfp4", shape, err, kTolBf16);
    EXPECT_LT(err, kTolBf16) << shape;
  }
}

// ---- the prefill MoE block on MXFP4 experts ----

struct MxfpMoeCase {
  int tokens, experts, expert_begin, local, hidden, inter;
  bool residual;
};

// moe_cpu over token slices on all cores (tokens are independent), FP8 tile-major host experts.
std::vector<uint16_t> moe_reference(const MoeParams& host) {
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
    pool.emplace_back([s] { moe_cpu(s); });
  }
  for (std::thread& t : pool) t.join();
  return out;
}

TEST(MoeKernel, Mxfp4MatchesReference) {
  GOSSAMER_REQUIRE_GPU();
  std::mt19937 rng(41);
  // 200–3000 tokens at E = 32 (20b) and 128 (120b); the model's width where the host reference stays in
  // seconds, narrower widths with partial 128-blocks (and a partial 64-row tile: 352) at 3000 tokens.
  const MxfpMoeCase cases[] = {
      {200, 32, 0, 32, 2880, 2880, true},   {1024, 32, 0, 32, 2880, 2880, false}, {3000, 32, 0, 32, 576, 320, true},
      {512, 128, 0, 128, 2880, 2880, true}, {3000, 128, 0, 128, 352, 224, false}, {2048, 128, 32, 64, 576, 320, true},
  };
  uint64_t seed = 100;
  for (const MxfpMoeCase& c : cases) {
    const int T = c.tokens, E = c.local, H = c.hidden, I = c.inter;
    const auto w1 = random_mxfp4_tiled(E, 2 * I, H, seed++, 110, 124);
    const auto w2 = random_mxfp4_tiled(E, H, I, seed++, 110, 124);
    const auto x = random_bf16(size_t(T) * H, rng, 1.0f), res = random_bf16(size_t(T) * H, rng, 1.0f);
    const auto logits = random_bf16(size_t(T) * c.experts, rng, 2.0f);
    const auto b1 = random_bf16(size_t(E) * 2 * I, rng, 0.5f), b2 = random_bf16(size_t(E) * H, rng, 0.5f);
    DeviceBuffer<uint8_t> dw1(w1), dw2(w2), ws(moe_workspace_bytes(T, E, H, I));
    DeviceBuffer<uint16_t> dx(x), dres(res), dl(logits), db1(b1), db2(b2), dout(size_t(T) * H);
    MoeParams d;
    d.x = dx.get();
    d.logits = dl.get();
    d.residual = c.residual ? dres.get() : nullptr;
    d.out = dout.get();
    d.w1 = dw1.get();
    d.w2 = dw2.get();
    d.b1 = db1.get();
    d.b2 = db2.get();
    d.weights_mxfp4 = true;
    d.num_tokens = T;
    d.num_experts = c.experts;
    d.expert_begin = c.expert_begin;
    d.num_local_experts = E;
    d.hidden = H;
    d.inter = I;
    const std::string shape = std::to_string(T) + "tok E" + std::to_string(c.experts) + " local[" +
                              std::to_string(c.expert_begin) + "+" + std::to_string(E) + "] h" + std::to_string(H) +
                              " i" + std::to_string(I);
    dout.poison();
    ws.poison();
    launch_moe(d, ws.get(), nullptr);  // the TMA kernel (kAuto), h quantized in gate_up's epilogue
    const auto out = dout.download();
    // ---- bit-identical to the old path: convert every expert, then launch_moe on FP8 ----
    DeviceBuffer<uint8_t> d8w1(size_t(E) * fp8_tiled_group_bytes(2 * I, H)),
        d8w2(size_t(E) * fp8_tiled_group_bytes(H, I));
    DeviceBuffer<float> d8s1(scale_count(E, 2 * I, H)), d8s2(scale_count(E, H, I));
    launch_mxfp4_tiled_to_fp8(dw1.get(), d8w1.get(), d8s1.get(), E, 2 * I, H, nullptr);
    launch_mxfp4_tiled_to_fp8(dw2.get(), d8w2.get(), d8s2.get(), E, H, I, nullptr);
    MoeParams f = d;
    f.weights_mxfp4 = false;
    f.weights_tiled = true;
    f.w1 = d8w1.get();
    f.w1_scales = d8s1.get();
    f.w2 = d8w2.get();
    f.w2_scales = d8s2.get();
    // Where the FP8 path plans 128-row tiles too (more than 64 rows per local expert) it runs the same
    // per-element arithmetic: bit-identical with the FP8 kernels (cp.async and TMA). With ≤ 64 rows per
    // expert it runs the 64×64 kernel (m64n64 wgmma): the same sums up to the tensor cores' order.
    const bool rows128 = gemm_fp8_tile_rows((T * kMoeTopK + E - 1) / E) == 128;
    for (const GemmTile tile : {GemmTile::k128x128, GemmTile::k128x192tma2}) {
      f.gemm_tile = tile;
      dout.poison();
      launch_moe(f, ws.get(), nullptr);
      const auto old_path = dout.download();
      if (rows128) {
        EXPECT_TRUE(old_path == out) << shape << ": differs from convert + launch_moe (tile " << static_cast<int>(tile)
                                     << ")";
      } else {
        const double e = rel_error_bf16(out, old_path);
        // (0 if m64n64 and m64n128 wgmma sum alike, as expected; else bf16/fp8 re-rounding noise of h.)
        report("moe mxfp4 vs convert+fp8 (64-row tiles)", shape, e, 5e-3);
        EXPECT_LT(e, 5e-3) << shape << ": far from convert + launch_moe";
        break;
      }
    }
    // ---- the CPU reference on the converted experts (mxfp4_tiled_to_fp8_cpu, once) ----
    std::vector<uint8_t> h8w1(size_t(E) * fp8_tiled_group_bytes(2 * I, H)),
        h8w2(size_t(E) * fp8_tiled_group_bytes(H, I));
    std::vector<float> h8s1(scale_count(E, 2 * I, H)), h8s2(scale_count(E, H, I));
    mxfp4_tiled_to_fp8_cpu(w1.data(), h8w1.data(), h8s1.data(), E, 2 * I, H);
    mxfp4_tiled_to_fp8_cpu(w2.data(), h8w2.data(), h8s2.data(), E, H, I);
    EXPECT_TRUE(d8w1.download() == h8w1 && d8s1.download() == h8s1) << shape << ": GPU and CPU conversions differ";
    MoeParams h = d;
    h.x = x.data();
    h.logits = logits.data();
    h.residual = c.residual ? res.data() : nullptr;
    h.b1 = b1.data();
    h.b2 = b2.data();
    h.weights_mxfp4 = false;
    h.weights_tiled = true;
    h.w1 = h8w1.data();
    h.w1_scales = h8s1.data();
    h.w2 = h8w2.data();
    h.w2_scales = h8s2.data();
    const auto ref = moe_reference(h);
    const double err = rel_error_bf16(out, ref);
    report("moe mxfp4", shape, err, kTolBf16Requant);
    EXPECT_LT(err, kTolBf16Requant) << shape;
  }
  // moe_cpu's own MXFP4 path (converting inside) on a small block equals the converted reference.
  {
    const int T = 9, E = 4, H = 256, I = 192;
    const auto w1 = random_mxfp4_tiled(E, 2 * I, H, 7, 110, 124), w2 = random_mxfp4_tiled(E, H, I, 8, 110, 124);
    const auto x = random_bf16(size_t(T) * H, rng, 1.0f), logits = random_bf16(size_t(T) * E, rng, 2.0f);
    const auto b1 = random_bf16(size_t(E) * 2 * I, rng, 0.5f), b2 = random_bf16(size_t(E) * H, rng, 0.5f);
    DeviceBuffer<uint8_t> dw1(w1), dw2(w2), ws(moe_workspace_bytes(T, E, H, I));
    DeviceBuffer<uint16_t> dx(x), dl(logits), db1(b1), db2(b2), dout(size_t(T) * H);
    MoeParams p;
    p.num_tokens = T;
    p.num_experts = p.num_local_experts = E;
    p.hidden = H;
    p.inter = I;
    p.weights_mxfp4 = true;
    MoeParams h = p, d = p;
    std::vector<uint16_t> ref(size_t(T) * H);
    h.x = x.data(), h.logits = logits.data(), h.w1 = w1.data(), h.w2 = w2.data(), h.b1 = b1.data(), h.b2 = b2.data();
    h.out = ref.data();
    moe_cpu(h);
    d.x = dx.get(), d.logits = dl.get(), d.w1 = dw1.get(), d.w2 = dw2.get(), d.b1 = db1.get(), d.b2 = db2.get();
    d.out = dout.get();
    dout.poison();
    launch_moe(d, ws.get(), nullptr);
    const double err = rel_error_bf16(dout.download(), ref);
    report("moe mxfp4", "9tok E4 h256 i192 (moe_cpu mxfp4)", err, kTolBf16Requant);
    EXPECT_LT(err, kTolBf16Requant);
  }
}

}  // namespace
}  // namespace gossamer::kernels
