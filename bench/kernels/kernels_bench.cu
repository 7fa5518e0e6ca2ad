// Kernel benchmarks at gpt-oss shapes. Prints one markdown table row per case:
// | kernel | shape | µs | TFLOP/s | GB/s | baseline µs | ours/baseline speed | vs ceiling |
// Ceilings (measured on the H200 by the team, docs/PERF.md): copy 4,260 GB/s; fp8
// block-scaled cuBLASLt 1,225 TFLOP/s at 8192³; bf16 dense 791 TFLOP/s. Working sets smaller than
// ~4× L2 are rotated over several copies so bandwidth figures are HBM, not L2.
#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/cuda/device_buffer.h"
#include "kernels/attention.h"
#include "kernels/cuda_utils.h"
#include "kernels/embedding.h"
#include "kernels/fp8_tiled.h"
#include "kernels/gemm_bf16.h"
#include "kernels/gemm_fp8.h"
#include "kernels/gemm_fp8_cublaslt.h"
#include "kernels/gemm_w4a8.h"
#include "kernels/gemv_fp8.h"
#include "kernels/gemv_mxfp4.h"
#include "kernels/gpt_oss_cases.h"  // tests/kernels/: the cases the kernel tests check
#include "kernels/moe.h"
#include "kernels/mxfp4_convert.h"
#include "kernels/mxfp4_tiled.h"
#include "kernels/quantize_fp8.h"
#include "kernels/rmsnorm.h"
#include "kernels/rope.h"
#include "kernels/sampling.h"

using namespace gossamer::kernels;

namespace {

constexpr double kCopyGBs = 4260.0;
constexpr double kFp8BlockTflops = 1225.0;
constexpr double kBf16Tflops = 791.0;
constexpr size_t kRotateBytes = 256ull << 20;

__global__ void fill_kernel(uint8_t* p, size_t n, uint32_t seed, int kind, float lo, float hi) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    uint32_t h = uint32_t(i) * 2654435761u ^ seed;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    const float u = (h & 0xFFFFFF) / 16777216.0f;
    if (kind == 0) p[i] = uint8_t(h & 0x77);                             // fp8 without NaN/huge
    if (kind == 1) reinterpret_cast<float*>(p)[i] = lo + (hi - lo) * u;  // fp32 uniform
    if (kind == 2) {                                                     // bf16 uniform
      const __nv_bfloat16 b = __float2bfloat16(lo + (hi - lo) * u);
      reinterpret_cast<__nv_bfloat16*>(p)[i] = b;
    }
    if (kind == 3) reinterpret_cast<int32_t*>(p)[i] = int32_t(h % uint32_t(hi));  // ints in [0, hi)
    if (kind == 4) {  // tiled MXFP4 (mxfp4_tiled.h): random codes, E8M0 scale bytes in [lo, hi]
      const bool scale = i % kMxfp4TileBytes >= 4096;
      p[i] = scale ? uint8_t(int(lo) + int(h % uint32_t(hi - lo + 1))) : uint8_t(h);
    }
  }
}

// Device memory of the benches: core/cuda/device_buffer.h's buffer, never empty (zero-size shapes still
// get a valid pointer).
struct Buf : gossamer::cuda::DeviceBuffer {
  explicit Buf(size_t b) : DeviceBuffer(std::max<size_t>(b, 256)), bytes(b) {}
  size_t bytes;  // as asked for
  template <typename T>
  T* as() const {
    return get<T>();
  }
};
uint32_t g_seed = 1;
void fill(const Buf& b, int kind, size_t n, float lo = 0.f, float hi = 1.f) {
  fill_kernel<<<1024, 256>>>(b.as<uint8_t>(), n, g_seed++ * 7919u, kind, lo, hi);
  GOSSAMER_CUDA_CHECK_LAUNCH();
}
void fill_fp8(const Buf& b) {
  fill(b, 0, b.bytes);
}
void fill_f32(const Buf& b, float lo, float hi) {
  fill(b, 1, b.bytes / 4, lo, hi);
}
void fill_bf16(const Buf& b, float lo, float hi) {
  fill(b, 2, b.bytes / 2, lo, hi);
}

// Mean µs per call over `iters` after warm-up; fn(i) runs call i (i selects the rotated copy).
double time_us(const std::function<void(int)>& fn, int iters = 20) {
  for (int i = 0; i < 3; ++i) fn(i);
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  cudaEventRecord(a);
  for (int i = 0; i < iters; ++i) fn(i);
  cudaEventRecord(b);
  GOSSAMER_CUDA_CHECK(cudaEventSynchronize(b));
  float ms = 0;
  cudaEventElapsedTime(&ms, a, b);
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  GOSSAMER_CUDA_CHECK(cudaGetLastError());
  return ms * 1000.0 / iters;
}

using gpt_oss::linear;

int copies_for(size_t bytes) {
  return static_cast<int>(std::clamp<size_t>(kRotateBytes / std::max<size_t>(bytes, 1) + 1, 1, 16));
}

void row(const char* kernel, const std::string& shape, double us, double flops, double bytes, double base_us,
         const char* ceiling_kind) {
  const double tflops = flops > 0 ? flops / us / 1e6 : 0;
  const double gbs = bytes > 0 ? bytes / us / 1e3 : 0;
  char tf[32] = "-", gb[32] = "-", base[48] = "-", ceil[48] = "-";
  if (flops > 0) std::snprintf(tf, sizeof tf, "%.1f", tflops);
  if (bytes > 0) std::snprintf(gb, sizeof gb, "%.0f", gbs);
  if (base_us > 0) std::snprintf(base, sizeof base, "%.1f (%.2fx)", base_us, base_us / us);
  if (std::strcmp(ceiling_kind, "copy") == 0) std::snprintf(ceil, sizeof ceil, "%.0f%% of copy", 100 * gbs / kCopyGBs);
  if (std::strcmp(ceiling_kind, "fp8") == 0)
    std::snprintf(ceil, sizeof ceil, "%.0f%% of fp8-blk", 100 * tflops / kFp8BlockTflops);
  if (std::strcmp(ceiling_kind, "bf16") == 0)
    std::snprintf(ceil, sizeof ceil, "%.0f%% of bf16", 100 * tflops / kBf16Tflops);
  std::printf("| %s | %s | %.1f | %s | %s | %s | %s |\n", kernel, shape.c_str(), us, tf, gb, base, ceil);
  std::fflush(stdout);
}

// ---- cuBLASLt baseline: the product's own cuBLASLt path (gemm_fp8_cublaslt.h: scale restaging and bias
// included), where it has an algorithm and the product would send the shape ----
void bench_gemm(CublasLtFp8Gemm& lt, const char* name, int M, int N, int K) {
  const int kb = (K + 127) / 128, nb = (N + 127) / 128;
  const size_t wbytes = size_t(N) * K;
  const int copies = copies_for(wbytes);
  std::vector<Buf*> w, s;
  std::vector<const void*> wp;
  std::vector<const float*> sp;
  for (int c = 0; c < copies; ++c) {
    w.push_back(new Buf(wbytes));
    // NOTE: generous padding: cuBLASLt may round scale-tensor dimensions up.
    s.push_back(new Buf(size_t(nb + 8) * (kb + 8) * 4 * 2));
    fill_fp8(*w.back());
    fill_f32(*s.back(), 1e-3f, 2e-3f);
    wp.push_back(w.back()->get());
    sp.push_back(s.back()->as<float>());
  }
  Buf x(size_t(M) * K), xs(size_t((M + 127) / 128 * 128 + 128) * (kb + 8) * 4), bias(size_t(N) * 2),
      out(size_t(M) * N * 2);
  fill_fp8(x);
  fill_f32(xs, 1e-3f, 2e-3f);
  fill_bf16(bias, -1.f, 1.f);
  GemmFp8Params p;
  p.a = x.as<uint8_t>();
  p.lda = K;
  p.a_scales = xs.as<float>();
  p.bias = bias.as<uint16_t>();
  p.out = out.as<uint16_t>();
  p.ldc = N;
  p.M = M;
  p.N = N;
  p.K = K;
  // The baseline where the product would send the shape (gemm_fp8_cublaslt_preferred: not the decode
  // GEMV's rows, nor the unembedding's width, where cuBLASLt aborted on the H200).
  double base = -1;
  if (gemm_fp8_cublaslt_preferred(M, N, K)) {
    p.b = static_cast<const uint8_t*>(wp[0]);
    p.b_scales = sp[0];
    if (lt.supports(p)) {
      base = time_us([&](int i) {
        p.b = static_cast<const uint8_t*>(wp[i % copies]);
        p.b_scales = sp[i % copies];
        lt.launch(p, nullptr);
      });
    }
    std::printf("<!-- cuBLASLt %s M=%d N=%d K=%d: %s -->\n", name, M, N, K, lt.note(p).c_str());
  }
  const double flops = 2.0 * M * N * K;
  const double bytes = double(N) * K + double(M) * K + 2.0 * M * N;
  const std::string shape =
      std::string(name) + " M=" + std::to_string(M) + " N=" + std::to_string(N) + " K=" + std::to_string(K);
  // Large M: the 128-row tiles and 64×128; small M: the default (64×64).
  // The TMA kernel reads B tile-major (the product's layout; the random bytes serve either layout).
  for (const GemmTile tile :
       M > 64 ? std::vector<GemmTile>{GemmTile::k128x128, GemmTile::k128x192tma2, GemmTile::k128x256tma2,
                                      GemmTile::k128x256tma2b, GemmTile::k64x128}
              : std::vector<GemmTile>{GemmTile::kAuto}) {
    p.b_tiled = tile != GemmTile::k128x128 && tile != GemmTile::k64x128 && tile != GemmTile::kAuto;
    p.tile = tile;
    const double us = time_us([&](int i) {
      p.b = static_cast<const uint8_t*>(wp[i % copies]);
      p.b_scales = sp[i % copies];
      launch_gemm_fp8(p, M, nullptr);
    });
    const char* label = tile == GemmTile::k64x128         ? "gemm_fp8 (+bias) 64x128"
                        : tile == GemmTile::k128x192tma2  ? "gemm_fp8 (+bias) 128x192 tma cluster 2"
                        : tile == GemmTile::k128x256tma2  ? "gemm_fp8 (+bias) 128x256 tma cluster 2"
                        : tile == GemmTile::k128x256tma2b ? "gemm_fp8 (+bias) 128x256 tma cluster 2 share B"
                                                          : "gemm_fp8 (+bias)";
    row(label, shape, us, flops, bytes, base, M <= 64 ? "copy" : "fp8");
  }
  for (auto* b : w) delete b;
  for (auto* b : s) delete b;
}

// RMSNorm with the fused residual add at the shared token counts (gpt_oss_cases.h).
void bench_rmsnorm(int T) {
  const int H = gpt_oss::kHidden;
  Buf x(size_t(T) * H * 2), res(size_t(T) * H * 2), w(H * 2), out(size_t(T) * H * 2);
  fill_bf16(x, -2, 2);
  fill_bf16(res, -2, 2);
  fill_bf16(w, 0.5f, 1.5f);
  RmsNormParams p{x.as<uint16_t>(), res.as<uint16_t>(), w.as<uint16_t>(), out.as<uint16_t>(), T, H, 1e-5f};
  const double us = time_us([&](int) { launch_rmsnorm(p, nullptr); });
  const std::string shape = std::to_string(T) + "x" + std::to_string(H);
  row("rmsnorm+residual", shape, us, 0, 4.0 * T * H * 2, 0, "copy");
  if (T <= 8) return;
  // A prefill's attention norm feeding the FP8 QKV GEMM: bf16 rows then launch_quantize_fp8, against the norm writing
  // the quantized rows itself (RmsNormParams::out_q; the baseline column holds the two launches' time).
  const int groups = ceil_div(H, 128);
  Buf q(size_t(T) * H), scales(size_t(T) * groups * 4);
  const QuantizeFp8Params quant{out.as<uint16_t>(), H, q.as<uint8_t>(), H, scales.as<float>(), T, H};
  const double two = time_us([&](int) {
    launch_rmsnorm(p, nullptr);
    launch_quantize_fp8(quant, nullptr);
  });
  RmsNormParams fused = p;
  fused.out = nullptr;
  fused.out_q = q.as<uint8_t>();
  fused.ldq = H;
  fused.out_scales = scales.as<float>();
  const double one = time_us([&](int) { launch_rmsnorm(fused, nullptr); });
  row("rmsnorm+residual, then quantize_fp8", shape, two, 0, 11.0 * T * H + T * groups * 4, 0, "copy");
  row("rmsnorm+residual → fp8 rows", shape, one, 0, 7.0 * T * H + T * groups * 4, two, "copy");
}

// RoPE of q and k with the paged K/V write at the shared token counts (gpt_oss_cases.h); random positions,
// consecutive cache slots.
void bench_rope(int T) {
  const int stride = (kNumQHeads + 2 * kNumKvHeads) * kHeadDim;
  Buf qkv(size_t(T) * stride * 2), pos(T * 4), q(size_t(T) * kNumQHeads * kHeadDim * 2),
      kc(size_t(T) * kNumKvHeads * kHeadDim * 2), vc(size_t(T) * kNumKvHeads * kHeadDim * 2), slots(T * 8);
  fill_bf16(qkv, -2, 2);
  fill(pos, 3, T, 0, 131072);
  std::vector<int64_t> hs(T);
  for (int i = 0; i < T; ++i) hs[i] = i;
  cudaMemcpy(slots.get(), hs.data(), T * 8, cudaMemcpyHostToDevice);
  RopeParams p;
  p.qkv = qkv.as<uint16_t>();
  p.positions = pos.as<int32_t>();
  p.q_out = q.as<uint16_t>();
  p.k_cache = kc.as<uint16_t>();
  p.v_cache = vc.as<uint16_t>();
  p.slots = slots.as<int64_t>();
  p.num_tokens = T;
  const std::vector<float> inv_freq = rope_inv_freq(RopeScaling{}, kHeadDim);
  std::copy(inv_freq.begin(), inv_freq.end(), p.inv_freq.begin());
  p.concentration = rope_concentration(RopeScaling{});
  const double us = time_us([&](int) { launch_rope(p, nullptr); });
  row("rope+kv_write", std::to_string(T) + " tok, 64q/8kv", us, 0, double(T) * (stride + stride) * 2, 0, "copy");
}

void bench_small() {
  const int T = 16384, H = 2880;
  for (const int tokens : gpt_oss::kRmsNormTokens) bench_rmsnorm(tokens);
  for (const int tokens : gpt_oss::kRopeTokens) bench_rope(tokens);
  {
    const int vocab = 201088;
    Buf table(size_t(vocab) * H * 2), ids(T * 4), out(size_t(T) * H * 2);
    fill_bf16(table, -1, 1);
    fill(ids, 3, T, 0, vocab);
    EmbeddingParams p{table.as<uint16_t>(), ids.as<int32_t>(), out.as<uint16_t>(), T, H, vocab};
    const double us = time_us([&](int) { launch_embedding(p, nullptr); });
    row("embedding", "16384x2880", us, 0, 2.0 * T * H * 2, 0, "copy");
  }
  {
    Buf x(size_t(T) * H * 2), q(size_t(T) * H), s(size_t(T) * 23 * 4);
    fill_bf16(x, -3, 3);
    QuantizeFp8Params p{x.as<uint16_t>(), H, q.as<uint8_t>(), H, s.as<float>(), T, H};
    const double us = time_us([&](int) { launch_quantize_fp8(p, nullptr); });
    row("quantize_fp8 1x128", "16384x2880", us, 0, double(T) * H * 3 + T * 23 * 4, 0, "copy");
  }
  {  // the MoE's form: 8,192 tokens' rows gathered into 32,768 (token, expert) rows
    const int tokens = 8192, rows = 4 * tokens;
    Buf x(size_t(tokens) * H * 2), q(size_t(rows) * H), s(size_t(rows) * 23 * 4), index(size_t(rows) * 4);
    fill_bf16(x, -3, 3);
    fill(index, 3, rows, 0, tokens);
    QuantizeFp8Params p{x.as<uint16_t>(), H, q.as<uint8_t>(), H, s.as<float>(), rows, H};
    p.row_index = index.as<int32_t>();
    const double us = time_us([&](int) { launch_quantize_fp8(p, nullptr); });
    row("quantize_fp8 1x128 gathered", "32768 of 8192 x2880", us, 0, double(rows) * H * 3 + rows * 23 * 4, 0, "copy");
  }
  {
    const int E = 32, rows = 5760, cols = 2880;
    Buf blocks(size_t(E) * rows * cols / 2), scales(size_t(E) * rows * cols / 32), out(size_t(E) * rows * cols),
        osc(size_t(E) * 45 * 23 * 4);
    fill_fp8(blocks);
    fill(scales, 0, scales.bytes);
    Mxfp4ToFp8Params p{blocks.as<uint8_t>(), scales.as<uint8_t>(), out.as<uint8_t>(), osc.as<float>(), E, rows, cols};
    const double us = time_us([&](int) { launch_mxfp4_to_fp8(p, nullptr); }, 5);
    row("mxfp4_to_fp8", "32x5760x2880 (one 20b gate_up)", us, 0, double(E) * rows * cols * (0.5 + 1.0 / 32 + 1.0), 0,
        "copy");
  }
}

// One MoE block at gpt-oss sizes (hidden = inter = 2880) with random FP8 experts, row-major weights;
// `logit_copies` router outputs to rotate over (so repeated calls route differently).
struct MoeBench {
  static constexpr int kH = 2880, kI = 2880;
  MoeBench(int T, int E, int logit_copies)
      : T(T),
        E(E),
        logit_copies(logit_copies),
        w1(size_t(E) * 2 * kI * kH),
        w2(size_t(E) * kH * kI),
        w1s(size_t(E) * 45 * 23 * 4),
        w2s(size_t(E) * 23 * 23 * 4),
        b1(size_t(E) * 2 * kI * 2),
        b2(size_t(E) * kH * 2),
        x(size_t(T) * kH * 2),
        logits(size_t(logit_copies) * T * E * 2),
        out(size_t(T) * kH * 2) {
    fill_fp8(w1);
    fill_fp8(w2);
    fill_f32(w1s, 1e-4f, 3e-4f);
    fill_f32(w2s, 1e-4f, 3e-4f);
    fill_bf16(b1, -0.5f, 0.5f);
    fill_bf16(b2, -0.5f, 0.5f);
    fill_bf16(x, -2, 2);
    fill_bf16(logits, -4, 4);
    p.x = x.as<uint16_t>();
    p.logits = logits.as<uint16_t>();
    p.out = out.as<uint16_t>();
    p.w1 = w1.as<uint8_t>();
    p.w1_scales = w1s.as<float>();
    p.b1 = b1.as<uint16_t>();
    p.w2 = w2.as<uint8_t>();
    p.w2_scales = w2s.as<float>();
    p.b2 = b2.as<uint16_t>();
    p.num_tokens = T;
    p.num_experts = E;
    p.num_local_experts = E;
    p.hidden = kH;
    p.inter = kI;
  }
  const uint16_t* logits_of(int i) const { return logits.as<uint16_t>() + size_t(i % logit_copies) * T * E; }
  double flops() const { return double(T) * 4 * 2 * (2.0 * kI * kH + double(kH) * kI); }
  double expert_bytes() const { return double(std::min(E, T * 4)) * 3.0 * kI * kH; }  // touched experts, distinct
  std::string shape() const { return std::to_string(T) + " tok, E=" + std::to_string(E) + ", top-4"; }

  int T, E, logit_copies;
  Buf w1, w2, w1s, w2s, b1, b2, x, logits, out;
  MoeParams p;
};

void bench_moe(int T, int E) {
  MoeBench m(T, E, 1);
  Buf ws(moe_workspace_bytes(T, E, MoeBench::kH, MoeBench::kI));
  // Row-major experts (cp.async GEMM, h quantized in its own pass), then the model's tile-major layout with
  // each TMA tile (128-row tiles, h quantized in gate_up's epilogue; the random bytes serve either layout).
  for (const GemmTile tile :
       {GemmTile::kAuto, GemmTile::k128x192tma2, GemmTile::k128x256tma2, GemmTile::k128x256tma2b}) {
    const bool tiled = tile != GemmTile::kAuto;
    if (tiled && T * 4 / E <= 64) continue;  // 64-row tiles: no TMA kernel
    m.p.weights_tiled = tiled;
    m.p.gemm_tile = tile;
    const double us = time_us([&](int) { launch_moe(m.p, ws.get(), nullptr); }, 10);
    row(!tiled                            ? "moe (route..combine)"
        : tile == GemmTile::k128x192tma2  ? "moe tma 128x192 cluster 2"
        : tile == GemmTile::k128x256tma2b ? "moe tma 128x256 cluster 2 share B"
                                          : "moe tma 128x256 cluster 2",
        m.shape(), us, m.flops(), m.expert_bytes(), 0, T <= 16 ? "copy" : "fp8");
  }
  if (T * 4 / E > 64) {  // MoeParams::quantize_tokens_once on the default tile
    m.p.weights_tiled = true;
    m.p.gemm_tile = GemmTile::kAuto;
    m.p.quantize_tokens_once = true;
    const double us = time_us([&](int) { launch_moe(m.p, ws.get(), nullptr); }, 10);
    row("moe tma auto, tokens quantized once", m.shape(), us, m.flops(), m.expert_bytes(), 0, "fp8");
    m.p.quantize_tokens_once = false;
  }
  // Where the time goes in the model's configuration (tile-major experts, the tile launch_gemm_fp8 picks):
  // launch_moe's phase events, the mean over the launches (each phase's µs beside its share; an event
  // between two launches ends any PDL overlap of theirs, so the sum can exceed the plain launch's time).
  // With 128-row tiles, again with the tokens quantized once (MoeParams::quantize_tokens_once).
  m.p.weights_tiled = true;
  m.p.gemm_tile = GemmTile::kAuto;
  std::array<cudaEvent_t, kNumMoePhases + 1> events{};
  for (cudaEvent_t& event : events) GOSSAMER_CUDA_CHECK(cudaEventCreate(&event));
  m.p.phase_events = events.data();
  for (const bool once : {false, true}) {
    if (once && T * 4 / E <= 64) break;
    m.p.quantize_tokens_once = once;
    std::array<double, kNumMoePhases> phase_us{};
    const int launches = 10;
    for (int i = 0; i < launches + 2; ++i) {
      launch_moe(m.p, ws.get(), nullptr);
      GOSSAMER_CUDA_CHECK(cudaEventSynchronize(events[kNumMoePhases]));
      for (int phase = 0; i >= 2 && phase < kNumMoePhases; ++phase) {  // the first two warm up
        float ms = 0;
        GOSSAMER_CUDA_CHECK(cudaEventElapsedTime(&ms, events[phase], events[phase + 1]));
        phase_us[static_cast<size_t>(phase)] += ms * 1000.0 / launches;
      }
    }
    double total = 0;
    for (double us : phase_us) total += us;
    for (int phase = 0; phase < kNumMoePhases; ++phase) {
      const double us = phase_us[static_cast<size_t>(phase)];
      std::printf("  moe phase %-16s %-28s %9.1f us  (%4.1f%%)%s\n", moe_phase_name(static_cast<MoePhase>(phase)),
                  m.shape().c_str(), us, 100.0 * us / total, once ? "  tokens quantized once" : "");
    }
  }
  m.p.quantize_tokens_once = false;
  m.p.phase_events = nullptr;
  for (cudaEvent_t event : events) cudaEventDestroy(event);
}

// ---- prefill MoE on MXFP4 experts: FP8 experts vs the W4A16 and W4A8 GEMMs on MXFP4 ----
// One layer (hidden = inter = 2880, E experts, top-4, random routing), three rows per shape: launch_moe on FP8
// tile-major experts; launch_moe with weights_mxfp4 on the W4A16 GEMMs (gemm_w4a16.h) and on the W4A8 GEMMs
// (mxfp4_w4a8, gemm_w4a8.h; the model's path past CudaModel::kMxfp4W4A8MinRowsPerExpert). Baseline column: the FP8
// row. MXFP4 scale bytes are uniform in [112, 124]. GB/s counts the experts' stored weight bytes (FP8 row 1 B, MXFP4
// rows 0.53 B per weight; every expert is routed at these sizes); TFLOP/s the routed pairs' GEMM work; the ceiling
// column is copy at 256 tokens, FP8 block-scaled cuBLASLt above. Once per E, the conversion of one layer's experts to
// FP8 (launch_mxfp4_tiled_to_fp8: the FP8 experts of --load-format dummy --weights fp8). Weights are 0.8–3.2 GB:
// no rotation needed.
struct MoeMxfp4Bench {
  static constexpr int kH = 2880, kI = 2880;
  explicit MoeMxfp4Bench(int E)
      : E(E),
        g1(mxfp4_tiled_group_bytes(2 * kI, kH)),
        g2(mxfp4_tiled_group_bytes(kH, kI)),
        f1(size_t(E) * fp8_tiled_group_bytes(2 * kI, kH)),
        f2(size_t(E) * fp8_tiled_group_bytes(kH, kI)),
        c1(f1.bytes),
        c2(f2.bytes),
        w1(size_t(E) * g1),
        w2(size_t(E) * g2),
        w1s(size_t(E) * 45 * 23 * 4),
        w2s(size_t(E) * 23 * 23 * 4),
        c1s(w1s.bytes),
        c2s(w2s.bytes),
        b1(size_t(E) * 2 * kI * 2),
        b2(size_t(E) * kH * 2),
        r1(size_t(E) * 2 * kI),
        r2(size_t(E) * kH) {
    fill_fp8(f1);
    fill_fp8(f2);
    fill_f32(w1s, 1e-4f, 3e-4f);
    fill_f32(w2s, 1e-4f, 3e-4f);
    fill_mxfp4(112, 124);
    fill_bf16(b1, -0.5f, 0.5f);
    fill_bf16(b2, -0.5f, 0.5f);
  }
  // Random MXFP4 experts and their row exponents (the W4A8 GEMMs').
  void fill_mxfp4(int e_lo, int e_hi) {
    fill(w1, 4, w1.bytes, float(e_lo), float(e_hi));
    fill(w2, 4, w2.bytes, float(e_lo), float(e_hi));
    launch_mxfp4_tiled_row_exponents(w1.as<uint8_t>(), E, 2 * kI, kH, r1.as<uint8_t>(), nullptr);
    launch_mxfp4_tiled_row_exponents(w2.as<uint8_t>(), E, kH, kI, r2.as<uint8_t>(), nullptr);
  }

  void run(int T) {
    Buf x(size_t(T) * kH * 2), logits(size_t(T) * E * 2), out(size_t(T) * kH * 2),
        ws(moe_workspace_bytes(T, E, kH, kI));
    fill_bf16(x, -2, 2);
    fill_bf16(logits, -4, 4);
    MoeParams p;
    p.x = x.as<uint16_t>();
    p.logits = logits.as<uint16_t>();
    p.out = out.as<uint16_t>();
    p.b1 = b1.as<uint16_t>();
    p.b2 = b2.as<uint16_t>();
    p.num_tokens = T;
    p.num_experts = E;
    p.num_local_experts = E;
    p.hidden = kH;
    p.inter = kI;
    MoeParams fp8 = p;
    fp8.weights_tiled = true;
    fp8.w1 = f1.as<uint8_t>();
    fp8.w1_scales = w1s.as<float>();
    fp8.w2 = f2.as<uint8_t>();
    fp8.w2_scales = w2s.as<float>();
    MoeParams w4a16 = p;
    w4a16.weights_mxfp4 = true;
    w4a16.w1 = w1.as<uint8_t>();
    w4a16.w2 = w2.as<uint8_t>();
    MoeParams w4a8 = w4a16;
    w4a8.mxfp4_w4a8 = true;
    w4a8.w1_row_exponents = r1.as<uint8_t>();
    w4a8.w2_row_exponents = r2.as<uint8_t>();
    const int iters = T >= 2048 ? 5 : 10;
    const double us_fp8 = time_us([&](int) { launch_moe(fp8, ws.get(), nullptr); }, iters);
    const double us_w4a16 = time_us([&](int) { launch_moe(w4a16, ws.get(), nullptr); }, iters);
    const double us_w4a8 = time_us([&](int) { launch_moe(w4a8, ws.get(), nullptr); }, iters);
    const double flops = double(T) * kMoeTopK * 2 * (2.0 * kI * kH + double(kH) * kI);
    const double fp8_bytes = double(E) * 3.0 * kI * kH, mx_bytes = double(E) * double(g1 + g2);
    const std::string shape = std::to_string(T) + " tok, E=" + std::to_string(E) + ", top-4";
    const char* ceiling = T <= 256 ? "copy" : "fp8";
    row("moe fp8 experts (route..combine)", shape, us_fp8, flops, fp8_bytes, 0, ceiling);
    row("moe mxfp4 w4a16 (route..combine)", shape, us_w4a16, flops, mx_bytes, us_fp8, ceiling);
    row("moe mxfp4 w4a8 (route..combine)", shape, us_w4a8, flops, mx_bytes, us_fp8, ceiling);
    if (T == 256) {  // the conversion alone (one layer's experts; GB/s counts MXFP4 read + FP8 written)
      const double us_pass = time_us(
          [&](int) {
            launch_mxfp4_tiled_to_fp8(w1.as<uint8_t>(), c1.as<uint8_t>(), c1s.as<float>(), E, 2 * kI, kH, nullptr);
            launch_mxfp4_tiled_to_fp8(w2.as<uint8_t>(), c2.as<uint8_t>(), c2s.as<float>(), E, kH, kI, nullptr);
          },
          iters);
      row("mxfp4_tiled_to_fp8, one layer's experts", "E=" + std::to_string(E), us_pass, 0,
          mx_bytes + double(f1.bytes + f2.bytes), 0, "copy");
    }
  }

  // One W4A16 call, or W4A8 (for a profiler: ncu -k regex:gemm_w4a ... profile-mxfp4 / profile-w4a8: its first
  // launch is gate_up).
  void once(int T, bool w4a8 = false) {
    Buf x(size_t(T) * kH * 2), logits(size_t(T) * E * 2), out(size_t(T) * kH * 2),
        ws(moe_workspace_bytes(T, E, kH, kI));
    fill_bf16(x, -2, 2);
    fill_bf16(logits, -4, 4);
    MoeParams p;
    p.x = x.as<uint16_t>();
    p.logits = logits.as<uint16_t>();
    p.out = out.as<uint16_t>();
    p.b1 = b1.as<uint16_t>();
    p.b2 = b2.as<uint16_t>();
    p.num_tokens = T;
    p.num_experts = p.num_local_experts = E;
    p.hidden = kH;
    p.inter = kI;
    p.weights_mxfp4 = true;
    p.w1 = w1.as<uint8_t>();
    p.w2 = w2.as<uint8_t>();
    p.mxfp4_w4a8 = w4a8;
    p.w1_row_exponents = r1.as<uint8_t>();
    p.w2_row_exponents = r2.as<uint8_t>();
    launch_moe(p, ws.get(), nullptr);
    GOSSAMER_CUDA_CHECK(cudaDeviceSynchronize());
  }

  int E;
  size_t g1, g2;
  Buf f1, f2, c1, c2, w1, w2, w1s, w2s, c1s, c2s, b1, b2, r1, r2;
};

// ---- decode GEMV (gemv_fp8.h) vs quantize_fp8 + gemm_fp8 (the prefill path) at the same shape ----
// GB/s counts the weight bytes only (N·K): the quantity the decode GEMV exists to stream. "gemv_fp8" rows
// use programmatic dependent launch, so back-to-back launches overlap one kernel's weight prefetch with
// the previous one's tail (as in a PDL-chained decode step); "no-PDL" rows are plain stream order.
// A dense decode GEMV's random bf16 activations [M, K], bias [N] and output [M, N or N/2], and its
// parameters without weights (w, w_scales, w_tiled are the caller's).
struct GemvBenchProblem {
  GemvBenchProblem(int M, int N, int K, GemmEpilogue epi)
      : out_cols(epi == GemmEpilogue::kSwiGlu ? N / 2 : N),
        x(size_t(M) * K * 2),
        bias(size_t(N) * 2),
        out(size_t(M) * out_cols * 2) {
    fill_bf16(x, -2, 2);
    fill_bf16(bias, -1, 1);
    p.x = x.as<uint16_t>();
    p.ldx = K;
    p.bias = bias.as<uint16_t>();
    p.out = out.as<uint16_t>();
    p.ldc = out_cols;
    p.M = M;
    p.N = N;
    p.K = K;
    p.epilogue = epi;
  }
  int out_cols;
  Buf x, bias, out;
  GemvFp8Params p;
};

void bench_gemv(const char* name, int M, int N, int K, GemmEpilogue epi, bool baseline = true) {
  const int kb = (K + 127) / 128, nb = (N + 127) / 128;
  const size_t wbytes = size_t(N) * K;
  const size_t alloc = std::max<size_t>(wbytes, size_t((N + 63) / 64 * 64) * ((K + 63) / 64 * 64));
  const int copies = copies_for(wbytes);
  std::vector<Buf*> w, s;
  for (int c = 0; c < copies; ++c) {
    w.push_back(new Buf(alloc));
    s.push_back(new Buf(size_t(nb) * kb * 4));
    fill_fp8(*w.back());
    fill_f32(*s.back(), 1e-3f, 2e-3f);
  }
  const int64_t ldq = (K + 15) / 16 * 16;
  GemvBenchProblem problem(M, N, K, epi);
  GemvFp8Params& p = problem.p;
  Buf xq(size_t(M) * ldq), xs(size_t(M) * kb * 4);
  // Baseline: the prefill path at this shape (activations quantized to fp8, then the FP8 GEMM).
  GemmFp8Params g;
  g.a = xq.as<uint8_t>();
  g.lda = ldq;
  g.a_scales = xs.as<float>();
  g.bias = p.bias;
  g.out = p.out;
  g.ldc = p.ldc;
  g.M = M;
  g.N = N;
  g.K = K;
  g.epilogue = epi;
  const double base = !baseline ? 0.0 : time_us([&](int i) {
    launch_quantize_fp8({p.x, K, xq.as<uint8_t>(), ldq, xs.as<float>(), M, K}, nullptr);
    g.b = w[i % copies]->as<uint8_t>();
    g.b_scales = s[i % copies]->as<float>();
    launch_gemm_fp8(g, M, nullptr);
  });
  const std::string shape = std::string(name) + " M=" + std::to_string(M) + " N=" + std::to_string(N) +
                            " K=" + std::to_string(K) + (epi == GemmEpilogue::kSwiGlu ? " swiglu" : "");
  // The model's layout (tile-major weights, PDL; its ring filled by bulk copies, then by cp.async), then row-major
  // with and without PDL. Random bytes: the layout changes only the order in which they are read.
  for (const auto& [pdl, tile_major, bulk] : {std::tuple{true, true, true}, std::tuple{true, true, false},
                                              std::tuple{true, false, true}, std::tuple{false, false, true}}) {
    p.programmatic_launch = pdl;
    p.w_tiled = tile_major;
    p.bulk_copies = bulk;
    const double us = time_us([&](int i) {
      p.w = w[i % copies]->as<uint8_t>();
      p.w_scales = s[i % copies]->as<float>();
      launch_gemv_fp8(p, nullptr);
    });
    row(tile_major ? (bulk ? "gemv_fp8" : "gemv_fp8 cp.async ring")
        : pdl      ? "gemv_fp8 row-major"
                   : "gemv_fp8 row-major no-PDL",
        shape, us, 2.0 * M * N * K, double(wbytes), base, "copy");
  }
  for (auto* b : w) delete b;
  for (auto* b : s) delete b;
}

// The read ceiling of one launch: a kernel that only streams `bytes` of HBM (16-byte loads that bypass
// L1, a sum so nothing is optimised away), back to back like the GEMVs, over rotated copies. What a
// decode GEMV of the same weight bytes could reach at best, launch and ramp included.
__global__ void read_kernel(const uint4* __restrict__ src, size_t n, uint32_t* sink) {
  uint32_t acc = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    const uint4 v = __ldcs(src + i);
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x12345678u) *sink = acc;
}

// copies_for(bytes) buffers of random fp8 bytes; call i reads buffer i mod count (HBM, not L2).
struct RotatedFp8 {
  explicit RotatedFp8(size_t bytes) {
    for (int c = 0; c < copies_for(bytes); ++c) {
      buffers.push_back(std::make_unique<Buf>(bytes));
      fill_fp8(*buffers.back());
    }
  }
  const Buf& operator[](int i) const { return *buffers[static_cast<size_t>(i) % buffers.size()]; }
  std::vector<std::unique_ptr<Buf>> buffers;
};

// A decode GEMV's weights as RotatedFp8 copies of `wbytes` (tile-major FP8 or tiled MXFP4), each with its own
// [⌈N/128⌉, ⌈K/128⌉] fp32 block scales uniform in [lo, hi]: call i points p at copy i mod count.
struct RotatedGemvWeights {
  RotatedGemvWeights(size_t wbytes, int N, int K, float lo, float hi) : weights(wbytes) {
    for (size_t c = 0; c < weights.buffers.size(); ++c) {
      scales.push_back(std::make_unique<Buf>(size_t((N + 127) / 128) * ((K + 127) / 128) * 4));
      fill_f32(*scales.back(), lo, hi);
    }
  }
  void point(GemvFp8Params& p, int i) const {
    p.w = weights[i].as<uint8_t>();
    p.w_scales = scales[static_cast<size_t>(i) % scales.size()]->as<float>();
  }
  RotatedFp8 weights;
  std::vector<std::unique_ptr<Buf>> scales;
};

void bench_read(const char* name, size_t bytes) {
  const RotatedFp8 b(bytes);
  Buf sink(4);
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  const double us =
      time_us([&](int i) { read_kernel<<<sms * 4, 512>>>(b[i].as<uint4>(), bytes / 16, sink.as<uint32_t>()); });
  row("read ceiling", std::string(name) + " " + std::to_string(bytes >> 10) + " KiB", us, 0, double(bytes), 0, "copy");
}

// The decode GEMV's access pattern without its arithmetic: a CTA of 8 warps per 64-row tile of an
// [N, K] fp8 matrix, warp w reading K steps w, w + 8, … (per step 64 rows × 64 bytes: each lane 8 chunks
// of 16 bytes, rows g + 8c, columns 16t), three steps in flight. `tiled` reads the same bytes as if the
// matrix were stored tile-major (each 64 × 64 step contiguous, 4 KiB). Separates DRAM access-pattern
// limits from instruction limits.
__global__ void __launch_bounds__(256)
    read_pattern_kernel(const uint8_t* __restrict__ w, int N, int K, bool tiled, uint32_t* sink) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int n0 = blockIdx.x * 64, k_steps = K / 64;
  uint32_t acc = 0;
  for (int s0 = warp; s0 < k_steps; s0 += 24) {
    uint4 v[3][8];
#pragma unroll
    for (int u = 0; u < 3; ++u) {
      const int s = s0 + 8 * u;
#pragma unroll
      for (int c = 0; c < 8; ++c) {
        if (s < k_steps) {
          const size_t off = tiled ? (size_t(blockIdx.x) * k_steps + s) * 4096 + c * 512 + lane * 16
                                   : size_t(n0 + g + 8 * c) * K + s * 64 + 16 * t;
          v[u][c] = __ldcs(reinterpret_cast<const uint4*>(w + off));
        } else {
          v[u][c] = make_uint4(0, 0, 0, 0);
        }
      }
    }
#pragma unroll
    for (int u = 0; u < 3; ++u)
#pragma unroll
      for (int c = 0; c < 8; ++c) acc ^= v[u][c].x ^ v[u][c].y ^ v[u][c].z ^ v[u][c].w;
  }
  if (acc == 0x12345678u && N < 0) *sink = acc;
}

void bench_read_pattern(const char* name, int N, int K) {
  const size_t bytes = size_t(N) * K;
  const RotatedFp8 b(bytes);
  Buf sink(4);
  for (const bool tiled : {false, true}) {
    const double us = time_us(
        [&](int i) { read_pattern_kernel<<<N / 64, 256>>>(b[i].as<uint8_t>(), N, K, tiled, sink.as<uint32_t>()); });
    row(tiled ? "read gemv pattern, tile-major" : "read gemv pattern, row-major", std::string(name), us, 0,
        double(bytes), 0, "copy");
  }
}

// MoE block at decode batch sizes: launch_moe_decode vs launch_moe. The router logits rotate over 8
// random copies so consecutive launches pick different experts (HBM, not L2). GB/s counts the weights of
// the touched experts (assumed distinct).
void bench_moe_decode(int T, int E, bool baseline = true) {
  MoeBench m(T, E, 8);
  Buf ws(moe_decode_workspace_bytes(T, MoeBench::kH, MoeBench::kI)),
      ws_base(moe_workspace_bytes(T, E, MoeBench::kH, MoeBench::kI));
  MoeParams& p = m.p;
  const double base = !baseline ? 0.0
                                : time_us(
                                      [&](int i) {
                                        p.logits = m.logits_of(i);
                                        launch_moe(p, ws_base.get(), nullptr);
                                      },
                                      16);
  p.weights_tiled = true;  // the model's layout (20b/120b shapes are multiples of 64: same bytes)
  const double us = time_us(
      [&](int i) {
        p.logits = m.logits_of(i);
        launch_moe_decode(p, ws.get(), nullptr);
      },
      16);
  p.weights_tiled = false;
  const double us_row_major = time_us(
      [&](int i) {
        p.logits = m.logits_of(i);
        launch_moe_decode(p, ws.get(), nullptr);
      },
      16);
  row("moe_decode (route..combine)", m.shape(), us, m.flops(), m.expert_bytes(), base, "copy");
  row("moe_decode row-major", m.shape(), us_row_major, m.flops(), m.expert_bytes(), base, "copy");
}

// ---- MXFP4 decode GEMV (gemv_mxfp4.h) vs the FP8 GEMV (tile-major, PDL) at the same shape ----
// GB/s counts the MXFP4 bytes read (codes and scales: 4.25 bits per weight); the baseline column is the
// FP8 GEMV of the same shape (twice the bytes). Random tile bytes: scale codes ≤ 0x77 (finite).
void bench_gemv_mxfp4(const char* name, int M, int N, int K, GemmEpilogue epi) {
  const size_t wbytes = size_t(mxfp4_tiled_group_bytes(N, K)), fp8_bytes = size_t(fp8_tiled_group_bytes(N, K));
  const int copies = copies_for(wbytes), fp8_copies = copies_for(fp8_bytes);
  std::vector<std::unique_ptr<Buf>> w, w8, s8;
  for (int c = 0; c < copies; ++c) {
    w.push_back(std::make_unique<Buf>(wbytes));
    fill_fp8(*w.back());
  }
  for (int c = 0; c < fp8_copies; ++c) {
    w8.push_back(std::make_unique<Buf>(fp8_bytes));
    s8.push_back(std::make_unique<Buf>(size_t((N + 127) / 128) * ((K + 127) / 128) * 4));
    fill_fp8(*w8.back());
    fill_f32(*s8.back(), 1e-3f, 2e-3f);
  }
  GemvBenchProblem problem(M, N, K, epi);
  GemvFp8Params& p = problem.p;
  p.w_tiled = true;
  const double base = time_us([&](int i) {
    p.w = w8[i % fp8_copies]->as<uint8_t>();
    p.w_scales = s8[i % fp8_copies]->as<float>();
    launch_gemv_fp8(p, nullptr);
  });
  GemvMxfp4Params q = gemv_mxfp4_params_of(p);
  const double us = time_us([&](int i) {
    q.w = w[i % copies]->as<uint8_t>();
    launch_gemv_mxfp4(q, nullptr);
  });
  const std::string shape = std::string(name) + " M=" + std::to_string(M) + " N=" + std::to_string(N) +
                            " K=" + std::to_string(K) + (epi == GemmEpilogue::kSwiGlu ? " swiglu" : "");
  row("gemv_mxfp4", shape, us, 2.0 * M * N * K, double(wbytes), base, "copy");
}

// ---- decode GEMV launch shapes (GemvFp8Params::stages / cluster) at the batch-1 and batch-8 shapes ----
// Every (ring depth, cluster) pair the kernels have against the launch's rule (the baseline column), FP8 and MXFP4,
// back to back with PDL as in a decode step: what the rule should pick. MXFP4 adds every GemvMxfp4Shape
// (4-warp CTAs, deeper rings). "4x" rows are one token's four experts as one dense matrix (the grouped
// launch has the same CTAs: tiles × 4 slots).
void bench_gemv_tune(const char* name, int M, int N, int K, GemmEpilogue epi, bool mxfp4) {
  const size_t wbytes = mxfp4 ? size_t(mxfp4_tiled_group_bytes(N, K)) : size_t(fp8_tiled_group_bytes(N, K));
  const RotatedGemvWeights weights(wbytes, N, K, 1e-3f, 2e-3f);
  GemvBenchProblem problem(M, N, K, epi);
  GemvFp8Params& p = problem.p;
  p.w_tiled = true;
  auto time_shape = [&](int stages, int cluster, GemvMxfp4Shape mxfp4_shape = GemvMxfp4Shape::kRule,
                        bool single_row = false) {
    p.stages = stages;
    p.cluster = cluster;
    return time_us([&](int i) {
      weights.point(p, i);
      if (mxfp4) {
        GemvMxfp4Params q = gemv_mxfp4_params_of(p);
        q.shape = mxfp4_shape;
        q.single_row = single_row;
        launch_gemv_mxfp4(q, nullptr);
      } else {
        launch_gemv_fp8(p, nullptr);
      }
    });
  };
  const double rule = time_shape(0, 0);
  const std::string shape = std::string(mxfp4 ? "mxfp4 " : "fp8 ") + name + " M=" + std::to_string(M) +
                            " N=" + std::to_string(N) + " K=" + std::to_string(K);
  row("gemv rule", shape, rule, 2.0 * M * N * K, double(wbytes), 0, "copy");
  // The MXFP4 GEMV has one ring depth (2 and 4 stages measured slower); the FP8 one 3 and 4.
  for (const int stages : mxfp4 ? std::vector<int>{0} : std::vector<int>{3, 4}) {
    for (const int cluster : {1, 2, 4, 8}) {
      char kernel[48];
      if (mxfp4) {
        std::snprintf(kernel, sizeof kernel, "gemv cluster=%d", cluster);
      } else {
        std::snprintf(kernel, sizeof kernel, "gemv stages=%d cluster=%d", stages, cluster);
      }
      row(kernel, shape, time_shape(stages, cluster), 2.0 * M * N * K, double(wbytes), rule, "copy");
    }
  }
  if (!mxfp4) return;
  for (const GemvMxfp4Shape s : kGemvMxfp4Shapes) {
    if (s == GemvMxfp4Shape::kRule) continue;
    const std::string kernel = std::string("gemv ") + gemv_mxfp4_shape_name(s);
    row(kernel.c_str(), shape, time_shape(0, 0, s), 2.0 * M * N * K, double(wbytes), rule, "copy");
  }
  if (M != 1) return;
  for (const GemvMxfp4Shape s : kGemvMxfp4Shapes) {  // the single-row kernel (GemvMxfp4Params::single_row)
    const std::string kernel = std::string("gemv single row ") + gemv_mxfp4_shape_name(s);
    row(kernel.c_str(), shape, time_shape(0, 0, s, true), 2.0 * M * N * K, double(wbytes), rule, "copy");
  }
}

// ---- how a decode GEMV's time grows with its row tiles (`gemv-scaling`) ----
// The rule's GEMV at M = 1 over n experts' rows as one dense matrix (n × rows_per_expert rows, K columns;
// n = 1..8), MXFP4 and FP8: µs, against n times the n = 1 time (the baseline column). A time that steps when
// the grid passes the resident CTAs (MXFP4: two per SM, so 4 × 90 gate_up tiles are 1.36 waves) says waves
// bind; one that grows with n at a fixed rate says a per-SM rate (issue or bytes) binds. A stream-K split
// measured slower (docs/PERF.md, sixth session), so waves are not expected to be the answer; this sweep says
// what is, beside `run_validation_h200.sh profile`'s stall reasons.
void bench_gemv_scaling(const char* name, int rows_per_expert, int K, GemmEpilogue epi, bool mxfp4) {
  double one = 0;
  for (int n = 1; n <= 8; ++n) {
    const int N = n * rows_per_expert;
    const size_t wbytes = mxfp4 ? size_t(mxfp4_tiled_group_bytes(N, K)) : size_t(fp8_tiled_group_bytes(N, K));
    const RotatedGemvWeights weights(wbytes, N, K, 1e-3f, 2e-3f);
    GemvBenchProblem problem(1, N, K, epi);
    GemvFp8Params& p = problem.p;
    p.w_tiled = true;
    const double us = time_us([&](int i) {
      weights.point(p, i);
      if (mxfp4) {
        launch_gemv_mxfp4(gemv_mxfp4_params_of(p), nullptr);
      } else {
        launch_gemv_fp8(p, nullptr);
      }
    });
    if (n == 1) one = us;
    const std::string shape = std::string(mxfp4 ? "mxfp4 " : "fp8 ") + std::to_string(n) + "x " + name +
                              " M=1 N=" + std::to_string(N) + " K=" + std::to_string(K) + " (" +
                              std::to_string(ceil_div(N, 64)) + " tiles)";
    row("gemv rule", shape, us, 2.0 * N * K, double(wbytes), one * n, "copy");
  }
}

// The MoE decode block with MXFP4 experts vs the same block with FP8 experts (tile-major), as
// bench_moe_decode. GB/s counts the touched experts' MXFP4 bytes (assumed distinct).
void bench_moe_decode_mxfp4(int T, int E) {
  const int H = 2880, I = 2880, logit_copies = 8;
  const size_t g1 = size_t(mxfp4_tiled_group_bytes(2 * I, H)), g2 = size_t(mxfp4_tiled_group_bytes(H, I));
  Buf w1(size_t(E) * g1), w2(size_t(E) * g2), f1(size_t(E) * 2 * I * H), f2(size_t(E) * H * I),
      f1s(size_t(E) * 45 * 23 * 4), f2s(size_t(E) * 23 * 23 * 4), b1(size_t(E) * 2 * I * 2), b2(size_t(E) * H * 2),
      x(size_t(T) * H * 2), logits(size_t(logit_copies) * T * E * 2), out(size_t(T) * H * 2),
      ws(moe_decode_workspace_bytes(T, H, I));
  fill_fp8(w1);
  fill_fp8(w2);
  fill_fp8(f1);
  fill_fp8(f2);
  fill_f32(f1s, 1e-4f, 3e-4f);
  fill_f32(f2s, 1e-4f, 3e-4f);
  fill_bf16(b1, -0.5f, 0.5f);
  fill_bf16(b2, -0.5f, 0.5f);
  fill_bf16(x, -2, 2);
  fill_bf16(logits, -4, 4);
  MoeParams p;
  p.x = x.as<uint16_t>();
  p.out = out.as<uint16_t>();
  p.b1 = b1.as<uint16_t>();
  p.b2 = b2.as<uint16_t>();
  p.num_tokens = T;
  p.num_experts = E;
  p.num_local_experts = E;
  p.hidden = H;
  p.inter = I;
  auto logits_of = [&](int i) { return logits.as<uint16_t>() + size_t(i % logit_copies) * T * E; };
  p.w1 = f1.as<uint8_t>();
  p.w1_scales = f1s.as<float>();
  p.w2 = f2.as<uint8_t>();
  p.w2_scales = f2s.as<float>();
  p.weights_tiled = true;
  const double base = time_us(
      [&](int i) {
        p.logits = logits_of(i);
        launch_moe_decode(p, ws.get(), nullptr);
      },
      16);
  p.w1 = w1.as<uint8_t>();
  p.w2 = w2.as<uint8_t>();
  p.w1_scales = p.w2_scales = nullptr;
  p.weights_tiled = false;
  p.weights_mxfp4 = true;
  const double us = time_us(
      [&](int i) {
        p.logits = logits_of(i);
        launch_moe_decode(p, ws.get(), nullptr);
      },
      16);
  double us_general = 0;
  if (T == 1) {  // the general GEMVs instead of the single-row ones (MoeParams::gemv_single_row, A/B)
    p.gemv_single_row = false;
    us_general = time_us(
        [&](int i) {
          p.logits = logits_of(i);
          launch_moe_decode(p, ws.get(), nullptr);
        },
        16);
    p.gemv_single_row = true;
  }
  const double flops = double(T) * 4 * 2 * (2.0 * I * H + double(H) * I);
  const double bytes = double(std::min(E, T * 4)) * double(g1 + g2);
  const std::string shape = std::to_string(T) + " tok, E=" + std::to_string(E) + ", top-4";
  row("moe_decode mxfp4 (route..combine)", shape, us, flops, bytes, base, "copy");
  if (T == 1) row("moe_decode mxfp4 general GEMVs", shape, us_general, flops, bytes, us, "copy");
}

// ---- MoE decode on the weight-streaming grouped GEMM (launch_moe_stream) vs the model's current path ----
// One layer's experts (hidden = inter = 2880, E experts, FP8 tile-major with block scales or MXFP4), the
// current path as CudaModel::experts runs it without --moe-decode stream: FP8 ≤ 8 tokens launch_moe_decode,
// else launch_moe (FP8 activations); MXFP4 ≤ 64 tokens launch_moe_decode over chunks of 8 tokens, else
// launch_moe on the MXFP4 experts (dequantized inside the GEMM). The router logits rotate over
// 8 random copies, so consecutive calls route differently (HBM, not L2: the touched experts of one call are
// 0.1–3.2 GB). GB/s counts the bytes of the experts the routing touches (each copy routed on the host, the
// mean over copies), against the copy ceiling; both rows count the same bytes.
struct MoeStreamBench {
  static constexpr int kH = 2880, kI = 2880, kCopies = 8;
  MoeStreamBench(int E, bool mxfp4)
      : E(E),
        mxfp4(mxfp4),
        g1(mxfp4 ? mxfp4_tiled_group_bytes(2 * kI, kH) : fp8_tiled_group_bytes(2 * kI, kH)),
        g2(mxfp4 ? mxfp4_tiled_group_bytes(kH, kI) : fp8_tiled_group_bytes(kH, kI)),
        w1(size_t(E) * g1),
        w2(size_t(E) * g2),
        w1s(size_t(E) * 45 * 23 * 4),
        w2s(size_t(E) * 23 * 23 * 4),
        b1(size_t(E) * 2 * kI * 2),
        b2(size_t(E) * kH * 2) {
    fill_fp8(w1);  // MXFP4: scale bytes ≤ 0x77 (finite)
    fill_fp8(w2);
    fill_f32(w1s, 1e-4f, 3e-4f);
    fill_f32(w2s, 1e-4f, 3e-4f);
    fill_bf16(b1, -0.5f, 0.5f);
    fill_bf16(b2, -0.5f, 0.5f);
  }

  void run(int T) {
    Buf x(size_t(T) * kH * 2), logits(size_t(kCopies) * T * E * 2), out(size_t(T) * kH * 2),
        ws(moe_stream_workspace_bytes(T, E, kH, kI)), ws_decode(moe_decode_workspace_bytes(std::min(T, 8), kH, kI)),
        ws_gemm(moe_workspace_bytes(T, E, kH, kI));
    fill_bf16(x, -2, 2);
    fill_bf16(logits, -4, 4);
    // Bytes of the experts each logits copy touches.
    std::vector<uint16_t> host_logits(size_t(kCopies) * T * E);
    GOSSAMER_CUDA_CHECK(
        cudaMemcpy(host_logits.data(), logits.as<uint16_t>(), host_logits.size() * 2, cudaMemcpyDeviceToHost));
    std::vector<int32_t> ids(size_t(T) * kMoeTopK);
    std::vector<float> weights(ids.size());
    double touched = 0;
    for (int c = 0; c < kCopies; ++c) {
      moe_route_cpu({host_logits.data() + size_t(c) * T * E, ids.data(), weights.data(), T, E});
      std::vector<bool> used(E, false);
      for (const int32_t e : ids) used[e] = true;
      touched += double(std::count(used.begin(), used.end(), true)) * double(g1 + g2) / kCopies;
    }
    MoeParams p;
    p.x = x.as<uint16_t>();
    p.out = out.as<uint16_t>();
    p.w1 = w1.as<uint8_t>();
    p.w2 = w2.as<uint8_t>();
    p.w1_scales = mxfp4 ? nullptr : w1s.as<float>();
    p.w2_scales = mxfp4 ? nullptr : w2s.as<float>();
    p.b1 = b1.as<uint16_t>();
    p.b2 = b2.as<uint16_t>();
    p.weights_tiled = !mxfp4;
    p.weights_mxfp4 = mxfp4;
    p.num_tokens = T;
    p.num_experts = E;
    p.num_local_experts = E;
    p.hidden = kH;
    p.inter = kI;
    auto logits_of = [&](int i) { return logits.as<uint16_t>() + size_t(i % kCopies) * T * E; };
    const double us = time_us(
        [&](int i) {
          p.logits = logits_of(i);
          launch_moe_stream(p, ws.get(), nullptr);
        },
        16);
    // The current path.
    const char* base_name = nullptr;
    std::function<void(int)> base_call;
    if (T <= kGemvMaxRows) {
      base_name = mxfp4 ? "moe_decode mxfp4 (current)" : "moe_decode fp8 (current)";
      base_call = [&](int i) {
        p.logits = logits_of(i);
        launch_moe_decode(p, ws_decode.get(), nullptr);
      };
    } else if (mxfp4 && T <= 64) {
      base_name = "moe_decode mxfp4 chunks of 8 (current)";
      base_call = [&](int i) {
        for (int t0 = 0; t0 < T; t0 += kGemvMaxRows) {
          MoeParams chunk = p;
          chunk.num_tokens = std::min(kGemvMaxRows, T - t0);
          chunk.x = p.x + size_t(t0) * kH;
          chunk.logits = logits_of(i) + size_t(t0) * E;
          chunk.out = p.out + size_t(t0) * kH;
          launch_moe_decode(chunk, ws_decode.get(), nullptr);
        }
      };
    } else if (mxfp4) {
      base_name = "moe mxfp4 GEMMs (current)";
      base_call = [&](int i) {
        p.logits = logits_of(i);
        launch_moe(p, ws_gemm.get(), nullptr);
      };
    } else {
      base_name = "moe fp8 GEMMs (current)";
      base_call = [&](int i) {
        p.logits = logits_of(i);
        launch_moe(p, ws_gemm.get(), nullptr);
      };
    }
    const double base = time_us(base_call, 16);
    const double flops = double(T) * kMoeTopK * 2 * (2.0 * kI * kH + double(kH) * kI);
    const std::string shape = std::to_string(T) + " tok, E=" + std::to_string(E) + ", top-4";
    row(mxfp4 ? "moe_stream mxfp4 (route..combine)" : "moe_stream fp8 (route..combine)", shape, us, flops, touched,
        base, "copy");
    row(base_name, shape, base, flops, touched, 0, "copy");
    if (mxfp4 && T > kGemvMaxRows && T <= 64) {  // the W4A16 GEMMs where the model still chunks the GEMV
      const double direct = time_us(
          [&](int i) {
            p.logits = logits_of(i);
            launch_moe(p, ws_gemm.get(), nullptr);
          },
          16);
      row("moe mxfp4 W4A16 GEMMs (not the model's path here)", shape, direct, flops, touched, base, "copy");
    }
  }

  int E;
  bool mxfp4;
  size_t g1, g2;
  Buf w1, w2, w1s, w2s, b1, b2;
};

// The wgmma prefill kernel's variant (AttentionParams::prefill_consumer_warpgroups, prefill_fixed_max).
struct WgmmaVariant {
  int consumer_warpgroups = 2;
  bool fixed_max = false;
};

// Paged attention with sinks at a shared case (gpt_oss_cases.h): pages handed out in order. TFLOP/s count
// the visible positions only; decode GB/s the K/V bytes read. Prefill runs `kernel`, with `base_us` (the
// mma.sync 4-warp kernel's time) in the baseline column. kv_fp8: the FP8 e4m3 cache (--kv-cache-dtype fp8,
// scales 1; random codes of magnitude ≤ 240), its row's baseline the same kernel's bf16 time. Returns µs.
// NOTE: q and K are uniform in [−1, 1], so logits stay within a few units and the lazy softmax's rows (three
// warpgroups) almost never move their max after the first key tile: its rows show the rescale-free bound.
double bench_attention(const gpt_oss::AttentionCase& c, PrefillKernel kernel = PrefillKernel::kMmaSync,
                       double base_us = 0, bool kv_fp8 = false, WgmmaVariant variant = {}) {
  const int page = gpt_oss::kAttentionPage, qh = kNumQHeads, kvh = kNumKvHeads;
  const std::vector<std::pair<int, int>> seqs = gpt_oss::attention_seqs(c);
  std::vector<int32_t> cu_q{0}, kv_lens, indptr{0}, indices;
  int pages = 0, max_kv = 0;
  for (auto [q_len, kv_len] : seqs) {
    cu_q.push_back(cu_q.back() + q_len);
    kv_lens.push_back(kv_len);
    max_kv = std::max(max_kv, kv_len);
    const int np = (kv_len + page - 1) / page;
    for (int i = 0; i < np; ++i) indices.push_back(pages + i);
    pages += np;
    indptr.push_back(indptr.back() + np);
  }
  const int num_seqs = static_cast<int>(seqs.size());
  const long long visible = gpt_oss::attention_visible(c);
  const int tokens = cu_q.back();
  Buf q(size_t(tokens) * qh * 64 * 2), out(size_t(tokens) * qh * 64 * 2), kc(size_t(pages) * page * kvh * 64 * 2),
      vc(size_t(pages) * page * kvh * 64 * 2), sinks(qh * 4), cu(cu_q.size() * 4), kvl(kv_lens.size() * 4),
      ip(indptr.size() * 4), ix(indices.size() * 4);
  fill_bf16(q, -1, 1);
  if (kv_fp8) {
    fill_fp8(kc);
    fill_fp8(vc);
  } else {
    fill_bf16(kc, -1, 1);
    fill_bf16(vc, -1, 1);
  }
  fill_f32(sinks, -1, 1);
  cudaMemcpy(cu.get(), cu_q.data(), cu.bytes, cudaMemcpyHostToDevice);
  cudaMemcpy(kvl.get(), kv_lens.data(), kvl.bytes, cudaMemcpyHostToDevice);
  cudaMemcpy(ip.get(), indptr.data(), ip.bytes, cudaMemcpyHostToDevice);
  cudaMemcpy(ix.get(), indices.data(), ix.bytes, cudaMemcpyHostToDevice);
  AttentionParams p;
  p.q = q.as<uint16_t>();
  p.out = out.as<uint16_t>();
  p.k_cache = kc.get();
  p.v_cache = vc.get();
  p.kv_fp8 = kv_fp8;
  p.page_indptr = ip.as<int32_t>();
  p.page_indices = ix.as<int32_t>();
  p.cu_seqlens_q = cu.as<int32_t>();
  p.kv_lens = kvl.as<int32_t>();
  p.sinks = sinks.as<float>();
  p.num_seqs = num_seqs;
  p.num_tokens = tokens;
  p.page_size = page;
  p.window = c.window;
  p.max_kv_len = max_kv;
  p.prefill_kernel = kernel;
  p.prefill_consumer_warpgroups = variant.consumer_warpgroups;
  p.prefill_fixed_max = variant.fixed_max;
  std::vector<int32_t> tiles_64(tokens / 64 + num_seqs), tiles_128(tokens / 128 + num_seqs),
      tiles_192(tokens / 192 + num_seqs);
  p.num_q_tiles_64 = attention_prefill_tiles(cu_q.data(), num_seqs, 64, false, tiles_64.data());
  p.num_q_tiles_128 = attention_prefill_tiles(cu_q.data(), num_seqs, 128, false, tiles_128.data());
  p.num_q_tiles_192 = attention_prefill_tiles(cu_q.data(), num_seqs, 192, false, tiles_192.data());
  Buf t64(tiles_64.size() * 4), t128(tiles_128.size() * 4), t192(tiles_192.size() * 4);
  cudaMemcpy(t64.get(), tiles_64.data(), t64.bytes, cudaMemcpyHostToDevice);
  cudaMemcpy(t128.get(), tiles_128.data(), t128.bytes, cudaMemcpyHostToDevice);
  cudaMemcpy(t192.get(), tiles_192.data(), t192.bytes, cudaMemcpyHostToDevice);
  p.q_tiles_64 = t64.as<int32_t>();
  p.q_tiles_128 = t128.as<int32_t>();
  p.q_tiles_192 = t192.as<int32_t>();
  Buf ws(c.decode ? attention_decode_workspace_bytes(p) : 0);
  attention_decode_workspace_init(ws.get(), ws.bytes, nullptr);
  p.workspace = ws.get();
  const double us = time_us([&](int) {
    if (c.decode) {
      launch_attention_decode(p, nullptr);
    } else {
      launch_attention_prefill(p, nullptr);
    }
  });
  const double flops = 4.0 * 64 * qh * double(visible);
  // Decode reads each visible key once per KV head (the 8 query heads of a group share it).
  const double kv_bytes = (kv_fp8 ? 1.0 : 2.0) * 2 * 64 * kvh * double(visible) / std::max(1, tokens / num_seqs);
  const bool wgmma = kernel == PrefillKernel::kWgmma;
  std::string shape = c.name;
  shape += c.window > 0 ? " window " + std::to_string(c.window) : std::string(" causal");
  if (kv_fp8) shape += ", kv fp8";
  std::string label = c.decode ? "attention_decode" : !wgmma ? "attention_prefill" : "attention_prefill_wgmma";
  if (!c.decode && wgmma && variant.consumer_warpgroups == 3) label += " 3 consumer warpgroups";
  if (!c.decode && wgmma && variant.fixed_max && variant.consumer_warpgroups == 3) label += ", fixed max";
  row(label.c_str(), shape, us, flops, c.decode ? kv_bytes : 0, base_us, c.decode ? "copy" : "bf16");
  return us;
}

// A prefill case on the mma.sync kernel and the wgmma kernel (its row carries the mma.sync time as its
// baseline), then the wgmma kernel with three consumer warpgroups against the two-warpgroup one, then the fixed max
// against three warpgroups without.
void bench_attention_prefill(const gpt_oss::AttentionCase& c) {
  const double base = bench_attention(c, PrefillKernel::kMmaSync);
  const double wgmma = bench_attention(c, PrefillKernel::kWgmma, base);
  const double three = bench_attention(c, PrefillKernel::kWgmma, wgmma, false, {3});  // against two warpgroups
  bench_attention(c, PrefillKernel::kWgmma, three, false, {3, true});
}

// `attention-fp8`: every case on the FP8 KV cache, each row against the same kernel on the bf16 cache.
void bench_attention_fp8(const gpt_oss::AttentionCase& c) {
  if (c.decode) {
    bench_attention(c, PrefillKernel::kMmaSync, bench_attention(c), true);
    return;
  }
  for (const PrefillKernel k : {PrefillKernel::kMmaSync, PrefillKernel::kWgmma}) {
    bench_attention(c, k, bench_attention(c, k), true);
  }
}

// Sampling over the whole vocabulary at a shared case (gpt_oss_cases.h): fp32 logits, then the model's
// bf16 logits in place (the serving path).
void bench_sampling(const gpt_oss::SamplingCase& c) {
  const int rows = c.rows, vocab = gpt_oss::kVocab;
  Buf logits(size_t(rows) * vocab * 4), out(rows * 4), t(rows * 4), k(rows * 4), pp(rows * 4), seeds(rows * 8);
  fill_f32(logits, -10, 10);
  std::vector<float> ht(rows, c.temperature), hp(rows, c.top_p);
  std::vector<int32_t> hk(rows, c.top_k);
  std::vector<uint64_t> hs(rows, 42);
  cudaMemcpy(t.get(), ht.data(), rows * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(pp.get(), hp.data(), rows * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(k.get(), hk.data(), rows * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(seeds.get(), hs.data(), rows * 8, cudaMemcpyHostToDevice);
  SamplingParams p{logits.as<float>(), out.as<int32_t>(),    t.as<float>(), k.as<int32_t>(),
                   pp.as<float>(),     seeds.as<uint64_t>(), rows,          vocab};
  const std::string shape = std::to_string(rows) + "x" + std::to_string(vocab);
  const double us = time_us([&](int) { launch_sampling(p, nullptr); }, 10);
  row("sampling", shape + " " + c.name, us, 0, double(rows) * vocab * 4, 0, "copy");
  p.logits_bf16 = logits.as<uint16_t>();
  p.logits = nullptr;
  const double us_bf16 = time_us([&](int) { launch_sampling(p, nullptr); }, 10);
  row("sampling", shape + " bf16 " + c.name, us_bf16, 0, double(rows) * vocab * 2, 0, "copy");
}

// The bf16 GEMM (--weights bf16) at a shared case (gpt_oss_cases.h): bias epilogue, weights rotated over
// copies so the bytes come from HBM.
void bench_gemm_bf16(const gpt_oss::GemmBf16Case& c) {
  const gpt_oss::LinearCase& l = linear(c.linear);
  const int M = c.rows, N = l.n, K = l.k;
  const size_t wbytes = size_t(N) * K * 2;
  const int copies = copies_for(wbytes);
  std::vector<std::unique_ptr<Buf>> w;
  for (int i = 0; i < copies; ++i) {
    w.push_back(std::make_unique<Buf>(wbytes));
    fill_bf16(*w.back(), -0.05f, 0.05f);
  }
  Buf x(size_t(M) * K * 2), bias(size_t(N) * 2), out(size_t(M) * N * 2);
  fill_bf16(x, -2, 2);
  fill_bf16(bias, -1, 1);
  GemmBf16Params p;
  p.a = x.as<uint16_t>();
  p.lda = K;
  p.bias = bias.as<uint16_t>();
  p.out = out.as<uint16_t>();
  p.ldc = N;
  p.M = M;
  p.N = N;
  p.K = K;
  p.epilogue = l.epilogue;
  const double us = time_us([&](int i) {
    p.b = w[i % copies]->as<uint16_t>();
    launch_gemm_bf16(p, nullptr);
  });
  const std::string shape =
      std::string(c.linear) + " M=" + std::to_string(M) + " N=" + std::to_string(N) + " K=" + std::to_string(K);
  row("gemm_bf16 (+bias)", shape, us, 2.0 * M * N * K, double(wbytes) + 2.0 * M * K + 2.0 * M * N, 0,
      M <= 64 ? "copy" : "bf16");
}

}  // namespace

int main(int argc, char** argv) {
  const std::string only = argc > 1 ? argv[1] : "";
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    std::printf("SKIPPED: no CUDA device\n");
    return 0;
  }
  if (only.empty() || only == "header") {
    std::printf(
        "| kernel | shape | µs | TFLOP/s | GB/s | baseline µs (speed-up) | vs ceiling "
        "|\n|---|---|---|---|---|---|---|\n");
  }
  auto want = [&](const char* group) { return only.empty() || only == group; };
  if (want("small")) bench_small();
  if (want("gemm")) {
    CublasLtFp8Gemm lt;
    for (int M : gpt_oss::kPrefillRows) {
      for (const char* name : {"qkv", "o"}) bench_gemm(lt, name, M, linear(name).n, linear(name).k);
    }
    for (int M : {4096, 8192}) bench_gemm(lt, "gate_up-dense", M, 5760, 2880);
    for (int M : {1, 16, 4096}) bench_gemm(lt, "unembed", M, 201088, 2880);
    bench_gemm(lt, "square", 8192, 8192, 8192);
  }
  if (only == "gemm-large") {  // the prefill GEMM shapes only
    CublasLtFp8Gemm lt;
    for (int M : {1024, 4096, 8192}) {
      bench_gemm(lt, "qkv", M, 5120, 2880);
      bench_gemm(lt, "o", M, 2880, 4096);
    }
    bench_gemm(lt, "gate_up-dense", 8192, 5760, 2880);
    bench_gemm(lt, "square", 8192, 8192, 8192);
  }
  if (only == "candidates") {  // every unmeasured candidate's kernel rows, in one short run
    // The MXFP4 GEMV's shapes and single-row kernel at one token's shapes and 8 tokens' gate_up (bulk copies,
    // the thirteenth session's); the MoE decode at 1 and 8 tokens.
    bench_gemv_tune("4x gate_up", 1, 4 * 5760, 2880, GemmEpilogue::kSwiGlu, true);
    bench_gemv_tune("4x down", 1, 4 * 2880, 2880, GemmEpilogue::kBias, true);
    bench_gemv_tune("4x gate_up", 8, 4 * 5760, 2880, GemmEpilogue::kSwiGlu, true);
    for (const int E : {32, 128}) bench_moe_decode_mxfp4(1, E);
    bench_moe_decode_mxfp4(8, 32);
  }
  if (only == "profile") {  // one GEMM and one prefill attention shape, for a profiler (ncu -k ...)
    CublasLtFp8Gemm lt;
    bench_gemm(lt, "qkv", 8192, 5120, 2880);
    for (const gpt_oss::AttentionCase& c : gpt_oss::kAttention) {
      if (!c.decode && c.window == 0 && std::strcmp(c.name, "1x8192") == 0) {
        bench_attention(c, PrefillKernel::kMmaSync);
        bench_attention(c, PrefillKernel::kWgmma);
        bench_attention(c, PrefillKernel::kWgmma, 0, false, {3});  // three consumer warpgroups (template <kv fp8, 3>)
      }
    }
  }
  if (want("moe")) {
    for (const gpt_oss::MoeCase& m : gpt_oss::kMoePrefill) bench_moe(m.tokens, m.experts);
  }
  if (want("gemv")) {
    for (int M : gpt_oss::kDecodeRows) {
      for (const gpt_oss::LinearCase& l : gpt_oss::kLinears) bench_gemv(l.name, M, l.n, l.k, l.epilogue);
    }
    for (const gpt_oss::MoeCase& m : gpt_oss::kMoeDecode) bench_moe_decode(m.tokens, m.experts);
  }
  if (want("gemv") || want("mxfp4")) {  // MXFP4 experts (--weights mxfp4): the expert shapes of 20b/120b
    for (int M : gpt_oss::kDecodeRows) {
      bench_gemv_mxfp4("gate_up", M, 5760, 2880, GemmEpilogue::kSwiGlu);
      bench_gemv_mxfp4("down", M, 2880, 2880, GemmEpilogue::kBias);
    }
    bench_gemv_mxfp4("4x gate_up", 1, 4 * 5760, 2880, GemmEpilogue::kSwiGlu);  // one token's 4 experts, dense
    for (const gpt_oss::MoeCase& m : gpt_oss::kMoeDecode) bench_moe_decode_mxfp4(m.tokens, m.experts);
    for (const int t : {2, 8}) bench_moe_decode_mxfp4(t, 32);
  }
  if (only == "gemv-tune") {
    for (const int M : {1, 8}) {
      bench_gemv_tune("qkv", M, 5120, 2880, GemmEpilogue::kBias, false);
      bench_gemv_tune("o", M, 2880, 4096, GemmEpilogue::kBias, false);
      bench_gemv_tune("4x gate_up", M, 4 * 5760, 2880, GemmEpilogue::kSwiGlu, true);
      bench_gemv_tune("4x down", M, 4 * 2880, 2880, GemmEpilogue::kBias, true);
    }
    bench_gemv_tune("4x gate_up", 1, 4 * 5760, 2880, GemmEpilogue::kSwiGlu, false);
    bench_gemv_tune("4x down", 1, 4 * 2880, 2880, GemmEpilogue::kBias, false);
  }
  if (only == "gemv-scaling") {
    for (const bool mxfp4 : {true, false}) {
      bench_gemv_scaling("gate_up", 5760, 2880, GemmEpilogue::kSwiGlu, mxfp4);
      bench_gemv_scaling("down", 2880, 2880, GemmEpilogue::kBias, mxfp4);
    }
  }
  if (want("moe-mxfp4")) {  // the prefill MoE: FP8 experts, MXFP4 on W4A16 and W4A8; the MXFP4 → FP8 conversion
    for (const int E : {32, 128}) {
      MoeMxfp4Bench b(E);
      // 128 rows per expert (CudaModel::kMxfp4W4A8MinRowsPerExpert) at 1,024 tokens for E = 32 and 4,096 for E = 128;
      // 32 rows (kW4A16NarrowMaxRows) at 256 tokens for E = 32 and 1,024 for E = 128.
      for (const int T : {64, 256, 512, 1024, 1536, 2048, 3072, 4096, 6144, 8192}) b.run(T);
    }
  }
  if (only == "profile-mxfp4" || only == "profile-w4a8") {  // one MXFP4 prefill MoE on the W4A16 / W4A8 GEMMs
    MoeMxfp4Bench b(32);                                    // (8,192 tokens, E = 32) for a profiler
    b.once(8192, only == "profile-w4a8");
  }
  if (want("moe-stream")) {  // the weight-streaming decode MoE vs the current path, FP8 and MXFP4 experts
    for (const int E : {32, 128}) {
      for (const bool mxfp4 : {false, true}) {
        MoeStreamBench b(E, mxfp4);
        for (const int T : {1, 8, 16, 64, 128}) b.run(T);
      }
    }
  }
  if (want("gemvx")) {  // read ceilings and the decode GEMV access pattern, row-major vs tile-major
    bench_read("down", size_t(2880) * 2880);
    bench_read("qkv", size_t(5120) * 2880);
    bench_read("moe 4 experts", size_t(4) * 3 * 2880 * 2880);
    bench_read("unembed", size_t(201088) * 2880);
    bench_read_pattern("qkv 5120x2880", 5120, 2880);
    bench_read_pattern("4x gate_up 23040x2880", 23040, 2880);
    bench_read_pattern("unembed 201088x2880", 201088, 2880);
  }
  if (want("attention")) {
    for (const gpt_oss::AttentionCase& c : gpt_oss::kAttention) {
      if (!c.decode) bench_attention_prefill(c);
    }
    for (const gpt_oss::AttentionCase& c : gpt_oss::kAttention) {
      if (c.decode) bench_attention(c);
    }
  }
  if (only == "attention-fp8") {
    for (const gpt_oss::AttentionCase& c : gpt_oss::kAttention) bench_attention_fp8(c);
  }
  if (want("sampling")) {
    for (const gpt_oss::SamplingCase& c : gpt_oss::kSampling) bench_sampling(c);
  }
  if (want("gemm-bf16")) {
    for (const gpt_oss::GemmBf16Case& c : gpt_oss::kGemmBf16) bench_gemm_bf16(c);
  }
  return 0;
}
