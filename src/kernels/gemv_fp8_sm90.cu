// FP8 weight-only GEMV for decode (gemv_fp8.h) on Hopper.
//
// Work split: a cluster of `cluster` CTAs (1–8) owns 64 output rows n0..n0+63 (one 128-row scale block
// holds all of them) and splits the K steps (64 columns each) between its CTAs; inside a CTA the 8 warps
// take the CTA's K steps round robin. Per K step a warp computes the 64 rows × 64 columns × ≤ 8 x-rows
// product with 16 mma.sync m16n8k16 (4 row tiles × 4 K sub-steps), A = weights (fp8 → f16, exact),
// B = activations (bf16 → f16 after a power-of-two scale per (x row, K step)), fp32 accumulate; the
// step's result, times the inverse power of two and w_scale, is added to the running fp32 sum (one K
// step never straddles a 128-column scale block). Partials are summed over warps in shared memory, then
// over the cluster's CTAs by rank 0 through distributed shared memory (fixed order), which adds the bias,
// applies the epilogue and stores bf16.
//
// MMA operand layout (the K order inside one step is a free permutation, applied to A and B alike):
// lane (g = lane/4, t = lane%4) loads 16 bytes of weight rows g and g+8 of each 16-row tile at columns
// k0 + 16t … k0 + 16t + 15, and the 16 bf16 of x row g at the same columns. For the MMA's K sub-step j
// (0..3) its four bytes 4j..4j+3 are logical columns {2t, 2t+1, 2t+8, 2t+9}: a0/a2 are the low/high byte
// pairs of row g, a1/a3 those of row g+8, and b0/b1 the matching x pairs. The C fragment then holds rows
// (g, g+8) × x rows (2t, 2t+1).
//
// Memory: every weight byte is read once into a per-warp ring of kStages K steps in shared memory (4 KiB per
// step, 96 KiB per CTA, two CTAs per SM), so up to 192 KiB per SM are in flight without holding registers;
// small matrices are requested in full at kernel start. Tile-major weights (GemvFp8Params::bulk_copies): lane 0
// fills a stage with one bulk copy of the step's 4 KiB tile, whose [chunk][lane] byte order is the ring's, on the
// stage's mbarrier; the refill follows the warp's __syncwarp() after its last read of the stage. Else each lane
// copies its own chunks with 16-byte cp.async (L2 only) and reads back only those (no warp synchronisation). x is
// read from L2 into registers per CTA (≤ 25% of the weight bytes at 8 rows).
#include <cooperative_groups.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <atomic>

#include "kernels/cuda_utils.h"
#include "kernels/fp8_tiled.h"
#include "kernels/gemv_fp8.h"
#include "kernels/gemv_grouped.h"
#include "kernels/gemv_grouped_sm90.cuh"
#include "kernels/gemv_launch.h"
#include "kernels/mbarrier_sm90.cuh"
#include "kernels/rope_sm90.cuh"
#include "kernels/swiglu.h"
#include "kernels/tma_sm90.cuh"

namespace gossamer::kernels {
namespace {

namespace cg = cooperative_groups;

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr int kTileRows = 64;  // output rows per cluster: 4 MMA tiles of 16
constexpr int kNTiles = kTileRows / 16;
static_assert(kTileRows == kHeadDim, "the RoPE epilogue's tile is one head");
constexpr int kKStep = 64;                      // K columns per warp step: 4 lanes × 16 bytes
constexpr int kChunks = kNTiles * 2;            // 16-byte weight chunks per lane per K step
constexpr int kStageBytes = kChunks * 32 * 16;  // 4 KiB per warp and K step
// The cp.async ring depth (K steps in flight per warp): 3 stages fit two CTAs per SM (96 KiB each), 4 one
// (128 KiB); the launch picks (GemvFp8Params::stages).
constexpr int smem_bytes(int stages) {
  return kWarps * stages * kStageBytes;
}
constexpr int min_ctas_per_sm(int stages) {
  return stages == 3 ? 2 : 1;
}
constexpr int kRedStride = kTileRows + 4;  // 68: the partial-sum stores below are bank-conflict free

// ---- device helpers ----

// (pdl_wait / pdl_trigger: programmatic dependent launch, kernels/cuda_utils.h.)

// D (16×8 fp32) += A (16×16 f16, row) · B (16×8 f16, col).
__device__ __forceinline__ void mma_f16_16x8x16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  // volatile: stays after the shared-memory reads whose data it consumes and before the cp.async that
  // refills the same stage.
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// The B fragment of one K step, in place: `x` holds this lane's 16 bf16 of x (8 words of bf16 pairs) and
// becomes 8 f16x2. The 64 columns of x row g (held by lanes 4g..4g+3) are scaled by 2^(14 − E),
// E = ⌊log2 max|x|⌋, so the largest lands in [2^14, 2^15) and the f16 conversion is exact for everything
// ≥ 2^-28 of it (smaller elements become f16 subnormals, error ≤ 2^-39 of the largest). Returns the
// inverse factors of x rows 2t and 2t+1 (this lane's C columns). All 32 lanes must call it.
__device__ __forceinline__ void x_fragment(uint32_t (&x)[8], float& inv_even, float& inv_odd, int t) {
  // max |x| on the bit patterns: for non-negative floats the integer order is the float order (NaNs are
  // ignored here and still propagate through the MMA).
  uint32_t amax_bits = 0;
#pragma unroll
  for (int i = 0; i < 8; ++i) amax_bits = max(amax_bits, max(x[i] & 0x7FFF0000u, (x[i] << 16) & 0x7FFF0000u));
  amax_bits = min(amax_bits, 0x7F800000u);
  amax_bits = max(amax_bits, __shfl_xor_sync(0xffffffffu, amax_bits, 1));
  amax_bits = max(amax_bits, __shfl_xor_sync(0xffffffffu, amax_bits, 2));
  // f = 2^(fe − 127) with fe = 127 + 14 − E = 268 − biased exponent, kept normal together with 1/f.
  const int fe = min(max(268 - static_cast<int>(amax_bits >> 23), 1), 253);
  const float f = __uint_as_float(static_cast<uint32_t>(fe) << 23);
  const float inv = __uint_as_float(static_cast<uint32_t>(254 - fe) << 23);
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const __half2 h = __floats2half2_rn(__uint_as_float(x[i] << 16) * f, __uint_as_float(x[i] & 0xFFFF0000u) * f);
    x[i] = *reinterpret_cast<const uint32_t*>(&h);
  }
  inv_even = __shfl_sync(0xffffffffu, inv, 8 * t);     // a lane of group g = 2t
  inv_odd = __shfl_sync(0xffffffffu, inv, 8 * t + 4);  // a lane of group g = 2t + 1
}

// The kernel's epilogue: GemmEpilogue kBias or kSwiGlu, or the RoPE epilogue (GemvFp8Params::rope_epilogue; its
// own instantiation, so the others keep their registers).
enum class Epilogue { kBias, kSwiGlu, kRope };

// grid: x = tiles × cluster (a cluster's CTAs are consecutive in x), y = expert slot (grouped) or 1.
template <Epilogue kEpi, int kStages>
__global__ void __launch_bounds__(kThreads, min_ctas_per_sm(kStages))
    gemv_fp8_kernel(const GemvFp8Params p, int cluster, int k_steps) {
  // Dynamic: the warps' cp.async rings [warp][stage][chunk][lane] (16 bytes each); after the main loop the
  // same bytes hold the partial sums.
  extern __shared__ __align__(16) uint8_t smem[];
  using RedRow = float[kGemvMaxRows][kRedStride];
  // red[warp]: per-warp partials [x row][tile row]; part: this CTA's sum, which cluster rank 0 reads.
  RedRow* red = reinterpret_cast<RedRow*>(smem);
  RedRow& part = *reinterpret_cast<RedRow*>(smem + kWarps * sizeof(RedRow));
  __shared__ GemvGroupedSmem gs;  // grouped mode

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;
  const int rank = cluster > 1 ? static_cast<int>(cg::this_cluster().block_rank()) : 0;
  const int n0 = static_cast<int>(blockIdx.x) / cluster * kTileRows;
  const int ks_begin = rank * k_steps / cluster;
  const int ks_end = (rank + 1) * k_steps / cluster;
  const int num_kb = ceil_div(p.K, 128), num_nb = ceil_div(p.N, 128);
  const bool grouped = gemv_grouped(p);

  // ---- grouped: group the pairs by local expert, pick this CTA's slot ----
  int rows = p.M;
  int group = 0;
  const bool wait_first = grouped && !p.topk_from_earlier_kernel;
  if (grouped) {
    if (wait_first) {
      pdl_wait();  // topk_ids come from the previous kernel
      pdl_trigger();
    }
    if (!gemv_grouped_prologue(p, gs, rows, group)) return;
  }

  // ---- this lane's sources and ring ----
  const int64_t K = p.K;
  // Row-major: step s of chunk c at w_lane + 64·s + 8·c·K. Tile-major: the step is one 4 KiB tile (n0 is a
  // multiple of 64, so the lane's rows g + 8c sit at 64·(g + 8c) inside it).
  const int64_t step_stride = p.w_tiled ? 4096 : kKStep, chunk_stride = p.w_tiled ? 512 : 8 * K;
  const uint8_t* w_lane =
      p.w_tiled ? p.w + group * fp8_tiled_group_bytes(p.N, p.K) + fp8_tiled_offset(n0 + g, 16 * t, fp8_tiled_pad(p.K))
                : p.w + (static_cast<int64_t>(group) * p.N + n0 + g) * K + 16 * t;
  const int rows_left = p.N - n0 - g;  // chunk c (row n0 + 8c + g) exists iff 8c < rows_left
  const float* scale_row = p.w_scales + (static_cast<int64_t>(group) * num_nb + n0 / 128) * num_kb;
  uint8_t* const ring_bytes = smem + warp * kStages * kStageBytes;  // [stage][chunk][lane] 16 B
  uint4* ring = reinterpret_cast<uint4*>(ring_bytes) + lane;        // this lane's chunks: [stage][chunk] stride 32
  float scale[kStages];
  // Bulk copies (tile-major): the warp's stage barriers (lane 0's arrival plus the tile's bytes per fill).
  const bool bulk = p.bulk_copies && p.w_tiled;
  __shared__ uint64_t stage_full[kWarps * kStages];
  uint64_t* full = stage_full + warp * kStages;
  if (bulk && lane == 0) {
#pragma unroll
    for (int s = 0; s < kStages; ++s) mbar::init(&full[s], 1);
    tma::fence_barrier_init();
  }
  __syncwarp();
  // Tile-major: the step-0 tile of rows n0 … n0 + 63 (this lane's chunks start 16·lane bytes into it).
  const uint8_t* w_tile0 = p.w_tiled ? w_lane - 16 * lane : nullptr;

  // Weights of K step `step` into ring stage `stage` (zero-filled outside N/K), and its block scale. cp.async: one
  // commit group per call, empty past the end, so the group count stays uniform.
  auto issue = [&](int step, int stage) {
    if (step < ks_end) {  // warp-uniform
      if (bulk) {
        if (lane == 0) {
          tma::arrive_expect_tx(&full[stage], kStageBytes);
          tma::copy_bulk(ring_bytes + stage * kStageBytes, w_tile0 + static_cast<int64_t>(step) * 4096, kStageBytes,
                         &full[stage]);
        }
      } else {
        const bool k_ok = step * kKStep + 16 * t < p.K;
        const uint8_t* src = w_lane + step * step_stride;
#pragma unroll
        for (int c = 0; c < kChunks; ++c) {
          const bool ok = k_ok && 8 * c < rows_left;
          cp_async_16(ring + (stage * kChunks + c) * 32, ok ? src + c * chunk_stride : p.w, ok);
        }
      }
      scale[stage] = __ldg(scale_row + step * kKStep / 128);
    }
    if (!bulk) cp_async_commit();
  };
#pragma unroll
  for (int s = 0; s < kStages; ++s) issue(ks_begin + warp + s * kWarps, s);
  if (!wait_first) {
    pdl_wait();  // weights were requested already; x, bias and out follow the stream order
    pdl_trigger();
  }

  // x of K step `step`: this lane's 16 bf16 of x row g, zero outside rows/K.
  const uint16_t* x_lane = p.x;
  if (g < rows) {
    const int x_row = grouped ? gs.pair[g] / p.x_pair_divisor : g;
    x_lane = p.x + static_cast<int64_t>(x_row) * p.ldx + 16 * t;
  }
  auto load_x = [&](int step, uint32_t(&xr)[8]) {
    if (step < ks_end && g < rows && step * kKStep + 16 * t < p.K) {
      const uint4* src = reinterpret_cast<const uint4*>(x_lane + static_cast<int64_t>(step) * kKStep);
      const uint4 a = __ldcg(src), b = __ldcg(src + 1);
      xr[0] = a.x, xr[1] = a.y, xr[2] = a.z, xr[3] = a.w;
      xr[4] = b.x, xr[5] = b.y, xr[6] = b.z, xr[7] = b.w;
    } else {
#pragma unroll
      for (int i = 0; i < 8; ++i) xr[i] = 0u;
    }
  };
  uint32_t xr[kStages][8];
#pragma unroll
  for (int s = 0; s < kStages; ++s) load_x(ks_begin + warp + s * kWarps, xr[s]);

  // ---- main loop: consume the oldest stage, refill it with the step kStages·kWarps later ----
  float acc[kNTiles][4] = {};
  uint32_t parity = 0;  // bulk: the phase this pass of the ring waits for
  for (int step0 = ks_begin + warp; step0 < ks_end; step0 += kStages * kWarps, parity ^= 1) {
#pragma unroll
    for (int s = 0; s < kStages; ++s) {
      const int step = step0 + s * kWarps;
      if (step >= ks_end) break;  // warp-uniform
      if (bulk) {
        mbar::wait(&full[s], parity);
      } else {
        cp_async_wait<kStages - 1>();
      }
      float inv_even, inv_odd;
      x_fragment(xr[s], inv_even, inv_odd, t);
#pragma unroll
      for (int nt = 0; nt < kNTiles; ++nt) {
        const uint4 w0 = ring[(s * kChunks + 2 * nt) * 32];      // row 16·nt + g
        const uint4 w1 = ring[(s * kChunks + 2 * nt + 1) * 32];  // row 16·nt + g + 8
        const uint32_t r0[4] = {w0.x, w0.y, w0.z, w0.w}, r1[4] = {w1.x, w1.y, w1.z, w1.w};
        float d[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const uint32_t a[4] = {e4m3x2_to_f16x2(r0[j]), e4m3x2_to_f16x2(r1[j]), e4m3x2_to_f16x2(r0[j] >> 16),
                                 e4m3x2_to_f16x2(r1[j] >> 16)};
          mma_f16_16x8x16(d, a, xr[s][2 * j], xr[s][2 * j + 1]);
        }
        acc[nt][0] = fmaf(d[0] * inv_even, scale[s], acc[nt][0]);
        acc[nt][1] = fmaf(d[1] * inv_odd, scale[s], acc[nt][1]);
        acc[nt][2] = fmaf(d[2] * inv_even, scale[s], acc[nt][2]);
        acc[nt][3] = fmaf(d[3] * inv_odd, scale[s], acc[nt][3]);
      }
      if (bulk) __syncwarp();  // every lane's reads of stage s are done before lane 0 refills it
      issue(step + kStages * kWarps, s);
      load_x(step + kStages * kWarps, xr[s]);
    }
  }
  cp_async_wait<0>();
  __syncthreads();  // the rings become the reduction buffers

  // ---- sum over warps (fixed order) ----
#pragma unroll
  for (int nt = 0; nt < kNTiles; ++nt) {
    const int r = 16 * nt + g;
    red[warp][2 * t][r] = acc[nt][0];
    red[warp][2 * t + 1][r] = acc[nt][1];
    red[warp][2 * t][r + 8] = acc[nt][2];
    red[warp][2 * t + 1][r + 8] = acc[nt][3];
  }
  __syncthreads();
  const int m = threadIdx.x / 32;        // x row of this thread's outputs
  const int c = 2 * (threadIdx.x % 32);  // tile rows c, c + 1
  float2 sum = make_float2(0.f, 0.f);
#pragma unroll
  for (int w = 0; w < kWarps; ++w) {
    const float2 v = *reinterpret_cast<const float2*>(&red[w][m][c]);
    sum.x += v.x;
    sum.y += v.y;
  }

  // ---- sum over the cluster's CTAs (rank order) ----
  if (cluster > 1) {
    *reinterpret_cast<float2*>(&part[m][c]) = sum;  // placed after red
    cg::cluster_group cl = cg::this_cluster();
    cl.sync();
    if (rank == 0) {
      for (int r = 1; r < cluster; ++r) {
        const float2 v = *reinterpret_cast<const float2*>(cl.map_shared_rank(&part[m][c], r));
        sum.x += v.x;
        sum.y += v.y;
      }
    }
  }

  // ---- epilogue (rank 0): bias, SwiGLU or plain, bf16; or RoPE and the K/V cache write ----
  const int n = n0 + c;
  if constexpr (kEpi == Epilogue::kRope) {
    // The tile is one head (N is whole heads), so the test is warp-uniform, as rope_head_from_warp needs.
    if (rank == 0 && m < rows) {
      const uint32_t bb = p.bias ? *reinterpret_cast<const uint32_t*>(p.bias + n) : 0u;
      const __nv_bfloat162 h =
          __floats2bfloat162_rn(sum.x + __uint_as_float(bb << 16), sum.y + __uint_as_float(bb & 0xFFFF0000u));
      rope_head_from_warp(p.rope, m, n0 / kHeadDim, __low2float(h), __high2float(h));
    }
  } else if (rank == 0 && m < rows && n < p.N) {
    float v0 = sum.x, v1 = sum.y;
    if (p.bias) {
      const uint32_t bb = *reinterpret_cast<const uint32_t*>(p.bias + static_cast<int64_t>(group) * p.N + n);
      v0 += __uint_as_float(bb << 16);
      v1 += __uint_as_float(bb & 0xFFFF0000u);
    }
    const int out_row = grouped ? gs.pair[m] : m;
    uint16_t* out = p.out + static_cast<int64_t>(out_row) * p.ldc;
    if constexpr (kEpi == Epilogue::kSwiGlu) {
      const __nv_bfloat16 h = __float2bfloat16_rn(swiglu_clamped(v0, v1));
      out[n / 2] = *reinterpret_cast<const uint16_t*>(&h);
    } else {
      const __nv_bfloat162 h = __floats2bfloat162_rn(v0, v1);
      *reinterpret_cast<__nv_bfloat162*>(out + n) = h;
    }
  }
  if (cluster > 1) cg::this_cluster().sync();  // keep `part` alive until rank 0 has read it
}

static_assert(smem_bytes(3) >= (kWarps + 1) * kGemvMaxRows * kRedStride * static_cast<int>(sizeof(float)),
              "the reduction buffers overlay the rings");

// Opts the kernel into its dynamic shared memory, once per device (a function attribute, not a
// stream operation: fine during graph capture; a repeated call is harmless).
template <Epilogue kEpi, int kStages>
void prepare_kernel(int device) {
  static std::atomic<uint64_t> done{0};
  const uint64_t bit = uint64_t(1) << (device & 63);
  if (done.load(std::memory_order_acquire) & bit) return;
  GOSSAMER_CUDA_CHECK(cudaFuncSetAttribute(gemv_fp8_kernel<kEpi, kStages>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           smem_bytes(kStages)));
  done.fetch_or(bit, std::memory_order_release);
}

// Validates the GEMV contract (gemv_fp8.h) and launches the kernel of epilogue kEpi (M = 0 is a no-op).
template <Epilogue kEpi>
void launch_with(const GemvFp8Params& p, cudaStream_t stream) {
  constexpr bool kSwiGlu = kEpi == Epilogue::kSwiGlu;
  const bool grouped = gemv_grouped(p);
  GOSSAMER_CHECK(p.K > 0 && p.K % 16 == 0 && p.N > 0 && p.N % 8 == 0, "gemv_fp8: K (", p.K,
                 ") must be a positive multiple of 16 and N (", p.N, ") of 8");
  int slots = 1;  // grid.y: expert slots in grouped mode
  if (grouped) {
    slots = gemv_grouped_slots(p, "gemv_fp8");
  } else {
    GOSSAMER_CHECK(p.M >= 0 && p.M <= kGemvMaxRows, "gemv_fp8: M (", p.M, ") must be ≤ ", kGemvMaxRows);
    if (p.M == 0) return;
  }
  GOSSAMER_CHECK(p.x && p.w && p.w_scales, "gemv_fp8: null operand");
  GOSSAMER_CHECK(p.ldx >= p.K && p.ldx % 8 == 0, "gemv_fp8: ldx (", p.ldx, ") must be ≥ K and a multiple of 8");
  if constexpr (kEpi == Epilogue::kRope) {
    const RopeParams& r = p.rope;
    GOSSAMER_CHECK(
        !grouped && p.epilogue == GemmEpilogue::kBias && p.N == (r.num_q_heads + 2 * r.num_kv_heads) * kHeadDim,
        "gemv_fp8: the RoPE epilogue needs a dense fused QKV row (N = (q heads + 2·kv heads)·64), got N ", p.N);
    GOSSAMER_CHECK(r.positions && r.q_out, "gemv_fp8: the RoPE epilogue needs positions and q_out");
  } else {
    GOSSAMER_CHECK(p.out, "gemv_fp8: null operand");
  }
  GOSSAMER_CHECK(p.rope_epilogue || (p.ldc >= (kSwiGlu ? p.N / 2 : p.N) && (kSwiGlu || p.ldc % 2 == 0)),
                 "gemv_fp8: bad ldc ", p.ldc);
  GOSSAMER_CHECK(reinterpret_cast<uintptr_t>(p.x) % 16 == 0 && reinterpret_cast<uintptr_t>(p.w) % 16 == 0 &&
                     reinterpret_cast<uintptr_t>(p.out) % (kSwiGlu ? 2 : 4) == 0 &&
                     reinterpret_cast<uintptr_t>(p.bias) % 4 == 0,
                 "gemv_fp8: x and w must be 16-byte aligned, bias 4-byte aligned, out 4-byte aligned (kBias)");
  int device = 0;
  GOSSAMER_CUDA_CHECK(cudaGetDevice(&device));
  const int sms = sm_count(device);
  const int k_steps = ceil_div(p.K, kKStep);
  const int tiles = ceil_div(p.N, kTileRows);
  // The launch shape (kernels/gemv_launch.h); a grid of at most one CTA per SM takes the deeper ring (4
  // stages, one CTA per SM: qkv 8.7 → 7.5 µs at batch 1 on the H200), larger grids 3.
  GOSSAMER_CHECK(p.stages == 0 || p.stages == 3 || p.stages == 4, "gemv_fp8: stages ", p.stages, " not 3 or 4");
  const int cluster = gemv_cluster_size(tiles, slots, k_steps, kWarps, sms, p.cluster, "gemv_fp8");
  const int stages = p.stages != 0 ? p.stages : static_cast<int64_t>(tiles) * slots * cluster <= sms ? 4 : 3;

  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(static_cast<unsigned>(tiles * cluster), static_cast<unsigned>(slots), 1);
  cfg.blockDim = dim3(kThreads, 1, 1);
  cfg.dynamicSmemBytes = smem_bytes(stages);
  cfg.stream = stream;
  ClusterPdlAttributes attrs(cluster, p.programmatic_launch);
  attrs.apply(cfg);
  // One instantiation per (epilogue, ring depth).
  if (stages == 3) {
    prepare_kernel<kEpi, 3>(device);
    GOSSAMER_CUDA_CHECK(cudaLaunchKernelEx(&cfg, gemv_fp8_kernel<kEpi, 3>, p, cluster, k_steps));
  } else {
    prepare_kernel<kEpi, 4>(device);
    GOSSAMER_CUDA_CHECK(cudaLaunchKernelEx(&cfg, gemv_fp8_kernel<kEpi, 4>, p, cluster, k_steps));
  }
}

}  // namespace

void launch_gemv_fp8(const GemvFp8Params& p, cudaStream_t stream) {
  if (p.rope_epilogue) return launch_with<Epilogue::kRope>(p, stream);
  if (p.epilogue == GemmEpilogue::kSwiGlu) return launch_with<Epilogue::kSwiGlu>(p, stream);
  launch_with<Epilogue::kBias>(p, stream);
}

}  // namespace gossamer::kernels
