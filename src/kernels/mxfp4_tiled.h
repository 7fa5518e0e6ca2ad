// Tile-major layout of MXFP4 expert weights, the cuda backend's storage for --weights mxfp4 and the
// input of the MXFP4 decode GEMV (gemv_mxfp4.h). 4.25 bits per weight, like the checkpoint.
//
// Source (the checkpoint, mxfp4_convert.h): blocks [G, N, K/32, 16] u8 (e2m1 codes, low nibble first =
// even column), scales [G, N, K/32] u8 (E8M0: value = code · 2^(e − 127)).
//
// Tiled: per group, tiles of 64 rows × 128 columns (4 MX blocks per row) of kMxfp4TileBytes = 4352 bytes,
// ordered (n / 64, k / 128) with k / 128 fastest; N is padded to a multiple of 64 and K to 128 (padding:
// code 0, scale 127). One tile is one warp step of the GEMV: 4352 contiguous bytes.
// Inside a tile, with row r = 8c + g (c = 0..7, g = 0..7) and t = 0..3 (lane = 4g + t of the GEMV):
//   bytes [0, 4096): 16-byte units at (32c + 4g + t) · 16; word j (0..3) of a unit holds the 8 codes of row
//     r at tile columns 32j + 8t + v (v = 0..7) — the lane's share of MX block j — with value v = 2p + h
//     (p = 0..3, h = 0..1) placed for a cheap exact decode to f16 (gemv_mxfp4_sm90.cu): its sign bit at
//     16h + {15, 12, 13, 14}[p] and its 3 magnitude bits at 16h + {9, 6, 0, 3}[p] (lowest bit).
//   bytes [4096, 4352): scale of row r = 8c + g, block j at 4096 + 32g + 4c + j (a lane group's 32
//     scales are contiguous: the 4 lanes of group g read the same 32 bytes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/cuda/cuda_types.h"  // cudaStream_t, GOSSAMER_HOST_DEVICE
#include "core/dtype.h"            // fp16_to_float, float_to_fp16 (host emulation below)

namespace gossamer::kernels {

inline constexpr int kMxfp4TileRows = 64;
inline constexpr int kMxfp4TileCols = 128;
inline constexpr int kMxfp4TileBytes = 4096 + 256;

GOSSAMER_HOST_DEVICE constexpr int64_t mxfp4_tiled_group_bytes(int64_t n, int64_t k) {
  return (n + 63) / 64 * ((k + 127) / 128) * kMxfp4TileBytes;
}

// Byte offset of tile (n / 64, k / 128) inside one group.
GOSSAMER_HOST_DEVICE constexpr int64_t mxfp4_tiled_tile_offset(int64_t n, int64_t k, int64_t k_dim) {
  return ((n >> 6) * ((k_dim + 127) / 128) + (k >> 7)) * kMxfp4TileBytes;
}

// Byte offset, inside its tile, of the E8M0 scale of element (r, kk) of the tile (r < 64, kk < 128).
GOSSAMER_HOST_DEVICE constexpr int mxfp4_tiled_scale_byte(int r, int kk) {
  return 4096 + 32 * (r % 8) + 4 * (r / 8) + kk / 32;
}

// Sign-bit and lowest-magnitude-bit positions of value v (0..7) inside its 32-bit word.
GOSSAMER_HOST_DEVICE constexpr int mxfp4_tiled_sign_bit(int v) {
  return 16 * (v & 1) + (v >> 1 == 0 ? 15 : 11 + (v >> 1));
}
GOSSAMER_HOST_DEVICE constexpr int mxfp4_tiled_mag_bit(int v) {
  return 16 * (v & 1) + (v >> 1 == 0 ? 9 : v >> 1 == 1 ? 6 : v >> 1 == 2 ? 0 : 3);
}

// The four f16x2 of one relaid word: o[p] holds values 2p (low half) and 2p + 1, each exactly fp4 · 2^-14
// (e2m1's exponent bits become f16's low exponent bits, its mantissa bit f16's top mantissa bit; code
// ±0.5 becomes the f16 subnormal ±2^-15). 6 logic ops, 1 shift and 2 multiplies for 8 weights.
// NOTE: values 4..7 move their sign and magnitude bits by different distances (2 and 9, 1 and 6); one
// multiply of the masked bits by 2^a + 2^b does both shifts: the two shifted copies share no bit for
// p = 2, and for p = 3 they share only bit 20 (a sign bit moved by 6 meets a magnitude bit moved by 1),
// whose carry stops at bit 23, outside the mask.
GOSSAMER_HOST_DEVICE inline void mxfp4_tiled_decode_word(uint32_t w, uint32_t (&o)[4]) {
  o[0] = w & 0x8E008E00u;
  o[1] = (w << 3) & 0x8E008E00u;
  o[2] = ((w & 0x20072007u) * ((1u << 2) + (1u << 9))) & 0x8E008E00u;
  o[3] = ((w & 0x40384038u) * ((1u << 1) + (1u << 6))) & 0x8E008E00u;
}

// The four bf16x2 of one relaid word: o[p] holds values 2p (low half) and 2p + 1, each exactly fp4 · 2^-126
// (e2m1's exponent bits become bf16's low exponent bits, its mantissa bit bf16's top mantissa bit; code ±0.5
// becomes the bf16 subnormal ±2^-127). The W4A16 GEMM's decode (gemm_w4a16.h), which then multiplies by the MX
// block's 2^(e − 1). 13 integer ops for 8 weights.
// NOTE: values 2, 3 and 4, 5 move their sign and magnitude bits by one multiply of the masked bits by 2^a + 2^b:
// 1 + 8 (the two shifted copies share no bit) and 4 + 64 (they share bit 19 — a sign bit moved by 6 meets a
// magnitude bit moved by 2 — whose carry stops below bit 22, outside the mask).
GOSSAMER_HOST_DEVICE inline void mxfp4_tiled_decode_word_bf16(uint32_t w, uint32_t (&o)[4]) {
  o[0] = (w & 0x80008000u) | ((w >> 3) & 0x01C001C0u);
  o[1] = ((w & 0x11C011C0u) * 9u) & 0x81C081C0u;
  o[2] = ((w & 0x20072007u) * 68u) & 0x81C081C0u;
  o[3] = ((w << 3) & 0x01C001C0u) | ((w << 1) & 0x80008000u);
}

// The register order of bf16 activations for the W4A16 GEMM (gemm_w4a16.h): wgmma's 16-bit A fragment gives lane
// (g, t) columns 2t, 2t + 1 and 8 + 2t, 9 + 2t of a k16 step, and mxfp4_tiled_decode_word_bf16 gives it columns
// 8t + 2p, 8t + 2p + 1 (p = 0..3) of each MX block, so p = 0, 1 feed the block's first k16 step and p = 2, 3 its
// second: stored column c of every 32 holds column w4a16_source_column(c). In 4-byte words (column pairs) of a
// 32-column chunk, stored word t + 4q holds source word 4t + q: a 4 × 4 transpose.
GOSSAMER_HOST_DEVICE constexpr int w4a16_source_column(int c) {
  const int word = (c & 31) >> 1;
  return (c & ~31) + 2 * (4 * (word & 3) + (word >> 2)) + (c & 1);
}

// ---- tiled MXFP4 → FP8 e4m3 by bit arithmetic (launch_mxfp4_tiled_to_fp8: random FP8 experts) ----
// The rule is mxfp4_convert.h's: in a 128×128 block whose largest MX exponent is e_max, a weight of an MX
// block with exponent e becomes fp8(fp4 · 2^(e − e_max + 6)). With k = e − e_max + 12 (≤ 12):
//   z = (fp4 · 2^-14) · 2^k    (mxfp4_tiled_decode_word, then one f16x2 multiply by mxfp4_f16x2_pow2(k))
// is the fp8 value · 2^-8, and an f16 of that size is the fp8 byte shifted: f16 exponent = fp8 exponent
// (bit 14 is 0), f16 mantissa bits 9..7 = fp8 mantissa, f16 subnormals (z < 2^-14) = fp8 subnormals. So
// the byte is z's sign | bits 13..7. Exactness: the multiply is exact for k ≥ −9; bits 6..0 are zero (no
// fp8 rounding) for k ≥ −2, i.e. e_max − e ≤ 14, and `round` rounds them to nearest even otherwise; below
// k = −9 every value is < 2^-10 and becomes ±0 either way. Bit-identical to launch_mxfp4_tiled_to_fp8
// for every k in [−24, 12] (clamp lower k to −24: those values are ±0 too).

// Both f16 halves 2^k, k in [−24, 15] (f16 subnormals below −14).
GOSSAMER_HOST_DEVICE constexpr uint32_t mxfp4_f16x2_pow2(int k) {
  return (k >= -14 ? uint32_t(k + 15) << 10 : 1u << (k + 24)) * 0x00010001u;
}

// f16x2 a · b, round to nearest even, subnormals kept (the device's mul.rn.f16x2; exact float emulation on
// the host: the product of two f16 fits a float).
GOSSAMER_HOST_DEVICE inline uint32_t mxfp4_mul_f16x2(uint32_t a, uint32_t b) {
#ifdef __CUDA_ARCH__
  uint32_t d;
  asm("mul.rn.f16x2 %0, %1, %2;\n" : "=r"(d) : "r"(a), "r"(b));
  return d;
#else
  uint32_t d = 0;
  for (int h = 0; h < 2; ++h) {
    const float x = fp16_to_float(static_cast<uint16_t>(a >> (16 * h)));
    const float y = fp16_to_float(static_cast<uint16_t>(b >> (16 * h)));
    d |= uint32_t(float_to_fp16(x * y)) << (16 * h);
  }
  return d;
#endif
}

// Bytes 1 and 3 of a, then of b (__byte_perm(a, b, 0x7531)).
GOSSAMER_HOST_DEVICE inline uint32_t mxfp4_odd_bytes(uint32_t a, uint32_t b) {
#ifdef __CUDA_ARCH__
  return __byte_perm(a, b, 0x7531);
#else
  return (a >> 8 & 0xFFu) | (a >> 24) << 8 | (b >> 8 & 0xFFu) << 16 | (b >> 24) << 24;
#endif
}

// The 8 weights of one relaid word (one MX block's exponent e) as e4m3 bytes in column order: lo holds
// values v = 0..3 (byte v), hi values 4..7. m2 = mxfp4_f16x2_pow2(k), k = e − e_max + 12 in [−24, 12];
// kRound as above (needed only when k < −2). Fast path: about 23 ops per 8 weights (decode 9, f16x2
// multiplies 4, shift + select 8, byte permutes 2).
template <bool kRound>
GOSSAMER_HOST_DEVICE inline void mxfp4_tiled_word_to_e4m3(uint32_t w, uint32_t m2, uint32_t& lo, uint32_t& hi) {
  uint32_t o[4];
  mxfp4_tiled_decode_word(w, o);
  uint32_t q[4];
  for (int p = 0; p < 4; ++p) {
    uint32_t z = mxfp4_mul_f16x2(o[p], m2);  // fp8 value · 2^-8 per half
    if (kRound) {
      const uint32_t mag = z & 0x7FFF7FFFu;  // ≤ 0x3E00 per half: no carry out of a half
      z = (z & 0x80008000u) | (mag + 0x003F003Fu + ((mag >> 7) & 0x00010001u));
    }
    // Sign (bit 15) kept, bits 13..7 moved to 14..8: byte 1 of each half is the e4m3 byte.
    q[p] = z ^ ((z ^ (z << 1)) & 0x7F007F00u);
  }
  lo = mxfp4_odd_bytes(q[0], q[1]);  // o[p] holds values 2p (low half) and 2p + 1
  hi = mxfp4_odd_bytes(q[2], q[3]);
}

// The e2m1 code (0..15) of element (n, k) and the E8M0 scale of its MX block, from one group's tiled bytes.
uint8_t mxfp4_tiled_code(const uint8_t* group, int64_t n, int64_t k, int64_t k_dim);
uint8_t mxfp4_tiled_scale(const uint8_t* group, int64_t n, int64_t k, int64_t k_dim);

// The weights [G, N, K] as bf16, exactly fp4 · 2^(e − 127) (every real checkpoint value fits bf16): what the W4A16
// GEMM (gemm_w4a16.h) multiplies, on host memory.
std::vector<uint16_t> mxfp4_tiled_to_bf16_cpu(const uint8_t* src, int groups, int n, int k);

// dst [G, mxfp4_tiled_group_bytes(N, K)] ← checkpoint blocks/scales [G, N, K/32, ...] (K a multiple of 32).
// Device pointers (blocks 4-byte aligned); asynchronous on `stream`.
void launch_mxfp4_to_tiled(const uint8_t* blocks, const uint8_t* scales, uint8_t* dst, int groups, int n, int k,
                           cudaStream_t stream);

// Tiled MXFP4 [G] → FP8 e4m3 tile-major (fp8_tiled.h, [G, fp8_tiled_group_bytes(N, K)]) with 128×128
// fp32 block scales [G, ceil(N/128), ceil(K/128)], by the rule of mxfp4_convert.h (per block over its real
// rows and columns: scale 2^(e_max − 133), weight fp8(fp4 · 2^(e − e_max + 6)); exact when the block's
// exponents span ≤ 13): bit-identical to launch_mxfp4_to_fp8 followed by launch_fp8_to_tiled. For the FP8
// experts of random weights (model/cuda CudaWeights::random, --weights fp8: the MXFP4 experts it draws, converted
// as a checkpoint's are). Device pointers (16-byte aligned); asynchronous on `stream`.
void launch_mxfp4_tiled_to_fp8(const uint8_t* src, uint8_t* dst, float* dst_scales, int groups, int n, int k,
                               cudaStream_t stream);

// The same on host memory: dst [G, fp8_tiled_group_bytes(N, K)] tile-major e4m3, dst_scales [G, ⌈N/128⌉,
// ⌈K/128⌉] fp32 (the reference of launch_mxfp4_tiled_to_fp8).
void mxfp4_tiled_to_fp8_cpu(const uint8_t* src, uint8_t* dst, float* dst_scales, int groups, int n, int k);

// The same on host memory.
void mxfp4_to_tiled_cpu(const uint8_t* blocks, const uint8_t* scales, uint8_t* dst, int groups, int n, int k);

}  // namespace gossamer::kernels
