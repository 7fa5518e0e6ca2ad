// bf16 GEMM (accuracy baseline, and the router): 128×128×32 CTA tiles, 8 warps as 2 (M) × 4 (N), each warp a
// 64×32 sub-tile of mma.sync m16n8k16 bf16 → fp32 (4 × 4 fragments). Operands stream through a cp.async
// pipeline of kStages buffers; one K tile row is 32 bf16 = 64 B = four 16-byte chunks, stored with chunk c
// of row r at c ^ ((r >> 1) & 3) so the eight rows an ldmatrix phase reads hit eight distinct 16-byte
// bank groups. A plain product of one column tile (N ≤ 128: the router at prefill) takes 64-row tiles of 4 warps
// (1 × 4) and a 6-deep pipeline instead: twice the CTAs and three times the rows of A in flight per CTA, where
// 128-row tiles left most SMs idle and each CTA waiting on its loads (8,192 tokens: 64 CTAs).
#include <type_traits>

#include "kernels/cuda_utils.h"
#include "kernels/gemm_bf16.h"
#include "kernels/mma_bf16_sm90.cuh"
#include "kernels/swiglu.h"

namespace gossamer::kernels {
namespace {

constexpr int kGroupedBM = 128;  // grouped (MoE) launches: the plan's tile rows
constexpr int kBN = 128;
constexpr int kBK = 32;                             // bf16 elements per K tile
constexpr int kRowBytes = kBK * 2;                  // 64
constexpr int kBBytes = kBN * kRowBytes;            // 8 KiB
constexpr int kChunksPerRow = kRowBytes / 16;       // 4
constexpr int kWarpM = 64, kWarpN = 32;             // warp sub-tile
constexpr int kMi = kWarpM / 16, kNi = kWarpN / 8;  // 4 × 4 mma tiles per warp

// The CTA shape of kBM rows (128: 8 warps, 3 stages, 48 KiB; 64: 4 warps, 6 stages, 72 KiB) × kBN columns.
template <int kBM, int kStages>
struct Bf16Tile {
  static constexpr int kThreads = (kBM / kWarpM) * (kBN / kWarpN) * 32;
  static constexpr int kABytes = kBM * kRowBytes;
  static constexpr int kStageBytes = kABytes + kBBytes;
  static constexpr int kSmemBytes = kStages * kStageBytes;
  static constexpr int kAChunks = kBM * kChunksPerRow / kThreads;  // per thread per stage
  static constexpr int kBChunks = kBN * kChunksPerRow / kThreads;
  static_assert(kBM % kWarpM == 0 && kAChunks * kThreads == kBM * kChunksPerRow &&
                    kBChunks * kThreads == kBN * kChunksPerRow,
                "whole chunks per thread");
};

__device__ __forceinline__ int swz(int row, int chunk) {
  return row * kRowBytes + ((chunk ^ ((row >> 1) & 3)) << 4);
}

template <int kBM, int kStages>
__global__ void __launch_bounds__(Bf16Tile<kBM, kStages>::kThreads) gemm_bf16_kernel(const GemmBf16Params p) {
  using T = Bf16Tile<kBM, kStages>;
  constexpr int kThreads = T::kThreads, kAChunks = T::kAChunks, kBChunks = T::kBChunks;
  constexpr int kABytes = T::kABytes, kStageBytes = T::kStageBytes;
  extern __shared__ __align__(128) uint8_t smem[];

  // ---- which tile ----
  int group = 0, m0, row_end = p.M;
  if (p.grouped.on()) {
    if (static_cast<int>(blockIdx.x) >= *p.grouped.num_tiles) return;
    group = p.grouped.tile_group[blockIdx.x];
    m0 = p.grouped.tile_m0[blockIdx.x];
    row_end = p.grouped.group_offsets[group + 1];
  } else {
    m0 = blockIdx.x * kBM;
  }
  const int n0 = blockIdx.y * kBN;
  const int num_kt = ceil_div(p.K, kBK);
  const int tid = threadIdx.x;
  const int chunk = tid % kChunksPerRow;
  const uint16_t* b_group = p.b + static_cast<int64_t>(group) * p.N * p.K;

  // ---- per-thread source rows (fixed across K tiles) ----
  const uint16_t* a_src[kAChunks];
  bool a_ok[kAChunks];
#pragma unroll
  for (int i = 0; i < kAChunks; ++i) {
    const int r = (tid + i * kThreads) / kChunksPerRow;
    const int row = m0 + r;
    a_ok[i] = row < row_end;
    const int src_row = a_ok[i] ? (p.a_row_index ? p.a_row_index[row] : row) : 0;
    a_src[i] = p.a + static_cast<int64_t>(src_row) * p.lda + chunk * 8;
  }
  const uint16_t* b_src[kBChunks];
  bool b_ok[kBChunks];
#pragma unroll
  for (int i = 0; i < kBChunks; ++i) {
    const int r = (tid + i * kThreads) / kChunksPerRow;
    b_ok[i] = n0 + r < p.N;
    b_src[i] = b_group + static_cast<int64_t>(b_ok[i] ? n0 + r : 0) * p.K + chunk * 8;
  }

  // K tile kt into stage kt % kStages; chunks past K (K is a multiple of 16, so whole chunks) read zeros.
  auto load_stage = [&](int kt) {
    uint8_t* sa = smem + (kt % kStages) * kStageBytes;
    uint8_t* sb = sa + kABytes;
    const int k0 = kt * kBK;
    const bool k_ok = k0 + chunk * 8 < p.K;
#pragma unroll
    for (int i = 0; i < kAChunks; ++i) {
      const int r = (tid + i * kThreads) / kChunksPerRow;
      cp_async_16(sa + swz(r, chunk), a_ok[i] && k_ok ? a_src[i] + k0 : p.a, a_ok[i] && k_ok);
    }
#pragma unroll
    for (int i = 0; i < kBChunks; ++i) {
      const int r = (tid + i * kThreads) / kChunksPerRow;
      cp_async_16(sb + swz(r, chunk), b_ok[i] && k_ok ? b_src[i] + k0 : p.b, b_ok[i] && k_ok);
    }
  };

  // ---- accumulators, initialised with the bias ----
  const int warp = tid / 32;
  const int lane = tid % 32;
  const int warp_m = warp / (kBN / kWarpN);  // 0..kBM / 64 − 1
  const int warp_n = warp % (kBN / kWarpN);  // 0..3
  float acc[kMi][kNi][4];
#pragma unroll
  for (int ni = 0; ni < kNi; ++ni) {
    const int col = n0 + warp_n * kWarpN + ni * 8 + 2 * (lane % 4);
    float b0 = 0.f, b1 = 0.f;
    if (p.bias && col < p.N) {
      const uint32_t bb = *reinterpret_cast<const uint32_t*>(p.bias + static_cast<int64_t>(group) * p.N + col);
      b0 = __uint_as_float(bb << 16);
      b1 = __uint_as_float(bb & 0xFFFF0000u);
    }
#pragma unroll
    for (int mi = 0; mi < kMi; ++mi) {
      acc[mi][ni][0] = b0;
      acc[mi][ni][1] = b1;
      acc[mi][ni][2] = b0;
      acc[mi][ni][3] = b1;
    }
  }

  // ---- pipeline prologue ----
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < num_kt) load_stage(s);
    cp_async_commit();
  }

  // ldmatrix lane roles. A (16×16, row-major): lanes 0–15 rows 0–15 of chunk 0, lanes 16–31 of chunk 1
  // → a0..a3. B ([n][k] = "col" operand): lane group i = lane/8 reads rows n = (i/2)·8 + lane%8 of chunk
  // i%2 → b0, b1 of n-tile 0 and b0, b1 of n-tile 1.
  const int a_row = warp_m * kWarpM + lane % 16;
  const int a_chunk = lane / 16;
  const int b_row = warp_n * kWarpN + (lane / 16) * 8 + lane % 8;
  const int b_chunk = (lane / 8) % 2;

  // ---- main loop over K tiles ----
  for (int kt = 0; kt < num_kt; ++kt) {
    cp_async_wait<kStages - 2>();
    __syncthreads();
    // NOTE: the stage refilled here was consumed in iteration kt − 1, which every thread finished before
    // the barrier above.
    if (kt + kStages - 1 < num_kt) load_stage(kt + kStages - 1);
    cp_async_commit();

    const uint8_t* sa = smem + (kt % kStages) * kStageBytes;
    const uint8_t* sb = sa + kABytes;
#pragma unroll
    for (int kk = 0; kk < kBK / 16; ++kk) {
      uint32_t af[kMi][4];
#pragma unroll
      for (int mi = 0; mi < kMi; ++mi) ldmatrix_x4(af[mi], sa + swz(a_row + mi * 16, 2 * kk + a_chunk));
      uint32_t bf[kNi / 2][4];
#pragma unroll
      for (int nj = 0; nj < kNi / 2; ++nj) ldmatrix_x4(bf[nj], sb + swz(b_row + nj * 16, 2 * kk + b_chunk));
#pragma unroll
      for (int mi = 0; mi < kMi; ++mi) {
#pragma unroll
        for (int nj = 0; nj < kNi / 2; ++nj) {
          mma_bf16(acc[mi][2 * nj], af[mi], bf[nj][0], bf[nj][1]);
          mma_bf16(acc[mi][2 * nj + 1], af[mi], bf[nj][2], bf[nj][3]);
        }
      }
    }
  }
  cp_async_wait<0>();

  // ---- write out (accumulator layout: c0, c1 = row lane/4, cols 2·(lane%4) + {0, 1}; c2, c3 = row + 8) ----
#pragma unroll
  for (int mi = 0; mi < kMi; ++mi) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = m0 + warp_m * kWarpM + mi * 16 + lane / 4 + 8 * h;
      if (row >= row_end) continue;
      uint16_t* out_row = p.out + static_cast<int64_t>(row) * p.ldc;
#pragma unroll
      for (int ni = 0; ni < kNi; ++ni) {
        const int col = n0 + warp_n * kWarpN + ni * 8 + 2 * (lane % 4);
        if (col >= p.N) continue;
        const float v0 = acc[mi][ni][2 * h], v1 = acc[mi][ni][2 * h + 1];
        if (p.epilogue == GemmEpilogue::kSwiGlu) {
          const __nv_bfloat16 r = __float2bfloat16_rn(swiglu_clamped(v0, v1));
          out_row[col / 2] = *reinterpret_cast<const uint16_t*>(&r);
        } else {
          *reinterpret_cast<__nv_bfloat162*>(out_row + col) = __floats2bfloat162_rn(v0, v1);
        }
      }
    }
  }
}

}  // namespace

int gemm_bf16_tile_rows() {
  return kGroupedBM;
}

void launch_gemm_bf16(const GemmBf16Params& p, cudaStream_t stream) {
  GOSSAMER_CHECK(p.K % 16 == 0 && p.N % 8 == 0 && p.lda % 8 == 0, "gemm_bf16: K (", p.K,
                 ") must be a multiple of 16, N (", p.N, ") of 8 and lda (", p.lda, ") of 8");
  GOSSAMER_CHECK(p.M >= 0 && p.N >= 0 && p.K >= 0, "gemm_bf16: negative shape");
  GOSSAMER_CHECK(!p.grouped.on() || p.grouped.complete(), "gemm_bf16: incomplete grouped params");
  GOSSAMER_CHECK(reinterpret_cast<uintptr_t>(p.a) % 16 == 0 && reinterpret_cast<uintptr_t>(p.b) % 16 == 0,
                 "gemm_bf16: a and b must be 16-byte aligned");
  GOSSAMER_CHECK(p.epilogue == GemmEpilogue::kSwiGlu ? p.ldc >= p.N / 2 : (p.ldc >= p.N && p.ldc % 2 == 0),
                 "gemm_bf16: bad ldc ", p.ldc, " for N ", p.N);
  if (p.M == 0 || p.N == 0) return;
  auto launch = [&](auto tile_rows, auto stages) {
    constexpr int kBM = decltype(tile_rows)::value, kStages = decltype(stages)::value;
    using T = Bf16Tile<kBM, kStages>;
    static bool configured = false;
    if (!configured) {
      GOSSAMER_CUDA_CHECK(cudaFuncSetAttribute(gemm_bf16_kernel<kBM, kStages>,
                                               cudaFuncAttributeMaxDynamicSharedMemorySize, T::kSmemBytes));
      configured = true;
    }
    const int tiles_m = p.grouped.on() ? p.grouped.max_tiles : ceil_div(p.M, kBM);
    if (tiles_m == 0) return;
    const dim3 grid(tiles_m, ceil_div(p.N, kBN));
    gemm_bf16_kernel<kBM, kStages><<<grid, T::kThreads, T::kSmemBytes, stream>>>(p);
    GOSSAMER_CUDA_CHECK_LAUNCH();
  };
  // One column tile of a plain product (the router): 64-row tiles (see the header); else, and always in grouped
  // mode (the plan's tiles are kGroupedBM rows), 128.
  if (!p.grouped.on() && p.N <= kBN) return launch(std::integral_constant<int, 64>{}, std::integral_constant<int, 6>{});
  launch(std::integral_constant<int, kGroupedBM>{}, std::integral_constant<int, 3>{});
}

}  // namespace gossamer::kernels
