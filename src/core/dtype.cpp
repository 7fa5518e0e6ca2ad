#include "core/dtype.h"

#include <cmath>
#include <limits>

#include "core/error.h"

namespace gossamer {

int size_of(DType dtype) {
  switch (dtype) {
    case DType::kF32: return 4;
    case DType::kF16: return 2;
    case DType::kBF16: return 2;
    case DType::kFP8E4M3: return 1;
    case DType::kE8M0: return 1;
    case DType::kFP4E2M1: return 1;
    case DType::kU8: return 1;
    case DType::kI8: return 1;
    case DType::kI32: return 4;
    case DType::kI64: return 8;
  }
  GOSSAMER_ASSERT(false, "unknown dtype");
}

int bits_of(DType dtype) {
  return dtype == DType::kFP4E2M1 ? 4 : 8 * size_of(dtype);
}

std::string_view name_of(DType dtype) {
  switch (dtype) {
    case DType::kF32: return "f32";
    case DType::kF16: return "f16";
    case DType::kBF16: return "bf16";
    case DType::kFP8E4M3: return "fp8_e4m3";
    case DType::kE8M0: return "e8m0";
    case DType::kFP4E2M1: return "fp4_e2m1";
    case DType::kU8: return "u8";
    case DType::kI8: return "i8";
    case DType::kI32: return "i32";
    case DType::kI64: return "i64";
  }
  GOSSAMER_ASSERT(false, "unknown dtype");
}

DType dtype_from_safetensors(std::string_view name) {
  if (name == "F32") return DType::kF32;
  if (name == "F16") return DType::kF16;
  if (name == "BF16") return DType::kBF16;
  if (name == "F8_E4M3") return DType::kFP8E4M3;
  if (name == "F8_E8M0") return DType::kE8M0;
  if (name == "U8") return DType::kU8;
  if (name == "I8") return DType::kI8;
  if (name == "I32") return DType::kI32;
  if (name == "I64") return DType::kI64;
  GOSSAMER_THROW("unsupported safetensors dtype '", name, "'");
}

std::string_view safetensors_name(DType dtype) {
  switch (dtype) {
    case DType::kF32: return "F32";
    case DType::kF16: return "F16";
    case DType::kBF16: return "BF16";
    case DType::kFP8E4M3: return "F8_E4M3";
    case DType::kE8M0: return "F8_E8M0";
    case DType::kU8: return "U8";
    case DType::kI8: return "I8";
    case DType::kI32: return "I32";
    case DType::kI64: return "I64";
    case DType::kFP4E2M1: break;
  }
  GOSSAMER_THROW("dtype ", name_of(dtype), " has no safetensors name");
}

float fp16_to_float(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1Fu;
  const uint32_t mantissa = bits & 0x3FFu;
  if (exponent == 0) {
    const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -magnitude : magnitude;
  }
  if (exponent == 31) {
    return std::bit_cast<float>(sign | 0x7F800000u | (mantissa << 13));
  }
  return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

namespace {
// Rounds |value| (finite, ≥ 0) to a format with `mantissa_bits` fraction bits whose smallest normal
// exponent is `min_exponent` (subnormals below it share the quantum 2^(min_exponent − mantissa_bits)).
// Returns the rounded magnitude (round to nearest, ties to even).
float round_magnitude(float magnitude, int mantissa_bits, int min_exponent) {
  if (magnitude == 0.0f) return 0.0f;
  int exponent = std::ilogb(magnitude);
  if (exponent < min_exponent) exponent = min_exponent;
  const float quantum = std::ldexp(1.0f, exponent - mantissa_bits);
  return std::nearbyint(magnitude / quantum) * quantum;  // default FE_TONEAREST: ties to even
}
}  // namespace

uint16_t float_to_fp16(float value) {
  if (std::isnan(value)) return 0x7E00u;
  const uint16_t sign = std::signbit(value) ? 0x8000u : 0u;
  const float rounded = round_magnitude(std::fabs(value), 10, -14);
  if (rounded >= 65520.0f || std::isinf(value)) return sign | 0x7C00u;
  if (rounded == 0.0f) return sign;
  int exponent = std::ilogb(rounded);
  if (exponent < -14) {  // subnormal
    return sign | static_cast<uint16_t>(std::ldexp(rounded, 24));
  }
  const uint32_t mantissa = static_cast<uint32_t>(std::ldexp(rounded, 10 - exponent)) - 1024u;
  return sign | static_cast<uint16_t>(((exponent + 15) << 10) | mantissa);
}

float fp8e4m3_to_float(uint8_t bits) {
  const bool negative = bits & 0x80u;
  const int exponent = (bits >> 3) & 0xF;
  const int mantissa = bits & 0x7;
  if (exponent == 0xF && mantissa == 0x7) return std::numeric_limits<float>::quiet_NaN();
  float magnitude = exponent == 0 ? std::ldexp(static_cast<float>(mantissa), -9)
                                  : std::ldexp(static_cast<float>(8 + mantissa), exponent - 10);
  return negative ? -magnitude : magnitude;
}

uint8_t float_to_fp8e4m3(float value) {
  if (std::isnan(value)) return 0x7Fu;
  const uint8_t sign = std::signbit(value) ? 0x80u : 0u;
  float rounded = round_magnitude(std::fabs(value), 3, -6);
  if (rounded > kFp8E4M3Max || std::isinf(value)) rounded = kFp8E4M3Max;  // saturate (satfinite)
  if (rounded == 0.0f) return sign;
  const int exponent = std::ilogb(rounded);
  if (exponent < -6) return sign | static_cast<uint8_t>(std::ldexp(rounded, 9));
  const int mantissa = static_cast<int>(std::ldexp(rounded, 3 - exponent)) - 8;
  return sign | static_cast<uint8_t>(((exponent + 7) << 3) | mantissa);
}

float e8m0_to_float(uint8_t bits) {
  if (bits == 0xFFu) return std::numeric_limits<float>::quiet_NaN();
  return std::ldexp(1.0f, static_cast<int>(bits) - 127);
}

uint8_t float_to_e8m0(float value) {
  GOSSAMER_CHECK(value > 0.0f && std::isfinite(value), "e8m0 needs a positive finite value, got ", value);
  const int exponent = static_cast<int>(std::lround(std::log2(static_cast<double>(value))));
  const int biased = exponent + 127;
  if (biased < 0) return 0;
  if (biased > 254) return 254;
  return static_cast<uint8_t>(biased);
}

uint8_t float_to_fp4e2m1(float value) {
  if (std::isnan(value)) return 0;
  const uint8_t sign = std::signbit(value) ? 0x8u : 0u;
  const float magnitude = std::fabs(value);
  // Representable magnitudes in code order; pick the nearest, ties to the even code.
  uint8_t best = 0;
  float best_distance = std::numeric_limits<float>::infinity();
  for (uint8_t code = 0; code < 8; ++code) {
    const float distance = std::fabs(kFp4E2M1Values[code] - magnitude);
    if (distance < best_distance || (distance == best_distance && (code & 1u) == 0)) {
      best = code;
      best_distance = distance;
    }
  }
  return sign | best;
}

}  // namespace gossamer
