// Warp-specialised FP8 block-scaled GEMM, 128×128 tiles (GemmTile::k128x128ws; see gemm_fp8.h). Not the
// default. First measured 3–5% slower than the plain kernel of gemm_fp8_blockscale_sm90.cu; after its
// address set-up moved to the shared helpers of gemm_fp8_common_sm90.cuh, one run gave 607 TFLOP/s at
// 8192×5120×2880 where the plain kernel measures 528–557 (PERF.md). It becomes the default only after an
// A/B in one session. Its consumers still wait for each K block's wgmma before promoting; at 148 registers
// (384 threads) there is no room for a second temporary accumulator to overlap them (setmaxnreg next).
#include "kernels/gemm_fp8_common_sm90.cuh"
#include "kernels/mbarrier_sm90.cuh"

namespace gossamer::kernels::gemm_fp8_detail {
namespace {

// ---- warp-specialised 128×128 ----
// Warps 0–7: two consumer warpgroups (rows 0–63 and 64–127); warps 8–11: producers. Per stage s the
// producers' 128 threads each copy their chunks of A, B and the scales with cp.async, wait for their own
// copies kWsInFlight stages later, make them visible to the async proxy and arrive on full[s]; consumers
// wait on full[s], run their wgmmas, wait for them, read the scales, arrive on empty[s] (the producers
// reuse the stage after it completes) and promote. No CTA-wide barrier after the prologue.
constexpr int kWsStages = 6;
constexpr int kWsInFlight = 5;  // copy groups a producer thread keeps pending
constexpr int kWsConsumers = 256;
constexpr int kWsProducers = 128;
constexpr int kWsThreads = kWsConsumers + kWsProducers;
constexpr int kWsStageBytes = 2 * 128 * kBK;  // A then B
constexpr int kWsScaleFloats = 128 + 4;
constexpr int kWsSmemBytes = 1024 + kWsStages * kWsStageBytes + kWsStages * kWsScaleFloats * 4 + 2 * kWsStages * 8;

__global__ void __launch_bounds__(kWsThreads, 1) gemm_fp8_ws_kernel(const GemmFp8Params p) {
  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  float* smem_scales = reinterpret_cast<float*>(smem + kWsStages * kWsStageBytes);
  uint64_t* full = reinterpret_cast<uint64_t*>(smem_scales + kWsStages * kWsScaleFloats);
  uint64_t* empty = full + kWsStages;

  TileOrigin t;
  if (!tile_origin<128, 128>(p, t)) return;
  const int group = t.group, m0 = t.m0, row_end = t.row_end, n0 = t.n0, num_kb = t.num_kb, kb_begin = t.kb_begin;
  const int n_blocks = max(0, t.kb_end - kb_begin);
  const int tid = threadIdx.x;
  if (tid == 0) {
    for (int s = 0; s < kWsStages; ++s) {
      mbar::init(&full[s], kWsProducers);
      mbar::init(&empty[s], kWsConsumers);
    }
  }
  __syncthreads();

  if (tid >= kWsConsumers) {
    // ================= producers =================
    const int ptid = tid - kWsConsumers;
    const int chunk_col = ptid % 8;
    const int64_t b_step = b_k_step(p);
    const float* b_scales = b_scale_row(p, group, n0, num_kb);
    constexpr int kChunks = 128 * 8 / kWsProducers;  // 16-byte chunks of A (and of B) per thread per stage
    const uint8_t* a_src[kChunks];
    const uint8_t* b_src[kChunks];
    uint32_t a_ok = 0, b_ok = 0;
#pragma unroll
    for (int i = 0; i < kChunks; ++i) {
      const int r = (ptid + i * kWsProducers) / 8;
      bool ok_a, ok_b;
      a_src[i] = a_chunk_source(p, m0 + r, row_end, chunk_col, ok_a);
      b_src[i] = b_chunk_source(p, group, n0 + r, chunk_col, ok_b);
      a_ok |= uint32_t(ok_a) << i;
      b_ok |= uint32_t(ok_b) << i;
    }
    // a scales: rows ptid + kWsProducers·h.
    constexpr int kScaleRows = 128 / kWsProducers;
    const float* a_scale_src[kScaleRows];
    bool a_scale_ok[kScaleRows];
#pragma unroll
    for (int h = 0; h < kScaleRows; ++h) {
      a_scale_src[h] = a_scale_source(p, m0 + ptid + kWsProducers * h, row_end, num_kb, a_scale_ok[h]);
    }
    for (int i = 0; i < n_blocks; ++i) {
      const int stage = i % kWsStages, kb = kb_begin + i;
      if (i >= kWsStages) mbar::wait(&empty[stage], ((i / kWsStages) - 1) & 1);
      uint8_t* sa = smem + stage * kWsStageBytes;
      uint8_t* sb = sa + 128 * kBK;
      const int k0 = kb * kBK;
      const bool k_ok = k0 + chunk_col * 16 < p.K;
#pragma unroll
      for (int c = 0; c < kChunks; ++c) {
        const int r = (ptid + c * kWsProducers) / 8;
        cp_async_16(sa + r * 128 + ((chunk_col ^ (r & 7)) << 4), a_src[c] + k0, ((a_ok >> c) & 1) && k_ok);
        cp_async_16(sb + r * 128 + ((chunk_col ^ (r & 7)) << 4), b_src[c] + k0 * b_step, ((b_ok >> c) & 1) && k_ok);
      }
      float* sc = smem_scales + stage * kWsScaleFloats;
#pragma unroll
      for (int h = 0; h < kScaleRows; ++h) {
        cp_async_4(sc + ptid + kWsProducers * h, a_scale_src[h] + (a_scale_ok[h] ? kb : 0), a_scale_ok[h]);
      }
      if (ptid == 0) cp_async_4(sc + 128, b_scales + kb, true);
      cp_async_commit();
      if (i >= kWsInFlight - 1) {  // stage i − (kWsInFlight − 1) has landed for this thread
        cp_async_wait<kWsInFlight - 1>();
        fence_proxy_async();
        mbar::arrive(&full[(i - (kWsInFlight - 1)) % kWsStages]);
      }
    }
    cp_async_wait<0>();
    fence_proxy_async();
    for (int i = max(0, n_blocks - (kWsInFlight - 1)); i < n_blocks; ++i) mbar::arrive(&full[i % kWsStages]);
    return;
  }

  // ================= consumers =================
  const int wg = tid / 128, warp = (tid % 128) / 32, lane = tid % 32;
  const int local_row = wg * 64 + warp * 16 + lane / 4;  // and local_row + 8
  float acc[64];
  float tmp[64];
  init_with_bias<128>(p, acc, group, n0, lane);
  for (int i = 0; i < n_blocks; ++i) {
    const int stage = i % kWsStages;
    mbar::wait(&full[stage], (i / kWsStages) & 1);
    const uint8_t* sa = smem + stage * kWsStageBytes + wg * 64 * kBK;
    const uint8_t* sb = smem + stage * kWsStageBytes + 128 * kBK;
    wgmma::fence();
#pragma unroll
    for (int kk = 0; kk < kBK / 32; ++kk) {
      wgmma_k32<128>(tmp, wgmma::desc_k128_sw128(sa + kk * 32), wgmma::desc_k128_sw128(sb + kk * 32), kk > 0);
    }
    wgmma::commit();
    wgmma::wait<0>();
    const float* sc = smem_scales + stage * kWsScaleFloats;
    const float s_b = sc[128], s0 = sc[local_row] * s_b, s1 = sc[local_row + 8] * s_b;
    mbar::arrive(&empty[stage]);  // the stage's operands and scales are no longer needed
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      acc[4 * j + 0] += tmp[4 * j + 0] * s0;
      acc[4 * j + 1] += tmp[4 * j + 1] * s0;
      acc[4 * j + 2] += tmp[4 * j + 2] * s1;
      acc[4 * j + 3] += tmp[4 * j + 3] * s1;
    }
  }
  write_out<128>(p, acc, m0, n0, row_end, local_row, lane);
}

}  // namespace

void launch_ws(const GemmFp8Params& p, cudaStream_t stream) {
  static bool configured = false;
  if (!configured) {
    GOSSAMER_CUDA_CHECK(cudaFuncSetAttribute(gemm_fp8_ws_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kWsSmemBytes));
    configured = true;
  }
  const int tiles_m = p.tile_group ? p.max_tiles : ceil_div(p.M, 128);
  const dim3 grid(tiles_m, ceil_div(p.N, 128), p.k_splits);
  if (grid.x == 0) return;
  gemm_fp8_ws_kernel<<<grid, kWsThreads, kWsSmemBytes, stream>>>(p);
  GOSSAMER_CUDA_CHECK_LAUNCH();
  if (p.k_splits > 1) launch_split_finalize(p, stream);
}

}  // namespace gossamer::kernels::gemm_fp8_detail
