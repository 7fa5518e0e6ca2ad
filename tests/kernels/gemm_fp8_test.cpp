// FP8 block-scaled GEMM (plain, bias and SwiGLU epilogues) and the MoE block against CPU references.
#include "kernels/gemm_fp8.h"

#include <algorithm>

#include "gpt_oss_cases.h"
#include "kernel_test_utils.h"
#include "kernels/gemm_fp8_cublaslt.h"
#include "kernels/moe.h"
#include "kernels/quantize_fp8.h"
#include "moe_problem.h"

namespace gossamer::kernels {
namespace {

using namespace test;

struct GemmCase {
  int m, n, k;
  GemmEpilogue epi;
};

TEST(GemmFp8Kernel, MatchesReference) {
  GOSSAMER_REQUIRE_GPU();
  std::mt19937 rng(10);
  const GemmCase cases[] = {{1, 256, 2880, GemmEpilogue::kBias},     {1, 5120, 2880, GemmEpilogue::kBias},
                            {16, 2880, 4096, GemmEpilogue::kBias},   {9, 1024, 2880, GemmEpilogue::kSwiGlu},
                            {16, 2880, 2880, GemmEpilogue::kBias},   {64, 384, 2880, GemmEpilogue::kBias},
                            {65, 320, 576, GemmEpilogue::kBias},     {130, 640, 2880, GemmEpilogue::kBias},
                            {300, 264, 1024, GemmEpilogue::kBias},   {17, 768, 576, GemmEpilogue::kSwiGlu},
                            {200, 640, 2880, GemmEpilogue::kSwiGlu}, {3, 136, 48, GemmEpilogue::kBias},
                            {257, 384, 8192, GemmEpilogue::kBias},   {520, 2880, 2880, GemmEpilogue::kBias},
                            {384, 5760, 2880, GemmEpilogue::kSwiGlu}};
  CublasLtFp8Gemm cublaslt;
  int cublaslt_runs = 0;
  for (const auto& c : cases) {
    const int kb = (c.k + 127) / 128, nb = (c.n + 127) / 128;
    const int64_t lda = (c.k + 15) / 16 * 16;
    auto a = random_fp8_normal(size_t(c.m) * lda, rng);
    auto as = random_scales(size_t(c.m) * kb, rng, 0.001f, 0.01f);
    auto b = random_fp8_normal(size_t(c.n) * c.k, rng);
    auto bs = random_scales(size_t(nb) * kb, rng, 0.0005f, 0.002f);
    auto bias = random_bf16(c.n, rng, 1.0f);
    const int out_cols = c.epi == GemmEpilogue::kSwiGlu ? c.n / 2 : c.n;
    DeviceBuffer<uint8_t> da(a), db(b);
    DeviceBuffer<float> das(as), dbs(bs);
    DeviceBuffer<uint16_t> dbias(bias), dout(size_t(c.m) * out_cols);
    dout.poison();
    GemmFp8Params p;
    p.a = da.get();
    p.lda = lda;
    p.a_scales = das.get();
    p.b = db.get();
    p.b_scales = dbs.get();
    p.bias = dbias.get();
    p.out = dout.get();
    p.ldc = out_cols;
    p.M = c.m;
    p.N = c.n;
    p.K = c.k;
    p.epilogue = c.epi;
    std::vector<uint16_t> ref(dout.size());
    GemmFp8Params r = p;
    r.a = a.data();
    r.a_scales = as.data();
    r.b = b.data();
    r.b_scales = bs.data();
    r.bias = bias.data();
    r.out = ref.data();
    gemm_fp8_cpu(r);
    const std::string shape = std::to_string(c.m) + "x" + std::to_string(c.n) + "x" + std::to_string(c.k) +
                              (c.epi == GemmEpilogue::kSwiGlu ? " swiglu" : " bias");
    // Every tile shape, with B row-major and tile-major.
    struct Variant {
      GemmTile tile;
      const char* name;
    };
    DeviceBuffer<uint8_t> dbt(tiled(b, 1, c.n, c.k));
    for (const Variant v :
         {Variant{GemmTile::kAuto, ""}, Variant{GemmTile::k64x128, " tile64x128"},
          Variant{GemmTile::k128x128, " tile128x128"}, Variant{GemmTile::k64x64, " tile64x64"},
          Variant{GemmTile::kAuto, " b tile-major"}, Variant{GemmTile::k128x128, " tile128x128 b tile-major"},
          Variant{GemmTile::k128x192tma2, " tile128x192 tma cluster 2 b tile-major"},
          Variant{GemmTile::k128x256tma2, " tile128x256 tma cluster 2 b tile-major"},
          Variant{GemmTile::k128x256tma2b, " tile128x256 tma cluster 2 sharing B b tile-major"}}) {
      dout.poison();
      GemmFp8Params q = p;
      q.tile = v.tile;
      if (std::string(v.name).find("tile-major") != std::string::npos) {
        q.b = dbt.get();
        q.b_tiled = true;
      }
      launch_gemm_fp8(q, c.m, nullptr);
      const double err = rel_error_bf16(dout.download(), ref);
      report("gemm_fp8", shape + v.name, err, kTolBf16);
      EXPECT_LT(err, kTolBf16) << shape << v.name;
    }
    // cuBLASLt (gemm_fp8_cublaslt.h, B row-major) where the product sends it: bias epilogue, rows above
    // the GEMV's; the model's shapes must be supported.
    if (c.epi == GemmEpilogue::kBias && gemm_fp8_cublaslt_preferred(c.m, c.n, c.k)) {
      const bool model_shape = (c.n == 2880 && (c.k == 2880 || c.k == 4096)) || c.n == 5120;
      const bool supported = cublaslt.supports(p);
      if (model_shape) {
        EXPECT_TRUE(supported) << "cuBLASLt has no algorithm for " << shape << ": " << cublaslt.note(p);
      }
      if (supported) {
        dout.poison();
        ASSERT_TRUE(cublaslt.launch(p, nullptr));
        const double err = rel_error_bf16(dout.download(), ref);
        report("gemm_fp8", shape + " cublaslt (" + cublaslt.note(p) + ")", err, kTolBf16);
        EXPECT_LT(err, kTolBf16) << shape << " cublaslt";
        ++cublaslt_runs;
      }
    }
  }
  EXPECT_GE(cublaslt_runs, 3) << "the cuBLASLt path ran on too few shapes to be tested";
}

TEST(MoeRouteKernel, TopFourWithTiesToLowerIndex) {
  GOSSAMER_REQUIRE_GPU();
  std::mt19937 rng(11);
  for (const int experts : {32, 128}) {
    const int tokens = 97;
    auto logits = random_bf16(size_t(tokens) * experts, rng, 2.0f);
    // Token 0: ties everywhere; token 1: ties at the 4th/5th place.
    for (int e = 0; e < experts; ++e) logits[e] = float_to_bf16(1.0f);
    for (int e = 0; e < experts; ++e) logits[experts + e] = float_to_bf16(e == 7 ? 3.0f : (e % 5 == 1 ? 2.0f : 0.0f));
    DeviceBuffer<uint16_t> dl(logits);
    DeviceBuffer<int32_t> dids(size_t(tokens) * 4);
    DeviceBuffer<float> dw(size_t(tokens) * 4);
    dids.poison();
    dw.poison();
    launch_moe_route({dl.get(), dids.get(), dw.get(), tokens, experts}, nullptr);
    std::vector<int32_t> ids(dids.size());
    std::vector<float> w(dw.size());
    moe_route_cpu({logits.data(), ids.data(), w.data(), tokens, experts});
    EXPECT_EQ(dids.download(), ids);
    EXPECT_EQ((std::vector<int32_t>{ids[0], ids[1], ids[2], ids[3]}), (std::vector<int32_t>{0, 1, 2, 3}));
    EXPECT_EQ((std::vector<int32_t>{ids[4], ids[5], ids[6], ids[7]}), (std::vector<int32_t>{7, 1, 6, 11}));
    const double err = rel_error(dw.download(), w);
    report("moe_route", std::to_string(tokens) + "x" + std::to_string(experts), err, 1e-5);
    EXPECT_LT(err, 1e-5);
  }
}

TEST(MoeKernel, MatchesReference) {
  GOSSAMER_REQUIRE_GPU();
  std::mt19937 rng(12);
  std::vector<MoeProblemCase> cases = {
      {1, 32, 0, 32, 576, 320, false},  {5, 8, 0, 8, 512, 384, true},
      {300, 32, 0, 32, 576, 320, true}, {64, 8, 4, 4, 576, 320, false},
      {8, 4, 0, 4, 2880, 2880, true},   {512, 4, 0, 4, 512, 256, true},  // 512 rows per expert: 128-row tiles
      {160, 8, 2, 4, 2880, 2880, false}};                                // 128-row tiles at the model's width, EP slice
  // The bench's prefill blocks small enough for the CPU reference (moe_cpu), at the model's sizes; at
  // E = 128 the model's width is 3 GB of host weights (minutes of host work), so 128 experts run narrow.
  for (const gpt_oss::MoeCase& m : gpt_oss::kMoePrefill) {
    if (m.tokens > 16) continue;
    const int width = m.experts <= 32 ? 2880 : 256;
    cases.push_back({m.tokens, m.experts, 0, m.experts, width, width, true});
  }
  for (const auto& c : cases) {
    const int H = c.hidden, I = c.inter, E = c.local;
    MoeProblem m(c, rng, random_fp8_normal);
    DeviceBuffer<uint16_t> dout(size_t(c.tokens) * H);
    DeviceBuffer<uint8_t> ws(moe_workspace_bytes(c.tokens, E, H, I));
    dout.poison();
    ws.poison();
    MoeParams p = m.dev;
    p.out = dout.get();
    launch_moe(p, ws.get(), nullptr);
    const auto out = dout.download();
    // Tile-major expert weights (the model's layout): bit-identical, with each 128-row tile (the cp.async and
    // both TMA tiles) where the plan uses 128-row tiles (the tile choice only applies there).
    // NOTE: the tiled copies are made once per case: at E = 128 they are 3 GB of host work each.
    DeviceBuffer<uint8_t> dw1t(tiled(m.w1, E, 2 * I, H)), dw2t(tiled(m.w2, E, H, I));
    const bool rows128 = gemm_fp8_tile_rows((c.tokens * kMoeTopK + E - 1) / E) == 128;
    // At 128-row tiles the tile-major gate_up quantizes h in its epilogue (moe.h), against the row-major
    // run's separate pass: bit-identical as well. Sharing B: pairs of row tiles within one expert share it,
    // pairs across experts (the 160-token EP slice: one tile per expert) load their own.
    for (const GemmTile tile : {GemmTile::kAuto, GemmTile::k128x128, GemmTile::k128x192tma2, GemmTile::k128x256tma2,
                                GemmTile::k128x256tma2b}) {
      if (tile != GemmTile::kAuto && !rows128) continue;
      MoeParams t = p;
      t.w1 = dw1t.get();
      t.w2 = dw2t.get();
      t.weights_tiled = true;
      t.gemm_tile = tile;
      for (const bool once : {false, true}) {  // MoeParams::quantize_tokens_once: the same bits
        t.quantize_tokens_once = once;
        dout.poison();
        launch_moe(t, ws.get(), nullptr);
        EXPECT_EQ(dout.download(), out) << "tile-major experts, tile " << static_cast<int>(tile) << ", " << c.tokens
                                        << " tokens" << (once ? ", tokens quantized once" : "");
      }
    }
    std::vector<uint16_t> ref(dout.size());
    MoeParams r = m.host;
    r.out = ref.data();
    moe_cpu(r);
    const double err = rel_error_bf16(out, ref);
    const std::string shape = std::to_string(c.tokens) + "tok E" + std::to_string(c.experts) + " local[" +
                              std::to_string(c.expert_begin) + "+" + std::to_string(E) + "] h" + std::to_string(H) +
                              " i" + std::to_string(I);
    report("moe", shape, err, kTolBf16Requant);
    EXPECT_LT(err, kTolBf16Requant) << shape;
  }
}

// combine_deferred on the grouped GEMMs (the model's prefill): launch_moe stops after the down GEMM and the next norm
// sums the pieces (moe_deferred_combine → RmsNormParams::moe_y); residual and normed output equal the combining launch
// followed by the norm bit for bit: 64- and 128-row tiles, an EP slice (other ranks' pairs skipped), tile-major FP8
// experts as the model holds them.
TEST(MoeKernel, DeferredCombineIntoNorm) {
  GOSSAMER_REQUIRE_GPU();
  std::mt19937 rng(27);
  for (const MoeProblemCase& c :
       {MoeProblemCase{300, 32, 0, 32, 576, 320, false}, MoeProblemCase{512, 4, 0, 4, 512, 256, false},
        MoeProblemCase{64, 8, 4, 4, 576, 320, false}}) {
    MoeProblem m(c, rng, random_fp8_normal);
    expect_deferred_combine_into_norm(
        c, m, moe_workspace_bytes(c.tokens, c.local, c.hidden, c.inter),
        [](const MoeParams& p, void* ws) { launch_moe(p, ws, nullptr); },
        [&](void* ws) { return moe_deferred_combine(ws, c.tokens, c.local, c.hidden, c.inter, false, false); }, rng);
  }
}

}  // namespace
}  // namespace gossamer::kernels
