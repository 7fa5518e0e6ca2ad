#include "core/dtype.h"

#include <gtest/gtest.h>

#include <cmath>

namespace gossamer {
namespace {

TEST(DTypeTest, Bf16RoundTripsEveryBitPattern) {
  for (uint32_t bits = 0; bits < 0x10000u; ++bits) {
    const float value = bf16_to_float(static_cast<uint16_t>(bits));
    if (std::isnan(value)) continue;
    EXPECT_EQ(float_to_bf16(value), bits);
  }
}

TEST(DTypeTest, Bf16RoundsToNearestEven) {
  // 1 + 2^-8 is exactly between 1 and 1 + 2^-7: ties go to the even mantissa (1.0).
  EXPECT_EQ(float_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3F80u);
  // 1 + 3·2^-8 is between 1+2^-7 (odd) and 1+2^-6 (even): goes up.
  EXPECT_EQ(float_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3F82u);
  EXPECT_EQ(float_to_bf16(1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20)), 0x3F81u);
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(NAN))));
}

TEST(DTypeTest, Fp8E4M3MatchesTheFormat) {
  EXPECT_EQ(fp8e4m3_to_float(0x7E), 448.0f);
  EXPECT_EQ(fp8e4m3_to_float(0x01), std::ldexp(1.0f, -9));
  EXPECT_EQ(fp8e4m3_to_float(0x38), 1.0f);
  EXPECT_TRUE(std::isnan(fp8e4m3_to_float(0x7F)));
  for (uint32_t bits = 0; bits < 256; ++bits) {
    const float value = fp8e4m3_to_float(static_cast<uint8_t>(bits));
    if (std::isnan(value)) continue;
    EXPECT_EQ(float_to_fp8e4m3(value), bits) << bits;
  }
  EXPECT_EQ(float_to_fp8e4m3(1000.0f), 0x7E);  // saturates
  EXPECT_EQ(float_to_fp8e4m3(-1000.0f), 0xFE);
  EXPECT_EQ(float_to_fp8e4m3(1.0625f), 0x38);  // tie between 1.0 and 1.125 → even (1.0)
  EXPECT_EQ(float_to_fp8e4m3(1.1875f), 0x3A);  // tie between 1.125 and 1.25 → even (1.25)
}

TEST(DTypeTest, Fp16RoundTripsEveryBitPattern) {
  for (uint32_t bits = 0; bits < 0x10000u; ++bits) {
    const float value = fp16_to_float(static_cast<uint16_t>(bits));
    if (std::isnan(value)) continue;
    EXPECT_EQ(float_to_fp16(value), bits) << bits;
  }
}

TEST(DTypeTest, E8M0AndFp4) {
  EXPECT_EQ(e8m0_to_float(127), 1.0f);
  EXPECT_EQ(e8m0_to_float(130), 8.0f);
  EXPECT_EQ(e8m0_to_float(0), std::ldexp(1.0f, -127));
  EXPECT_TRUE(std::isnan(e8m0_to_float(255)));
  EXPECT_EQ(float_to_e8m0(0.25f), 125);
  for (uint8_t code = 0; code < 16; ++code) {
    EXPECT_EQ(float_to_fp4e2m1(fp4e2m1_to_float(code)), code == 8 ? 8 : code);
  }
  EXPECT_EQ(fp4e2m1_to_float(0x7), 6.0f);
  EXPECT_EQ(fp4e2m1_to_float(0xF), -6.0f);
  EXPECT_EQ(float_to_fp4e2m1(0.25f), 0u);  // tie → even code
  EXPECT_EQ(float_to_fp4e2m1(1.25f), 2u);
  EXPECT_EQ(float_to_fp4e2m1(2.5f), 4u);
  EXPECT_EQ(float_to_fp4e2m1(5.0f), 6u);
  EXPECT_EQ(float_to_fp4e2m1(100.0f), 7u);
  EXPECT_EQ(float_to_fp4e2m1(-1.75f), 0xCu);
}

}  // namespace
}  // namespace gossamer
