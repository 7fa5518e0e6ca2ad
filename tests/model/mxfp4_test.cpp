// MXFP4 decoding: low nibble first, E8M0 scale with bias 127, 32-element blocks along the input dim.
#include <gtest/gtest.h>

#include <cmath>

#include "model/cpu_ops.h"

namespace gossamer::model {
namespace {

TEST(Mxfp4Test, DecodesEveryCodeWithItsScale) {
  // 2 experts × 3 rows × 64 cols: 2 blocks per row.
  const int64_t experts = 2, rows = 3, cols = 64, groups = cols / 32;
  std::vector<uint8_t> blocks(static_cast<size_t>(experts * rows * groups * 16));
  std::vector<uint8_t> scales(static_cast<size_t>(experts * rows * groups));
  for (size_t i = 0; i < blocks.size(); ++i) blocks[i] = static_cast<uint8_t>((i * 37 + 11) & 0xFF);
  for (size_t i = 0; i < scales.size(); ++i) scales[i] = static_cast<uint8_t>(120 + i % 12);
  MxFp4Tensor tensor{TensorView{blocks.data(), DType::kU8, {experts, rows, groups, 16}},
                     TensorView{scales.data(), DType::kU8, {experts, rows, groups}}};
  std::vector<float> out(static_cast<size_t>(rows * cols));
  for (int64_t e = 0; e < experts; ++e) {
    cpu::decode_mxfp4_expert(tensor, e, out.data());
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) {
        const int64_t g = c / 32, j = (c % 32) / 2;
        const uint8_t byte = blocks[static_cast<size_t>(((e * rows + r) * groups + g) * 16 + j)];
        const uint8_t code = (c % 2 == 0) ? (byte & 0xF) : (byte >> 4);
        const float scale = std::ldexp(1.0f, scales[static_cast<size_t>((e * rows + r) * groups + g)] - 127);
        EXPECT_EQ(out[static_cast<size_t>(r * cols + c)], kFp4E2M1Values[code] * scale) << e << "," << r << "," << c;
      }
    }
  }
}

TEST(Mxfp4Test, KnownBytes) {
  // Byte 0x71: low nibble 1 (0.5) is element 0, high nibble 7 (6.0) is element 1; scale 2^(128-127) = 2.
  std::vector<uint8_t> blocks(16, 0);
  blocks[0] = 0x71;
  blocks[15] = 0xF8;  // element 30 = -0, element 31 = -6
  std::vector<uint8_t> scales = {128};
  MxFp4Tensor tensor{TensorView{blocks.data(), DType::kU8, {1, 1, 1, 16}},
                     TensorView{scales.data(), DType::kU8, {1, 1, 1}}};
  std::vector<float> out(32);
  cpu::decode_mxfp4_expert(tensor, 0, out.data());
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], 12.0f);
  EXPECT_EQ(out[30], 0.0f);
  EXPECT_TRUE(std::signbit(out[30]));
  EXPECT_EQ(out[31], -12.0f);
}

}  // namespace
}  // namespace gossamer::model
