// The TMA GEMM's dequantizing producer for MXFP4 weights (gemm_fp8_tma_sm90.cu with b_mxfp4; gemm_fp8.h).
// No tensor copy brings B: flat bulk copies bring the weights as stored (mxfp4_tiled.h, 4.25 bits a weight: per
// stage up to the four 64-row × 128-K tiles of the kBN = 256-row B tile, 17 KiB) into a ring of kRawStages raw
// slots running ahead of the FP8 stages, and the producer warpgroup's 128 threads turn a slot into the e4m3 bytes
// and fp32 block scales that launch_mxfp4_tiled_to_fp8 would have written, straight into the FP8 stage, in the
// layout the TMA copy of FP8 B leaves ([K half][kBN rows][64 bytes], 64B-swizzled). Where the cluster pair shares
// B each CTA decodes its own 128-row half and bulk-copies it into the peer's stage (produce_mxfp4).
//
// Per half and K block (two 64-row MXFP4 tiles): thread tid takes one pair of code units of each tile (row 8c + g,
// units 2q and 2q + 1: K columns 16q … 16q + 15 of each MX block; mxfp4_pair_unit), 2 × 32 bytes and its row's
// scale word; the warpgroup reduces the block's exponent range (a warp reduction, then 4 warps through shared
// memory and named barrier kMxfp4Barrier), thread 0 writes the block scale 2^(e_max − 133), and each thread
// turns its units into 4 × 2 swizzled 16-byte chunks (mxfp4_units_to_e4m3; the rule and its exactness are
// mxfp4_tiled.h's mxfp4_tiled_word_to_e4m3: bit-identical to launch_mxfp4_tiled_to_fp8). The lane → (c, g, q) map puts
// the 8 lanes of each quarter warp on rows g ∈ {0, 1, 4, 5} or {2, 3, 6, 7}: their 16-byte stores hit 8 distinct bank
// groups under the 64B swizzle (chunk ^= (row >> 1) & 3).
#pragma once

#include <cstdint>

#include "kernels/mbarrier_sm90.cuh"
#include "kernels/mxfp4_tiled.h"

namespace gossamer::kernels::gemm_fp8_detail {

// One row's two relaid code units t = 2tp and 2tp + 1 (uw0, uw1: word j of each is MX block j) and the row's
// scale word sw (its 4 E8M0 exponents, block j in byte j) → out[j]: the 16 e4m3 bytes of K columns 32j + 16tp …
// 32j + 16tp + 15 of the 128-wide K block. Each exponent is clamped to [e_lo, e_max] (e_lo = e_max − 14 on the
// fast path, e_max − 36 on the rounding one: kRound, needed when the block's exponents span more than 14
// binades) so that padding (exponent 127 or a zero-filled tile, code 0) never makes a non-finite multiplier;
// real exponents below e_max − 36 give ±0 either way.
template <bool kRound>
__device__ __forceinline__ void mxfp4_units_to_e4m3(const uint4& uw0, const uint4& uw1, uint32_t sw, int e_lo,
                                                    int e_max, uint4 (&out)[4]) {
  const uint32_t w0[4] = {uw0.x, uw0.y, uw0.z, uw0.w}, w1[4] = {uw1.x, uw1.y, uw1.z, uw1.w};
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const int e = min(max(static_cast<int>((sw >> (8 * j)) & 0xFFu), e_lo), e_max);
    // 2^k in both f16 halves, k = e − e_max + 12; in the fast path k ≥ −2 (a normal f16: (k + 15) << 10).
    const uint32_t m2 = kRound ? mxfp4_f16x2_pow2(e - e_max + 12) : uint32_t(e - e_max + 27) * 0x04000400u;
    mxfp4_tiled_word_to_e4m3<kRound>(w0[j], m2, out[j].x, out[j].y);
    mxfp4_tiled_word_to_e4m3<kRound>(w1[j], m2, out[j].z, out[j].w);
  }
}

// The largest and smallest MX exponent byte of sw's first valid_j blocks (the K block's real columns), as
// (max, min); a row past N contributes (0, 255).
__device__ __forceinline__ uint2 mxfp4_row_exponent_range(uint32_t sw, int valid_j, bool row_ok) {
  const uint32_t col_mask = valid_j >= 4 ? 0xFFFFFFFFu : (1u << (8 * valid_j)) - 1u;
  const uint32_t for_max = row_ok ? sw & col_mask : 0u, for_min = row_ok ? sw | ~col_mask : 0xFFFFFFFFu;
  const uint32_t hmax = __vmaxu2(__byte_perm(for_max, 0, 0x4140), __byte_perm(for_max, 0, 0x4342));
  const uint32_t hmin = __vminu2(__byte_perm(for_min, 0, 0x4140), __byte_perm(for_min, 0, 0x4342));
  return make_uint2(max(hmax & 0xFFFFu, hmax >> 16), min(hmin & 0xFFFFu, hmin >> 16));
}

constexpr int kMxfp4Barrier = 3;  // named barrier of the producer warpgroup (1 and 2: the consumers' epilogues)
constexpr int kMxfp4RawSlotBytes = 4 * kMxfp4TileBytes;  // one stage's B tile as stored: [half][64-row tile]

struct Mxfp4PairUnit {
  int c, g, q;  // row 8c + g of a 64-row MXFP4 tile, units 2q and 2q + 1
};
__device__ __forceinline__ Mxfp4PairUnit mxfp4_pair_unit(int tid) {
  return {tid >> 4, ((tid >> 1) & 1) | (((tid >> 3) & 1) << 1) | (((tid >> 2) & 1) << 2), tid & 1};
}

// One thread's codes of one 128-row half at one K block: per 64-row tile ti, units 2q (u0) and 2q + 1 (u1) and
// the row's scale word (zeros where the tile lies past N: those rows decode to 0).
struct Mxfp4HalfCodes {
  uint4 u0[2], u1[2];
  uint32_t sw[2];
};

// The codes of the half whose first row is n_half from its two tiles in a raw slot (raw_half: the slot's shared
// address + half · 2 · kMxfp4TileBytes; a tile past N was not copied and is not read: its codes are zeros).
__device__ __forceinline__ Mxfp4HalfCodes load_mxfp4_half(uint32_t raw_half, int n_half, int n, Mxfp4PairUnit pu) {
  Mxfp4HalfCodes codes;
#pragma unroll
  for (int ti = 0; ti < 2; ++ti) {
    codes.u0[ti] = codes.u1[ti] = make_uint4(0, 0, 0, 0);
    codes.sw[ti] = 0;
    if (n_half + 64 * ti < n) {
      const uint32_t tile = raw_half + ti * kMxfp4TileBytes;
      const uint32_t units = tile + (32 * pu.c + 4 * pu.g + 2 * pu.q) * 16;
      codes.u0[ti] = mbar::ld_shared_v4(units);
      codes.u1[ti] = mbar::ld_shared_v4(units + 16);
      codes.sw[ti] = mbar::ld_shared_u32(tile + 4096 + 32 * pu.g + 4 * pu.c);
    }
  }
  return codes;
}

// The half's e4m3 rows into the B stage at shared address sb (rows 128 · half …) and its block scale into
// scale_slot. Every thread of the producer warpgroup calls it (a named barrier inside); exchange: 16 ints of
// shared memory, parity alternating between calls.
template <int kBN>
__device__ __forceinline__ void store_mxfp4_half(const Mxfp4HalfCodes& codes, int n_half, int n, int k, int kb,
                                                 int half, Mxfp4PairUnit pu, uint32_t sb, uint32_t scale_slot,
                                                 int* exchange, int parity) {
  const int tid = threadIdx.x, warp = tid / 32;
  // ---- the block's exponent range over its real rows (< N) and MX blocks (< K) ----
  const int valid_j = min(4, (k - kb * 128) / 32);
  const uint2 r0 = mxfp4_row_exponent_range(codes.sw[0], valid_j, n_half + 8 * pu.c + pu.g < n);
  const uint2 r1 = mxfp4_row_exponent_range(codes.sw[1], valid_j, n_half + 64 + 8 * pu.c + pu.g < n);
  const uint32_t wmax = __reduce_max_sync(0xFFFFFFFFu, max(r0.x, r1.x));
  const uint32_t wmin = __reduce_min_sync(0xFFFFFFFFu, min(r0.y, r1.y));
  int* ex = exchange + 8 * parity;
  if (tid % 32 == 0) {
    ex[2 * warp] = static_cast<int>(wmax);
    ex[2 * warp + 1] = static_cast<int>(wmin);
  }
  // NOTE: the other parity's slots were last read before the previous call's barrier.
  mbar::named_sync(kMxfp4Barrier, 128);
  const int e_max = max(max(ex[0], ex[2]), max(ex[4], ex[6]));
  const int e_min = min(min(ex[1], ex[3]), min(ex[5], ex[7]));
  if (tid == 0) mbar::st_shared_f32(scale_slot, ldexpf(1.0f, e_max - 127 - 6));
  const bool fast = e_max - e_min <= 14;  // uniform over the warpgroup
#pragma unroll
  for (int ti = 0; ti < 2; ++ti) {
    uint4 out[4];
    if (fast) {
      mxfp4_units_to_e4m3<false>(codes.u0[ti], codes.u1[ti], codes.sw[ti], max(e_max - 14, 0), e_max, out);
    } else {
      mxfp4_units_to_e4m3<true>(codes.u0[ti], codes.u1[ti], codes.sw[ti], max(e_max - 36, 0), e_max, out);
    }
    const int row = 128 * half + 64 * ti + 8 * pu.c + pu.g;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      // K half j / 2, 16-byte chunk 2 (j % 2) + q of the row's 64 bytes, 64B-swizzled.
      const uint32_t off = (j / 2) * (kBN * 64) + row * 64 + (((2 * (j % 2) + pu.q) ^ ((row >> 1) & 3)) << 4);
      mbar::st_shared_v4(sb + off, out[j]);
    }
  }
}

}  // namespace gossamer::kernels::gemm_fp8_detail
