// The tile-major MXFP4 layout (kernels/mxfp4_tiled.h) and the MXFP4 GEMV reference (gemv_mxfp4_cpu): the
// relayout keeps every code and scale (checked against the checkpoint layout), the f16 bit decode is exact
// for every code in every word position, the e4m3 bit decode (the FP8 GEMM's on-chip dequantization)
// equals the conversion rule for every code, position and exponent distance, the CPU tiled → FP8
// conversion equals the checkpoint one, and the GEMV reference equals a plain double-precision
// computation from the checkpoint bytes.
#include "kernels/mxfp4_tiled.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <tuple>
#include <vector>

#include "core/dtype.h"
#include "kernels/fp8_tiled.h"
#include "kernels/gemv_mxfp4.h"
#include "kernels/mxfp4_convert.h"
#include "kernels/swiglu.h"

namespace gossamer::kernels {
namespace {

struct Checkpoint {
  int groups, n, k;
  std::vector<uint8_t> blocks, scales;  // [G, N, K/32, 16], [G, N, K/32]
};

Checkpoint random_checkpoint(int groups, int n, int k, std::mt19937& rng, int e_lo = 118, int e_hi = 126) {
  Checkpoint c{groups, n, k, std::vector<uint8_t>(size_t(groups) * n * k / 2),
               std::vector<uint8_t>(size_t(groups) * n * k / 32)};
  for (auto& b : c.blocks) b = static_cast<uint8_t>(rng());
  std::uniform_int_distribution<int> e(e_lo, e_hi);
  for (auto& s : c.scales) s = static_cast<uint8_t>(e(rng));
  return c;
}
uint8_t code_at(const Checkpoint& c, int g, int n, int k) {
  const uint8_t byte = c.blocks[((size_t(g) * c.n + n) * (c.k / 32) + k / 32) * 16 + (k % 32) / 2];
  return k % 2 ? byte >> 4 : byte & 0xF;
}
uint8_t scale_at(const Checkpoint& c, int g, int n, int k) {
  return c.scales[(size_t(g) * c.n + n) * (c.k / 32) + k / 32];
}

std::vector<uint8_t> tiled(const Checkpoint& c) {
  std::vector<uint8_t> t(size_t(c.groups) * mxfp4_tiled_group_bytes(c.n, c.k), 0xAB);
  mxfp4_to_tiled_cpu(c.blocks.data(), c.scales.data(), t.data(), c.groups, c.n, c.k);
  return t;
}

float f16_to_float(uint16_t h) {
  const int e = (h >> 10) & 31, m = h & 1023;
  const float v = e == 0 ? std::ldexp(float(m), -24) : std::ldexp(float(1024 + m), e - 25);
  return h & 0x8000 ? -v : v;
}

TEST(Mxfp4Tiled, KeepsEveryCodeAndScale) {
  std::mt19937 rng(7);
  for (const auto& [n, k] : {std::pair{136, 416}, std::pair{64, 128}, std::pair{8, 32}}) {
    const Checkpoint c = random_checkpoint(2, n, k, rng, 0, 255);
    const auto t = tiled(c);
    const int64_t gb = mxfp4_tiled_group_bytes(n, k);
    EXPECT_EQ(gb, (n + 63) / 64 * ((k + 127) / 128) * 4352);
    for (int g = 0; g < 2; ++g) {
      const uint8_t* grp = t.data() + g * gb;
      for (int r = 0; r < (n + 63) / 64 * 64; ++r) {
        for (int kk = 0; kk < (k + 127) / 128 * 128; ++kk) {
          const bool inside = r < n && kk < k;
          ASSERT_EQ(mxfp4_tiled_code(grp, r, kk, k), inside ? code_at(c, g, r, kk) : 0) << g << " " << r << " " << kk;
          ASSERT_EQ(mxfp4_tiled_scale(grp, r, kk, k), inside ? scale_at(c, g, r, kk) : 127)
              << g << " " << r << " " << kk;
        }
      }
    }
  }
}

// Every code at every value position v of a relaid word, the other positions holding other codes: the 16-bit half
// `decode` gives for position v must be code · 2^scale_exp as `to_float` reads it (and −0 stays −0).
template <typename Decode, typename ToFloat>
void expect_exact_decode(Decode decode, ToFloat to_float, int scale_exp) {
  for (int v = 0; v < 8; ++v) {
    for (uint32_t code = 0; code < 16; ++code) {
      for (uint32_t other : {0u, 15u, 7u, 9u}) {
        uint32_t w = 0;
        for (int u = 0; u < 8; ++u) {
          const uint32_t cu = u == v ? code : (other + u) & 15u;
          w |= (cu >> 3) << mxfp4_tiled_sign_bit(u) | (cu & 7u) << mxfp4_tiled_mag_bit(u);
        }
        uint32_t o[4];
        decode(w, o);
        const uint16_t h = static_cast<uint16_t>(o[v / 2] >> (16 * (v % 2)));
        EXPECT_EQ(to_float(h), std::ldexp(fp4e2m1_to_float(static_cast<uint8_t>(code)), scale_exp))
            << "v " << v << " code " << code;
        if (code == 8) {
          EXPECT_EQ(h, 0x8000) << "-0 stays -0";
        }
      }
    }
  }
}

// The word w whose bits under `mask` are the bits of `bits`, in order (the rest 0).
uint32_t scatter_bits(uint32_t bits, uint32_t mask) {
  uint32_t w = 0;
  for (int b = 0, n = 0; b < 32; ++b)
    if ((mask >> b) & 1u) w |= ((bits >> n++) & 1u) << b;
  return w;
}

TEST(Mxfp4Tiled, DecodeToF16IsExact) {
  expect_exact_decode([](uint32_t w, uint32_t(&o)[4]) { mxfp4_tiled_decode_word(w, o); }, f16_to_float, -14);
}

// The multiply form of values 4..7 (mxfp4_tiled_decode_word) against the plain shift-and-mask form, for
// every pattern of the 16 bits those values occupy (the other bits are masked off before the multiply).
TEST(Mxfp4Tiled, DecodeMultiplyFormMatchesShifts) {
  for (uint32_t bits = 0; bits < (1u << 16); ++bits) {
    const uint32_t w = scatter_bits(bits, 0x603F603Fu);
    for (const uint32_t rest : {0u, 0x9FC09FC0u}) {  // the bits of values 0..3: none, all
      const uint32_t v = w | rest;
      uint32_t o[4];
      mxfp4_tiled_decode_word(v, o);
      ASSERT_EQ(o[2], ((v << 2) & 0x80008000u) | ((v << 9) & 0x0E000E00u)) << std::hex << v;
      ASSERT_EQ(o[3], ((v << 1) & 0x80008000u) | ((v << 6) & 0x0E000E00u)) << std::hex << v;
    }
  }
}

// mxfp4_tiled_decode_word_bf16 (the W4A16 GEMM's decode): every code at every value position v of a word, the other
// positions holding other codes, gives exactly fp4 · 2^-126 (code ±0.5 a bf16 subnormal).
TEST(Mxfp4Tiled, DecodeToBf16IsExact) {
  expect_exact_decode([](uint32_t w, uint32_t(&o)[4]) { mxfp4_tiled_decode_word_bf16(w, o); }, bf16_to_float, -126);
}

// The multiply forms of values 2, 3 and 4, 5 (mxfp4_tiled_decode_word_bf16) against plain shifts and masks, for
// every pattern of the bits those values occupy, with the other values' bits all clear or all set.
TEST(Mxfp4Tiled, DecodeBf16MultiplyFormsMatchShifts) {
  for (uint32_t bits = 0; bits < (1u << 16); ++bits) {
    const uint32_t w = scatter_bits(bits, 0x31C731C7u);
    for (const uint32_t rest : {0u, 0xCE38CE38u}) {  // the bits of values 0, 1 and 6, 7: none, all
      const uint32_t x = w | rest;
      uint32_t o[4];
      mxfp4_tiled_decode_word_bf16(x, o);
      ASSERT_EQ(o[1], ((x << 3) & 0x80008000u) | (x & 0x01C001C0u)) << std::hex << x;
      ASSERT_EQ(o[2], ((x << 2) & 0x80008000u) | ((x << 6) & 0x01C001C0u)) << std::hex << x;
    }
  }
}

// The register order of gemm_w4a16.h: within 32 columns, wgmma's 16-bit A fragment columns 2t + q, 8 + 2t + q,
// 16 + 2t + q, 24 + 2t + q (lane t, q < 2) take the lane's tiled columns 8t + q, 8t + 2 + q, 8t + 4 + q,
// 8t + 6 + q; a permutation of every 32-column chunk that is its own inverse.
TEST(Mxfp4RegisterOrder, W4A16SourceColumnsFollowTheFragment) {
  for (int chunk = 0; chunk < 3; ++chunk) {
    const int base = 32 * chunk;
    for (int t = 0; t < 4; ++t) {
      for (int q = 0; q < 2; ++q) {
        for (int p = 0; p < 4; ++p) {
          EXPECT_EQ(w4a16_source_column(base + 8 * p + 2 * t + q), base + 8 * t + 2 * p + q);
        }
      }
    }
    for (int c = 0; c < 32; ++c) EXPECT_EQ(w4a16_source_column(w4a16_source_column(base + c)), base + c);
  }
}

// mxfp4_tiled_word_to_e4m3 against the rule of mxfp4_convert.h, fp8(fp4 · 2^(e − e_max + 6)) rounded by
// float_to_fp8e4m3: every code at every position, exponent distances 0..40 (the rounding variant; the
// plain one where it claims exactness, e_max − e ≤ 14), the lower ones clamped to 36 as the kernel does.
TEST(Mxfp4Tiled, WordToE4m3MatchesConversionRule) {
  for (int v = 0; v < 8; ++v) {
    for (uint32_t code = 0; code < 16; ++code) {
      for (uint32_t other : {0u, 15u, 7u, 9u}) {
        uint32_t w = 0;
        for (int u = 0; u < 8; ++u) {
          const uint32_t cu = u == v ? code : (other + u) & 15u;
          w |= (cu >> 3) << mxfp4_tiled_sign_bit(u) | (cu & 7u) << mxfp4_tiled_mag_bit(u);
        }
        for (int dist = 0; dist <= 40; ++dist) {
          const int k = 12 - std::min(dist, 36);
          const uint8_t want = float_to_fp8e4m3(std::ldexp(fp4e2m1_to_float(static_cast<uint8_t>(code)), 6 - dist));
          uint32_t lo = 0, hi = 0;
          mxfp4_tiled_word_to_e4m3<true>(w, mxfp4_f16x2_pow2(k), lo, hi);
          EXPECT_EQ((v < 4 ? lo : hi) >> (8 * (v % 4)) & 0xFFu, want)
              << "round, v " << v << " code " << code << " dist " << dist;
          if (dist > 14) continue;
          mxfp4_tiled_word_to_e4m3<false>(w, mxfp4_f16x2_pow2(k), lo, hi);
          EXPECT_EQ((v < 4 ? lo : hi) >> (8 * (v % 4)) & 0xFFu, want)
              << "v " << v << " code " << code << " dist " << dist;
        }
      }
    }
  }
}

// The CPU tiled → FP8 conversion (the reference of launch_mxfp4_tiled_to_fp8) equals the checkpoint conversion
// followed by the FP8 tile-major relayout, partial blocks and wide exponent spans included.
TEST(Mxfp4Tiled, ToFp8MatchesCheckpointConversion) {
  std::mt19937 rng(9);
  for (const auto& [groups, n, k, lo, hi] :
       {std::tuple{2, 136, 416, 116, 124}, std::tuple{1, 352, 2880, 100, 127}, std::tuple{3, 200, 96, 60, 200}}) {
    const Checkpoint c = random_checkpoint(groups, n, k, rng, lo, hi);
    std::vector<uint8_t> fp8(size_t(groups) * n * k), want(size_t(groups) * fp8_tiled_group_bytes(n, k));
    std::vector<float> scales(size_t(groups) * ((n + 127) / 128) * ((k + 127) / 128));
    Mxfp4ToFp8Params cv;
    cv.blocks = c.blocks.data();
    cv.scales = c.scales.data();
    cv.out = fp8.data();
    cv.out_scales = scales.data();
    cv.num_experts = groups;
    cv.rows = n;
    cv.cols = k;
    mxfp4_to_fp8_cpu(cv);
    fp8_to_tiled_cpu(fp8.data(), want.data(), groups, n, k);
    std::vector<uint8_t> got(want.size(), 0xAB);
    std::vector<float> got_scales(scales.size(), -1.f);
    mxfp4_tiled_to_fp8_cpu(tiled(c).data(), got.data(), got_scales.data(), groups, n, k);
    EXPECT_TRUE(got == want) << groups << "×" << n << "×" << k;
    EXPECT_EQ(got_scales, scales) << groups << "×" << n << "×" << k;
  }
}

// The reference against double-precision sums over the checkpoint bytes, dense and grouped.
TEST(GemvMxfp4Reference, MatchesCheckpointMath) {
  std::mt19937 rng(8);
  const int N = 72, K = 416, M = 3;
  const Checkpoint c = random_checkpoint(3, N, K, rng);
  const auto t = tiled(c);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<uint16_t> x(size_t(M) * K), bias(size_t(3) * N);
  for (auto& v : x) v = float_to_bf16(nd(rng));
  for (auto& v : bias) v = float_to_bf16(nd(rng));
  auto exact = [&](int g, int m, int n) {
    double acc = bf16_to_float(bias[size_t(g) * N + n]);
    for (int k = 0; k < K; ++k)
      acc += double(bf16_to_float(x[size_t(m) * K + k])) * fp4e2m1_to_float(code_at(c, g, n, k)) *
             std::ldexp(1.0, scale_at(c, g, n, k) - 127);
    return acc;
  };
  for (const bool swiglu : {false, true}) {
    GemvMxfp4Params p;
    p.x = x.data();
    p.ldx = K;
    p.w = t.data();
    p.bias = bias.data();
    p.N = N;
    p.K = K;
    p.epilogue = swiglu ? GemmEpilogue::kSwiGlu : GemmEpilogue::kBias;
    const int out_cols = swiglu ? N / 2 : N;
    p.ldc = out_cols;
    // Grouped: pairs of tokens (divisor 2) over experts 10..12; expert 9 and 13 belong to other ranks.
    const std::vector<int32_t> ids = {11, 9, 12, 10, 13, 11};
    std::vector<int32_t> pair_row(ids.size(), 99);
    std::vector<uint16_t> out(ids.size() * out_cols, 0xFFFF);
    p.out = out.data();
    p.topk_ids = ids.data();
    p.num_pairs = static_cast<int>(ids.size());
    p.expert_begin = 10;
    p.num_local_experts = 3;
    p.x_pair_divisor = 2;
    p.pair_row = pair_row.data();
    gemv_mxfp4_cpu(p);
    for (size_t q = 0; q < ids.size(); ++q) {
      const int e = ids[q] - 10;
      const bool local = e >= 0 && e < 3;
      EXPECT_EQ(pair_row[q], local ? int(q) : -1);
      for (int j = 0; j < out_cols; ++j) {
        const uint16_t got = out[q * out_cols + j];
        if (!local) {
          EXPECT_EQ(got, 0xFFFF) << "pair " << q << " of another rank was written";
          continue;
        }
        const int m = int(q) / 2;
        const double want =
            swiglu ? swiglu_clamped_cpu(float(exact(e, m, 2 * j)), float(exact(e, m, 2 * j + 1))) : exact(e, m, j);
        EXPECT_NEAR(bf16_to_float(got), want, 1e-2 * std::abs(want) + 1e-3) << "pair " << q << " col " << j;
      }
    }
  }
}

}  // namespace
}  // namespace gossamer::kernels
