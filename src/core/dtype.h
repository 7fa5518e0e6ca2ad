// Element types and exact scalar conversions.
//
// All float→narrow conversions round to nearest, ties to even. Narrow→float conversions are exact.
// fp8 e4m3 is the "fn" variant (no infinities; 0x7F/0xFF are NaN; max finite 448); conversions to it
// saturate finite values to ±448. e8m0 is a bare exponent with bias 127 (0xFF is NaN). fp4 e2m1 has
// values {0, 0.5, 1, 1.5, 2, 3, 4, 6} and a sign bit (bit 3); conversion to it saturates to ±6.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace gossamer {

enum class DType : uint8_t { kF32, kF16, kBF16, kFP8E4M3, kE8M0, kFP4E2M1, kU8, kI8, kI32, kI64 };

// Bytes per element; kFP4E2M1 is packed two per byte and reports 1 (use bits_of for packing math).
int size_of(DType dtype);
int bits_of(DType dtype);
std::string_view name_of(DType dtype);
// Parses a safetensors dtype string ("BF16", "F32", "U8", "F8_E4M3", ...). Throws on unknown names.
DType dtype_from_safetensors(std::string_view name);
std::string_view safetensors_name(DType dtype);

// ---- bf16 -------------------------------------------------------------------------------------------
struct BF16 {
  uint16_t bits = 0;
};

inline float bf16_to_float(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

inline uint16_t float_to_bf16(float value) {
  const uint32_t u = std::bit_cast<uint32_t>(value);
  if ((u & 0x7F800000u) == 0x7F800000u && (u & 0x007FFFFFu) != 0) {
    return static_cast<uint16_t>((u >> 16) | 0x0040u);  // quiet NaN, sign kept
  }
  const uint32_t rounding_bias = 0x7FFFu + ((u >> 16) & 1u);
  return static_cast<uint16_t>((u + rounding_bias) >> 16);
}

// Rounds a float to the nearest bf16 value and returns it as float.
inline float round_to_bf16(float value) {
  return bf16_to_float(float_to_bf16(value));
}

// ---- fp16 (IEEE half) ---------------------------------------------------------------------------------
float fp16_to_float(uint16_t bits);
uint16_t float_to_fp16(float value);

// ---- fp8 e4m3 (fn) ------------------------------------------------------------------------------------
float fp8e4m3_to_float(uint8_t bits);
uint8_t float_to_fp8e4m3(float value);
inline constexpr float kFp8E4M3Max = 448.0f;

// ---- e8m0 (MX scale) ----------------------------------------------------------------------------------
// 2^(bits − 127); 0xFF is NaN.
float e8m0_to_float(uint8_t bits);
// The e8m0 code of the power of two nearest (in log space, ties up) to `value` > 0, clamped to the range.
uint8_t float_to_e8m0(float value);

// ---- fp4 e2m1 -----------------------------------------------------------------------------------------
inline constexpr float kFp4E2M1Values[16] = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                                             -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};
inline float fp4e2m1_to_float(uint8_t code) {
  return kFp4E2M1Values[code & 0xF];
}
uint8_t float_to_fp4e2m1(float value);

}  // namespace gossamer
