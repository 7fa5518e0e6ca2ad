// The decode QKV GEMV with RoPE and the K/V cache write fused into its epilogue (gemv_fp8_rope.h) against
// the unfused chain it replaces, launch_gemv_fp8 + launch_rope: bit for bit in q_out, k_out, v_out and every
// cache byte (bf16 and fp8 caches, padding slots, TP-sized head counts, a cluster split, with and without
// PDL). Against the CPU reference gemv_fp8_rope_cpu the bound is kTolBf16 (libm's cos/sin there).
#include "kernels/gemv_fp8_rope.h"

#include <algorithm>
#include <numeric>
#include <string>

#include "kernel_test_utils.h"
#include "kernels/fp8_tiled.h"

namespace gossamer::kernels {
namespace {

using namespace test;

struct FusedCase {
  const char* name;
  int tokens, q_heads, kv_heads;
  bool kv_fp8;
  bool plain_kv;  // k_out / v_out written too
  int cluster;    // GemvFp8Params::cluster (0 = the rule)
  bool pdl;
};

// One launch's outputs: q [T, q_heads, 64], k/v [T, kv_heads, 64] bf16, caches [rows, kv_heads, 64] bf16
// or e4m3 bytes; all poisoned before the launch.
struct Outputs {
  DeviceBuffer<uint16_t> q, k, v;
  DeviceBuffer<uint8_t> k_cache, v_cache;
  Outputs(int tokens, int q_heads, int kv_heads, int cache_rows, int cache_elem_bytes)
      : q(size_t(tokens) * q_heads * 64),
        k(size_t(tokens) * kv_heads * 64),
        v(size_t(tokens) * kv_heads * 64),
        k_cache(size_t(cache_rows) * kv_heads * 64 * cache_elem_bytes),
        v_cache(size_t(cache_rows) * kv_heads * 64 * cache_elem_bytes) {
    for (auto* b : {&q, &k, &v}) b->poison();
    k_cache.poison();
    v_cache.poison();
  }
  void aim(RopeParams& r, bool plain_kv) {
    r.q_out = q.get();
    r.k_out = plain_kv ? k.get() : nullptr;
    r.v_out = plain_kv ? v.get() : nullptr;
    r.k_cache = k_cache.get();
    r.v_cache = v_cache.get();
  }
};

TEST(GemvFp8RopeKernel, EqualsGemvThenRopeBitForBit) {
  GOSSAMER_REQUIRE_GPU();
  std::mt19937 rng(41);
  const int K = 2880;
  const FusedCase cases[] = {
      {"20b M=1", 1, 64, 8, false, false, 0, true},
      {"20b M=8 +k/v out", 8, 64, 8, false, true, 0, true},
      {"20b M=3 fp8 KV", 3, 64, 8, true, false, 0, true},
      {"20b M=5 fp8 KV no-pdl", 5, 64, 8, true, true, 0, false},
      {"TP4 shard M=4", 4, 16, 2, false, false, 0, true},
      {"TP8 shard M=8 fp8 KV cluster=2", 8, 8, 1, true, true, 2, true},
      {"20b M=2 cluster=4", 2, 64, 8, false, false, 4, true},
  };
  for (const FusedCase& c : cases) {
    const int N = (c.q_heads + 2 * c.kv_heads) * 64, T = c.tokens;
    const int cache_rows = 4 * T + 5;
    const int elem = c.kv_fp8 ? 1 : 2;
    const auto x = random_bf16(size_t(T) * K, rng, 1.0f);
    const auto w = random_fp8_bytes(size_t(N) * K, rng);
    const auto scales = random_scales(scale_count(1, N, K), rng, 1e-4f, 4e-4f);
    const auto bias = random_bf16(N, rng, 0.5f);
    std::vector<int32_t> pos(T);
    std::uniform_int_distribution<int> pd(0, 131071);
    for (auto& p : pos) p = pd(rng);
    pos[0] = 0;
    std::vector<int64_t> slots(T);  // distinct odd rows (a sliding ring's slots look the same), one padding
    std::iota(slots.begin(), slots.end(), 0);
    std::shuffle(slots.begin(), slots.end(), rng);
    for (auto& s : slots) s = 2 * s + 1;
    if (T > 1) slots[T - 1] = -1;
    std::vector<float> kv_scales(2 * c.kv_heads);
    for (int h = 0; h < 2 * c.kv_heads; ++h) kv_scales[h] = 0.25f * float(1 + h % 5);

    DeviceBuffer<uint16_t> dx(x), dbias(bias), dqkv(size_t(T) * N);
    DeviceBuffer<uint8_t> dw(tiled(w, 1, N, K));
    DeviceBuffer<float> dscales(scales), dkv_scales(kv_scales);
    DeviceBuffer<int32_t> dpos(pos);
    DeviceBuffer<int64_t> dslots(slots);
    GemvFp8Params g;
    g.x = dx.get();
    g.ldx = K;
    g.w = dw.get();
    g.w_tiled = true;
    g.w_scales = dscales.get();
    g.bias = dbias.get();
    g.out = dqkv.get();
    g.ldc = N;
    g.M = T;
    g.N = N;
    g.K = K;
    g.cluster = c.cluster;
    g.programmatic_launch = c.pdl;
    RopeParams r;
    r.qkv = dqkv.get();
    r.qkv_stride = N;
    r.positions = dpos.get();
    r.kv_fp8 = c.kv_fp8;
    r.k_scale = c.kv_fp8 ? dkv_scales.get() : nullptr;
    r.v_scale = c.kv_fp8 ? dkv_scales.get() + c.kv_heads : nullptr;
    r.slots = dslots.get();
    r.num_tokens = T;
    r.num_q_heads = c.q_heads;
    r.num_kv_heads = c.kv_heads;
    const std::vector<float> inv_freq = rope_inv_freq(RopeScaling{}, kHeadDim);
    std::copy(inv_freq.begin(), inv_freq.end(), r.inv_freq.begin());
    r.concentration = rope_concentration(RopeScaling{});

    // ---- unfused: GEMV → qkv, then RoPE + K/V write ----
    Outputs want(T, c.q_heads, c.kv_heads, cache_rows, elem);
    want.aim(r, c.plain_kv);
    launch_gemv_fp8(g, nullptr);
    launch_rope(r, nullptr);
    // ---- fused ----
    Outputs got(T, c.q_heads, c.kv_heads, cache_rows, elem);
    got.aim(r, c.plain_kv);
    launch_gemv_fp8_rope(g, r, nullptr);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << c.name;

    const std::string name = c.name;
    const auto q = got.q.download();
    EXPECT_TRUE(q == want.q.download()) << name << ": q differs";
    EXPECT_TRUE(got.k.download() == want.k.download()) << name << ": k_out differs";
    EXPECT_TRUE(got.v.download() == want.v.download()) << name << ": v_out differs";
    EXPECT_TRUE(got.k_cache.download() == want.k_cache.download()) << name << ": k cache differs";
    EXPECT_TRUE(got.v_cache.download() == want.v_cache.download()) << name << ": v cache differs";

    // ---- CPU reference (host memory throughout) ----
    std::vector<uint16_t> ref_q(size_t(T) * c.q_heads * 64);
    std::vector<uint8_t> ref_kc(got.k_cache.size(), 0xFF), ref_vc(got.v_cache.size(), 0xFF);
    GemvFp8Params hg = g;
    const auto w_tiled = tiled(w, 1, N, K);
    hg.x = x.data();
    hg.w = w_tiled.data();
    hg.w_scales = scales.data();
    hg.bias = bias.data();
    RopeParams hr = r;
    hr.positions = pos.data();
    hr.slots = slots.data();
    hr.q_out = ref_q.data();
    hr.k_out = hr.v_out = nullptr;
    hr.k_cache = ref_kc.data();
    hr.v_cache = ref_vc.data();
    hr.k_scale = c.kv_fp8 ? kv_scales.data() : nullptr;
    hr.v_scale = c.kv_fp8 ? kv_scales.data() + c.kv_heads : nullptr;
    gemv_fp8_rope_cpu(hg, hr);
    const double err = rel_error_bf16(q, ref_q);
    report("gemv_fp8_rope", name + " q", err, kTolBf16);
    EXPECT_LT(err, kTolBf16) << name;
    // The same cache rows written (padding and unused rows stay poisoned on both sides).
    const auto kc = got.k_cache.download();
    size_t written = 0;
    for (size_t i = 0; i < kc.size(); i += size_t(elem) * 64) {
      const bool ref_written =
          !std::all_of(ref_kc.begin() + i, ref_kc.begin() + i + elem * 64, [](uint8_t b) { return b == 0xFF; });
      const bool gpu_written =
          !std::all_of(kc.begin() + i, kc.begin() + i + elem * 64, [](uint8_t b) { return b == 0xFF; });
      EXPECT_EQ(gpu_written, ref_written) << name << ": cache row " << i / (elem * 64);
      written += gpu_written;
    }
    EXPECT_EQ(written, size_t(T > 1 ? T - 1 : T) * c.kv_heads) << name;
  }
}

}  // namespace
}  // namespace gossamer::kernels
