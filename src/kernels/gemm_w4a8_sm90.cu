// W4A8 GEMM (gemm_w4a8.h) on sm_90a: the W4A16 kernel's pipeline (gemm_w4a16_sm90.cu) on e5m2 × e4m3 wgmma.
// Persistent: one CTA per SM walks the work units (weight tiles fastest), in clusters of 2 CTAs that compute
// neighbouring 128-row weight tiles of one 256-token tile and share its activations: each loads one half (128 token
// rows of 128 bytes) and multicasts it to both.
//
// A CTA computes 128 weight rows × 256 tokens with 384 threads:
//   warpgroup 0  producer: thread 0 issues, per K block of 128, its half of the activations (one tensor copy,
//                128B-swizzled, multicast) and two flat bulk copies of the weights as stored (the two 64-row MXFP4
//                tiles, 4,352 bytes each) into a ring of kStages stages, each guarded by a full and an empty barrier
//                (the 8 consumer warps of both CTAs arrive: a stage is refilled only once the peer released it too);
//   warpgroups 1 and 2  consumers: weight rows 0–63 and 64–127 (one MXFP4 tile each). Per K block every warp loads
//                its 16 rows' two 16-byte code units and scale words (lane (g, t): rows 16w + g and 16w + g + 8 —
//                for gate_up the gate / up pair 16w + 2g, 16w + 2g + 1, fragment_rows — columns 8t … 8t + 7 of each
//                MX block), decodes each MX block into the e5m2 A fragment of one k32
//                step (mxfp4_tiled_decode_word's f16 fp4 · 2^-14, one f16x2 multiply by 2^(e − r + 15) per value
//                pair, the high bytes) and runs four wgmma m64n256k32 (A from those registers, B the activations in
//                shared memory) into fp32 accumulators that run across all of K. Two sets of fragments: K block
//                kb + 1 is decoded while kb's wgmma run; a stage is released once its group completed. The finished
//                block (64 weight rows × 256 tokens) is scaled (a_scale per token, 2^(r − 128) per row), biased and
//                written transposed through the warpgroup's staging buffer, then copied out by the warpgroup in
//                16-byte pieces of whole token rows.
// The ring has 4 stages of 41 KiB; the epilogue goes out in two passes of 128 tokens through 18 KiB buffers.
// 256-token tiles with one 64-row block a warpgroup (rather than W4A16's 128 tokens and two blocks): each decoded
// weight feeds twice the MMAs, and the e4m3 activations' stage is the size of W4A16's bf16 one. The producer gives its
// registers to the consumers (setmaxnreg). A rank past the last weight tile loads and computes its peer's tile for the
// shared activations' and the barriers' sake and writes nothing; a warpgroup whose rows lie wholly past N skips its
// decode and wgmma but keeps the barrier protocol. Rows past N and K past the real columns decode the layout's padding
// (code 0, multiplied by a finite power of two) against the activations' zero fill.
#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include <algorithm>

#include "kernels/cuda_utils.h"
#include "kernels/gemm_mxfp4_pair_sm90.cuh"
#include "kernels/gemm_w4a8.h"
#include "kernels/mbarrier_sm90.cuh"
#include "kernels/mxfp4_tiled.h"
#include "kernels/swiglu.h"
#include "kernels/tma_sm90.cuh"
#include "kernels/wgmma_bf16_sm90.cuh"  // fence_operand
#include "kernels/wgmma_fp8_sm90.cuh"

namespace gossamer::kernels {
namespace {

constexpr int kThreads = 384;
constexpr int kTileW = 128;            // weight rows per CTA: 64 per consumer warpgroup
constexpr int kTileT = 256;            // tokens per tile (the n of wgmma)
constexpr int kBK = 128;               // K per stage: one MXFP4 tile's columns, one 128-byte activation row
constexpr int kXBytes = kTileT * kBK;  // [256 tokens][128 e4m3], 128B-swizzled
constexpr int kStageBytes = (kXBytes + 2 * kMxfp4TileBytes + 1023) / 1024 * 1024;  // activations, then weights
constexpr int kOutPitch = 2 * 64 + 16;  // a staged token row: 64 bf16 (or 32 e4m3) and 16 bytes
static_assert(kStageBytes % 1024 == 0 && kXBytes % 1024 == 0, "activations 1024-byte aligned (128B swizzle)");

// The ring's depth and the epilogue's passes: a warpgroup stages and copies out its 256 tokens in kParts passes through
// a buffer of 256 / kParts token rows, so that the staging buffers leave room for a fourth stage. (H100, 2026-12-07,
// two rounds: 4 stages in 2 passes 2–8% faster than 3 in 1 — 8,192 tokens E = 32 2,336 / 2,367 against 2,379 / 2,436
// µs route → combine, E = 128 1,024 tokens 1,753 / 1,708 against 1,910 / 1,865 — and 5 stages in 4 passes no faster
// than 4.)
constexpr int kStages = 4, kParts = 2;
constexpr int kBarOffset = kStages * kStageBytes;  // full[kStages], empty[kStages]
constexpr int kOutOffset = kBarOffset + 2 * kStages * 8;
constexpr int kOutTokens = kTileT / kParts;
constexpr int kOutBytes = kOutTokens * kOutPitch;  // one consumer warpgroup's staging buffer
constexpr int kSmemBytes = 1024 + kOutOffset + 2 * kOutBytes;
static_assert(kOutOffset % 16 == 0, "staging buffers 16-byte aligned (16-byte loads)");
static_assert(kSmemBytes <= 227 * 1024, "a CTA's shared memory");
// Registers after reallocation: a consumer thread holds 128 accumulators and two fragment sets (32).
constexpr int kProducerRegs = 56, kConsumerRegs = 224;
static_assert(128 * kProducerRegs + 256 * kConsumerRegs <= kThreads * 168, "more registers than the launch holds");

using namespace mxfp4_pair;  // Walk, Coord, kCluster, release, FragmentRows, launch_units

// The f16x2 multiplier 2^(e − r + 15) of an MX block with exponent e in a row whose largest is r (bias = 30 − r):
// v = e − r + 30 clamped to [0, 30] in both halves' exponent fields (v = 0: zero — blocks more than 29 binades below
// the row's largest read as zero; the upper clamp only meets the K padding's scale 127 in rows of smaller exponents,
// whose codes are 0).
__device__ __forceinline__ uint32_t block_multiplier(uint32_t e, int bias) {
  const int v = min(max(static_cast<int>(e) + bias, 0), 30);
  return static_cast<uint32_t>(v) * 0x04000400u;
}

// One warp's 16 weight rows of the K block in the stage's raw weights at `raw` as the e5m2 A fragments of its four
// k32 steps (MX block j = step j): fragment row g (rows.row[0]) into registers 0 / 2, row g + 8 (rows.row[1]) into
// 1 / 3; values 0–3 of a word into registers 0 / 1 (columns 4t …), 4–7 into 2 / 3 (columns 16 + 4t …).
__device__ __forceinline__ void load_fragments(uint32_t raw, const FragmentRows& rows, int bias0, int bias1,
                                               uint32_t (&a)[4][4]) {
  const uint4 u0 = mbar::ld_shared_v4(raw + rows.unit[0]);
  const uint4 u1 = mbar::ld_shared_v4(raw + rows.unit[1]);
  const uint32_t sw0 = mbar::ld_shared_u32(raw + rows.scales[0]), sw1 = mbar::ld_shared_u32(raw + rows.scales[1]);
  const uint32_t w0[4] = {u0.x, u0.y, u0.z, u0.w}, w1[4] = {u1.x, u1.y, u1.z, u1.w};
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const uint32_t m0 = block_multiplier((sw0 >> (8 * j)) & 0xFFu, bias0);
    const uint32_t m1 = block_multiplier((sw1 >> (8 * j)) & 0xFFu, bias1);
    uint32_t o0[4], o1[4];
    mxfp4_tiled_decode_word(w0[j], o0);
    mxfp4_tiled_decode_word(w1[j], o1);
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      o0[q] = mxfp4_mul_f16x2(o0[q], m0);
      o1[q] = mxfp4_mul_f16x2(o1[q], m1);
    }
    a[j][0] = mxfp4_odd_bytes(o0[0], o0[1]);  // e5m2 = an f16's high byte
    a[j][2] = mxfp4_odd_bytes(o0[2], o0[3]);
    a[j][1] = mxfp4_odd_bytes(o1[0], o1[1]);
    a[j][3] = mxfp4_odd_bytes(o1[2], o1[3]);
  }
}

// Consumer warpgroup cw's finished block — 64 weight rows from n_first (< N) × 256 tokens, scaled and biased in acc —
// into its staging buffer (token rows; kBias: 64 bf16, kSwiGluFp8: the 32 e4m3 SwiGLU outputs of the gate / up row
// pairs in register order), then copied to out by the warpgroup; in kParts passes of 256 / kParts tokens.
__device__ __forceinline__ void write_out(const GemmW4A8Params& p, const float (&acc)[128], const Coord& c, int n_first,
                                          int cw, uint8_t* buf) {
  const int wt = static_cast<int>(threadIdx.x) % 128, warp = wt / 32, lane = wt % 32, g = lane / 4, t = lane % 4;
  const uint32_t staging = tma::smem_u32(buf);
  constexpr int kJ = 32 / kParts;  // accumulator groups (8 tokens each) a pass
#pragma unroll
  for (int part = 0; part < kParts; ++part) {
    mbar::named_sync(1 + cw, 128);  // the previous pass's copies read this buffer
    if (p.epilogue == GemmEpilogue::kSwiGluFp8) {
      // Fragment rows g and g + 8 are the gate and up rows of output 8·warp + g (fragment_rows) of the block's 32, at
      // its register-order column: source word 2·warp + g / 4 → stored word warp (g < 4) or 4 + warp.
      const uint32_t col = (g < 4 ? 4 * warp : 12 + 4 * warp) + g;
#pragma unroll
      for (int jj = 0; jj < kJ; ++jj) {
        const int j = part * kJ + jj, token = 8 * jj + 2 * t;
        const float v0 = swiglu_clamped(acc[4 * j], acc[4 * j + 2]);      // token
        const float v1 = swiglu_clamped(acc[4 * j + 1], acc[4 * j + 3]);  // token + 1
        const uint32_t row = staging + token * kOutPitch + col;
        mbar::st_shared_u8(row, __nv_cvt_float_to_fp8(kW4A8HiddenScale * v0, __NV_SATFINITE, __NV_E4M3));
        mbar::st_shared_u8(row + kOutPitch, __nv_cvt_float_to_fp8(kW4A8HiddenScale * v1, __NV_SATFINITE, __NV_E4M3));
      }
    } else {
      const uint32_t col = 2 * (16 * warp + g);
#pragma unroll
      for (int jj = 0; jj < kJ; ++jj) {
        const int j = part * kJ + jj, token = 8 * jj + 2 * t;
        const uint32_t row_a = staging + token * kOutPitch + col, row_b = row_a + kOutPitch;
        mbar::st_shared_u16(row_a, __bfloat16_as_ushort(__float2bfloat16_rn(acc[4 * j])));
        mbar::st_shared_u16(row_b, __bfloat16_as_ushort(__float2bfloat16_rn(acc[4 * j + 1])));
        mbar::st_shared_u16(row_a + 16, __bfloat16_as_ushort(__float2bfloat16_rn(acc[4 * j + 2])));
        mbar::st_shared_u16(row_b + 16, __bfloat16_as_ushort(__float2bfloat16_rn(acc[4 * j + 3])));
      }
    }
    mbar::named_sync(1 + cw, 128);
    const int token0 = part * kOutTokens;
    if (p.epilogue == GemmEpilogue::kSwiGluFp8) {
      copy_rows<32, kOutTokens, kOutPitch, 4>(p.out, p.ldc, c, token0, staging, n_first / 2,
                                              min(32, (p.N - n_first) / 2), wt);
    } else {
      copy_rows<128, kOutTokens, kOutPitch, 4>(p.out, 2 * p.ldc, c, token0, staging, 2 * int64_t{n_first},
                                               2 * min(64, p.N - n_first), wt);
    }
  }
}

// The four wgmma of one K block (A: fragments a, B: the stage's activations) into acc, as one group; the tile's first
// K block (first) overwrites acc. (Operand fences: see gemm_w4a16_sm90.cu's mma_block.)
__device__ __forceinline__ void mma_block(float (&acc)[128], const uint32_t (&a)[4][4], uint64_t desc_x0, int s,
                                          bool first) {
  wgmma::fence_operand(acc);
  wgmma::fence();
  const uint64_t desc_stage = wgmma::desc_plus(desc_x0, s * kStageBytes);
#pragma unroll
  for (int j = 0; j < kBK / 32; ++j) {
    wgmma::wgmma_m64n256k32_e5m2_e4m3_rs(acc, a[j], wgmma::desc_plus(desc_stage, 32 * j), first && j == 0 ? 0 : 1);
  }
  wgmma::commit();
  wgmma::fence_operand(acc);
}

// The row exponent bias 30 − r of weight row n (rows past N: r = 255, so every block's multiplier is 0).
__device__ __forceinline__ int row_bias(const GemmW4A8Params& p, int group, int n) {
  return 30 - (n < p.N ? static_cast<int>(p.b_row_exponents[static_cast<int64_t>(group) * p.N + n]) : 255);
}

__device__ __forceinline__ void consume(const GemmW4A8Params& p, uint8_t* smem, uint64_t* full, uint64_t* empty) {
  tma::regs_claim<kConsumerRegs>();
  const int tid = static_cast<int>(threadIdx.x);
  const int cw = __shfl_sync(0xffffffffu, tid / 128, 0) - 1;  // (warp-uniform for the compiler)
  const int warp = (tid % 128) / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
  const FragmentRows rows = fragment_rows(p.epilogue == GemmEpilogue::kSwiGluFp8, warp, g, t);
  const int num_kb = ceil_div(p.K, kBK);
  const uint64_t desc_x0 = wgmma::desc_k128_sw128(smem);
  const uint32_t raw0 = tma::smem_u32(smem) + kXBytes + cw * kMxfp4TileBytes;
  uint8_t* buf = smem + kOutOffset + cw * kOutBytes;
  int s = 0;
  uint32_t phase = 0;
  const Walk w = walk_of<kTileW, kTileT>(p);
  for (int u = w.first; u < w.units; u += w.stride) {
    const Coord c = coord_of<kTileW, kTileT>(p, w, u);
    const int n_wg = c.n0_load + 64 * cw;  // this warpgroup's first weight row
    if (n_wg >= p.N) {                     // (uniform over the warpgroup) only the barrier protocol
      for (int kb = 0; kb < num_kb; ++kb, s = mbar::next_stage<kStages>(s, phase)) {
        mbar::wait(&full[s], phase);
        release(empty, s, lane, w.rank);
      }
      continue;
    }
    const int row0 = n_wg + rows.row[0], row1 = n_wg + rows.row[1];
    const int bias0 = row_bias(p, c.group, row0), bias1 = row_bias(p, c.group, row1);
    float acc[128];
    uint32_t a[2][4][4];
    int s_prev = s;
    mbar::wait(&full[s], phase);
    load_fragments(raw0 + s * kStageBytes, rows, bias0, bias1, a[0]);
    // K block kb's group reads `now`; once it is issued, wait<1> completes kb − 1's (which read `next` and stage
    // s_prev), so its stage is released and `next` takes K block kb + 1.
    const auto step = [&](int kb, uint32_t(&now)[4][4], uint32_t(&next)[4][4]) {
      mma_block(acc, now, desc_x0, s, kb == 0);
      wgmma::wait<1>();
      if (kb > 0) release(empty, s_prev, lane, w.rank);
      s_prev = s;
      s = mbar::next_stage<kStages>(s, phase);
      if (kb + 1 < num_kb) {
        mbar::wait(&full[s], phase);
        load_fragments(raw0 + s * kStageBytes, rows, bias0, bias1, next);
      }
    };
    for (int kb = 0; kb < num_kb; kb += 2) {
      step(kb, a[0], a[1]);
      if (kb + 1 < num_kb) step(kb + 1, a[1], a[0]);
    }
    // The epilogue's per-row factors 2^(r − 128) and biases (rows row0, row1), loaded while the last group runs.
    float rf[2], b[2] = {0.f, 0.f};
    rf[0] = row0 < p.N ? exp2f(static_cast<float>(30 - bias0 - 128)) : 0.f;
    rf[1] = row1 < p.N ? exp2f(static_cast<float>(30 - bias1 - 128)) : 0.f;
    if (p.bias != nullptr) {
      const uint16_t* bias = p.bias + static_cast<int64_t>(c.group) * p.N;
      if (row0 < p.N) b[0] = __bfloat162float(__ushort_as_bfloat16(bias[row0]));
      if (row1 < p.N) b[1] = __bfloat162float(__ushort_as_bfloat16(bias[row1]));
    }
    wgmma::wait<0>();
    release(empty, s_prev, lane, w.rank);
    wgmma::fence_operand(acc);
    // acc · a_scale[token] · 2^(r − 128) + bias (token rows past the last real one read the last's scale; a_scales
    // 8-byte aligned).
    const int last = p.M - 1;
#pragma unroll
    for (int j = 0; j < 32; ++j) {
      const int m = c.m0 + 8 * j + 2 * t;
      float s0 = p.a_scale, s1 = p.a_scale;
      if (p.a_scales != nullptr) {
        if (m < last && (c.m0 & 1) == 0) {  // (a_scales + m 8-byte aligned; m0's parity is the unit's)
          const float2 pair = __ldg(reinterpret_cast<const float2*>(p.a_scales + m));
          s0 = pair.x;
          s1 = pair.y;
        } else {
          s0 = __ldg(p.a_scales + min(m, last));
          s1 = __ldg(p.a_scales + min(m + 1, last));
        }
      }
      acc[4 * j] = fmaf(acc[4 * j], s0 * rf[0], b[0]);
      acc[4 * j + 1] = fmaf(acc[4 * j + 1], s1 * rf[0], b[0]);
      acc[4 * j + 2] = fmaf(acc[4 * j + 2], s0 * rf[1], b[1]);
      acc[4 * j + 3] = fmaf(acc[4 * j + 3], s1 * rf[1], b[1]);
    }
    const int n_first = c.n0 + 64 * cw;
    if (c.active && n_first < p.N) write_out(p, acc, c, n_first, cw, buf);
  }
}

__global__ void __launch_bounds__(kThreads, 1)
    gemm_w4a8_kernel(const __grid_constant__ CUtensorMap map_x, const GemmW4A8Params p) {
  extern __shared__ uint8_t smem_raw[];
  uint64_t *full, *empty;
  uint8_t* smem = init_ring<kStages>(smem_raw, kBarOffset, &map_x, full, empty);
  const int tid = static_cast<int>(threadIdx.x);

  if (tid < 128) {
    tma::regs_release<kProducerRegs>();
    if (tid == 0) {
      // Both 128-token halves of the activations land in the stage (the peer multicasts the other).
      produce<kStages, kTileW, kTileT, kStageBytes, kXBytes>(
          p, smem, full, empty, [&](uint8_t* stage, int kb, const Coord& c, const Walk& w, uint64_t* bar) {
            tma::copy_2d_multicast(stage + w.rank * (kTileT / kCluster) * kBK, &map_x, kb * kBK,
                                   c.m0 + (kTileT / kCluster) * w.rank, bar, 0x3);
          });
    }
  } else {
    consume(p, smem, full, empty);
  }
  // NOTE: no CTA of a cluster exits while its peer may still multicast into it or arrive on its barriers.
  tma::cluster_sync();
}

// ---- the activations quantized per row, in register order, scattered into expert order ----

// One warp per input row: the row's amax over two passes of 16-byte loads (the second hits L1), then each lane
// quantizes 8 source columns 8t … 8t + 7 (t = lane % 4) of a 32-column chunk into stored words t and 4 + t.
__global__ void w4a8_activations_kernel(const uint16_t* __restrict__ x, int64_t ldx, int rows, int K,
                                        const int32_t* __restrict__ scatter_rows, uint8_t* __restrict__ out,
                                        int64_t ldo, float* __restrict__ out_scales) {
  const int row = static_cast<int>((blockIdx.x * blockDim.x + threadIdx.x) / 32), lane = threadIdx.x % 32;
  if (row >= rows) return;
  const uint16_t* src = x + static_cast<int64_t>(row) * ldx;
  float amax = 0.f;
  for (int i = lane; i < K / 8; i += 32) {
    const uint4 v = *reinterpret_cast<const uint4*>(src + 8 * i);
    const uint32_t words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      amax = fmaxf(amax, fabsf(__bfloat162float(__ushort_as_bfloat16(static_cast<uint16_t>(words[q])))));
      amax = fmaxf(amax, fabsf(__bfloat162float(__ushort_as_bfloat16(static_cast<uint16_t>(words[q] >> 16)))));
    }
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
  amax = fmaxf(amax, 1e-4f);
  const float inv = 448.0f / amax;
  int dst[4];
#pragma unroll
  for (int k = 0; k < 4; ++k) dst[k] = scatter_rows[static_cast<int64_t>(row) * 4 + k];
  if (lane < 4) {
    const int32_t d = dst[lane];
    if (d >= 0) out_scales[d] = amax / 448.0f;
  }
  const int t = lane % 4;
  for (int chunk = lane / 4; chunk < K / 32; chunk += 8) {
    const uint4 v = *reinterpret_cast<const uint4*>(src + 32 * chunk + 8 * t);
    const uint32_t words[4] = {v.x, v.y, v.z, v.w};
    uint32_t q[2] = {0, 0};
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const float f = __bfloat162float(__ushort_as_bfloat16(static_cast<uint16_t>(words[i / 2] >> (16 * (i % 2)))));
      const uint32_t byte = __nv_cvt_float_to_fp8(__fmul_rn(f, inv), __NV_SATFINITE, __NV_E4M3);
      q[i / 4] |= byte << (8 * (i % 4));
    }
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      if (dst[k] < 0) continue;
      uint32_t* d = reinterpret_cast<uint32_t*>(out + static_cast<int64_t>(dst[k]) * ldo + 32 * chunk);
      d[t] = q[0];
      d[4 + t] = q[1];
    }
  }
}

// One thread per (group, row): the largest scale byte over the row's real K.
__global__ void mxfp4_tiled_row_exponents_kernel(const uint8_t* __restrict__ src, int groups, int n, int k,
                                                 uint8_t* __restrict__ out) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= int64_t{groups} * n) return;
  const int64_t group = i / n;
  const int row = static_cast<int>(i % n);
  const uint8_t* g = src + group * mxfp4_tiled_group_bytes(n, k);
  uint32_t e = 0;
  for (int c = 0; c < k; c += 32) {
    e = max(e,
            static_cast<uint32_t>(g[mxfp4_tiled_tile_offset(row, c, k) + mxfp4_tiled_scale_byte(row & 63, c & 127)]));
  }
  out[i] = static_cast<uint8_t>(e);
}

}  // namespace

int gemm_w4a8_tile_rows() {
  return kTileT;
}

void launch_gemm_w4a8(const GemmW4A8Params& p, cudaStream_t stream) {
  GOSSAMER_CHECK(p.K % 32 == 0, "gemm_w4a8: K a multiple of 32, not ", p.K);
  GOSSAMER_CHECK(reinterpret_cast<uintptr_t>(p.a) % 16 == 0 && p.lda % 16 == 0 &&
                     reinterpret_cast<uintptr_t>(p.b) % 16 == 0 && p.b_row_exponents != nullptr &&
                     reinterpret_cast<uintptr_t>(p.a_scales) % 8 == 0,
                 "gemm_w4a8: A and B 16-byte aligned, lda a multiple of 16, a_scales 8-byte aligned, the row exponents "
                 "given");
  GOSSAMER_CHECK(p.epilogue == GemmEpilogue::kBias || p.epilogue == GemmEpilogue::kSwiGluFp8,
                 "gemm_w4a8: the kBias and kSwiGluFp8 epilogues");
  const bool bf16_out = p.epilogue == GemmEpilogue::kBias;
  GOSSAMER_CHECK(reinterpret_cast<uintptr_t>(p.out) % 16 == 0 && p.ldc % (bf16_out ? 8 : 16) == 0 &&
                     p.N % (bf16_out ? 8 : 64) == 0,
                 "gemm_w4a8: out 16-byte aligned, ldc a multiple of 8 and N of 8 (kSwiGluFp8: 16 and 64)");
  if (p.M == 0 || p.N == 0) return;
  PersistentClusterLaunch launch(gemm_w4a8_kernel, kCluster, kThreads, kSmemBytes, stream);
  static const int max_units_in_flight = launch.resident_clusters("gemm_w4a8");
  // A: [M, K] bytes, row stride lda; box 128 bytes × 128 tokens (a rank's half of a tile).
  const uint64_t dims[2] = {static_cast<uint64_t>(p.K), static_cast<uint64_t>(p.M)};
  const uint64_t strides[1] = {static_cast<uint64_t>(p.lda)};
  const uint32_t box[2] = {kBK, kTileT / kCluster};
  const CUtensorMap map_x = tma::make_map_u8_sw128(p.a, 2, dims, strides, box);
  launch_units<kTileW, kTileT>(launch, max_units_in_flight, map_x, p);
}

void launch_w4a8_activations(const uint16_t* x, int64_t ldx, int rows, int K, const int32_t* scatter_rows, uint8_t* out,
                             int64_t ldo, float* out_scales, cudaStream_t stream) {
  GOSSAMER_CHECK(K % 32 == 0 && ldx % 8 == 0 && ldo % 16 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0 &&
                     reinterpret_cast<uintptr_t>(out) % 16 == 0,
                 "w4a8_activations: K a multiple of 32, x and out 16-byte aligned, ldx of 8 and ldo of 16");
  if (rows == 0) return;
  const int threads = 256;
  const auto blocks = static_cast<unsigned>(ceil_div<int64_t>(int64_t{rows} * 32, threads));
  w4a8_activations_kernel<<<blocks, threads, 0, stream>>>(x, ldx, rows, K, scatter_rows, out, ldo, out_scales);
  GOSSAMER_CUDA_CHECK_LAUNCH();
}

void launch_mxfp4_tiled_row_exponents(const uint8_t* src, int groups, int n, int k, uint8_t* out, cudaStream_t stream) {
  const int64_t count = int64_t{groups} * n;
  if (count == 0) return;
  const int threads = 256;
  mxfp4_tiled_row_exponents_kernel<<<static_cast<unsigned>(ceil_div<int64_t>(count, threads)), threads, 0, stream>>>(
      src, groups, n, k, out);
  GOSSAMER_CUDA_CHECK_LAUNCH();
}

}  // namespace gossamer::kernels
