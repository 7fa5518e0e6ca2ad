#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/dtype.h"
#include "core/parallel.h"
#include "kernels/fp8_tiled.h"
#include "kernels/mxfp4_tiled.h"

namespace gossamer::kernels {
namespace {

// Position of element (r, kk) inside a tile (r < 64, kk < 128): the 32-bit word's byte offset and value v.
struct InTile {
  int64_t word_byte;
  int v;
};
InTile in_tile(int r, int kk) {
  const int c = r / 8, g = r % 8, j = kk / 32, t = (kk % 32) / 8, v = kk % 8;
  return {(32 * c + 4 * g + t) * 16 + 4 * j, v};
}

}  // namespace

uint8_t mxfp4_tiled_code(const uint8_t* group, int64_t n, int64_t k, int64_t k_dim) {
  const uint8_t* tile = group + mxfp4_tiled_tile_offset(n, k, k_dim);
  const InTile at = in_tile(static_cast<int>(n & 63), static_cast<int>(k & 127));
  uint32_t w;
  std::memcpy(&w, tile + at.word_byte, 4);
  const uint32_t sign = (w >> mxfp4_tiled_sign_bit(at.v)) & 1u, mag = (w >> mxfp4_tiled_mag_bit(at.v)) & 7u;
  return static_cast<uint8_t>(sign << 3 | mag);
}

uint8_t mxfp4_tiled_scale(const uint8_t* group, int64_t n, int64_t k, int64_t k_dim) {
  return group[mxfp4_tiled_tile_offset(n, k, k_dim) +
               mxfp4_tiled_scale_byte(static_cast<int>(n & 63), static_cast<int>(k & 127))];
}

std::vector<uint16_t> mxfp4_tiled_to_bf16_cpu(const uint8_t* src, int groups, int n, int k) {
  std::vector<uint16_t> w(static_cast<size_t>(groups) * n * k);
  parallel_for(int64_t{groups} * n, 16, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const uint8_t* group = src + r / n * mxfp4_tiled_group_bytes(n, k);
      const int64_t row = r % n;
      for (int64_t c = 0; c < k; ++c) {
        const float v = std::ldexp(fp4e2m1_to_float(mxfp4_tiled_code(group, row, c, k)),
                                   int(mxfp4_tiled_scale(group, row, c, k)) - 127);
        w[static_cast<size_t>(r) * k + c] = float_to_bf16(v);
      }
    }
  });
  return w;
}

void mxfp4_tiled_to_fp8_cpu(const uint8_t* src, uint8_t* dst, float* dst_scales, int groups, int n, int k) {
  const int nb = (n + 127) / 128, kb = (k + 127) / 128;
  const int64_t kp = fp8_tiled_pad(k), np = fp8_tiled_pad(n);
  std::memset(dst, 0, static_cast<size_t>(groups * fp8_tiled_group_bytes(n, k)));
  // Blocks are independent: one (group, row block) per task.
  parallel_for(int64_t(groups) * nb, 1, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t gr = b / nb, rb = b % nb;
      const uint8_t* group = src + gr * mxfp4_tiled_group_bytes(n, k);
      uint8_t* out = dst + gr * fp8_tiled_group_bytes(n, k);
      const int64_t r0 = rb * 128, r1 = std::min<int64_t>(n, r0 + 128);
      for (int cb = 0; cb < kb; ++cb) {
        const int64_t c0 = int64_t(cb) * 128, c1 = std::min<int64_t>(k, c0 + 128);
        int e_max = 0;
        for (int64_t r = r0; r < r1; ++r)
          for (int64_t c = c0; c < c1; c += 32) e_max = std::max(e_max, int(mxfp4_tiled_scale(group, r, c, k)));
        dst_scales[(gr * nb + rb) * kb + cb] = std::ldexp(1.0f, e_max - 127 - 6);
        for (int64_t r = r0; r < std::min<int64_t>(np, r0 + 128); ++r) {
          for (int64_t c = c0; c < std::min<int64_t>(kp, c0 + 128); ++c) {
            const int shift = int(mxfp4_tiled_scale(group, r, c, k)) - e_max + 6;
            const float v = std::ldexp(fp4e2m1_to_float(mxfp4_tiled_code(group, r, c, k)), shift);
            out[fp8_tiled_offset(r, c, kp)] = float_to_fp8e4m3(v);
          }
        }
      }
    }
  });
}

void mxfp4_to_tiled_cpu(const uint8_t* blocks, const uint8_t* scales, uint8_t* dst, int groups, int n, int k) {
  const int64_t group_bytes = mxfp4_tiled_group_bytes(n, k), kp = (k + 127) / 128 * 128, np = (n + 63) / 64 * 64;
  const int64_t mx = k / 32;
  std::memset(dst, 0, static_cast<size_t>(groups * group_bytes));
  for (int gr = 0; gr < groups; ++gr) {
    uint8_t* out = dst + gr * group_bytes;
    for (int64_t r = 0; r < np; ++r) {
      for (int64_t kk = 0; kk < kp; ++kk) {
        uint8_t* tile = out + mxfp4_tiled_tile_offset(r, kk, k);
        const bool inside = r < n && kk < k;
        const int64_t mb = (int64_t(gr) * n + r) * mx + kk / 32;
        if (kk % 32 == 0)
          tile[mxfp4_tiled_scale_byte(static_cast<int>(r & 63), static_cast<int>(kk & 127))] =
              inside ? scales[mb] : 127;
        if (!inside) continue;
        const uint8_t byte = blocks[mb * 16 + (kk % 32) / 2];
        const uint32_t code = kk % 2 ? byte >> 4 : byte & 0xF;
        const InTile at = in_tile(static_cast<int>(r & 63), static_cast<int>(kk & 127));
        uint32_t w;
        std::memcpy(&w, tile + at.word_byte, 4);
        w |= (code >> 3) << mxfp4_tiled_sign_bit(at.v) | (code & 7u) << mxfp4_tiled_mag_bit(at.v);
        std::memcpy(tile + at.word_byte, &w, 4);
      }
    }
  }
}

}  // namespace gossamer::kernels
