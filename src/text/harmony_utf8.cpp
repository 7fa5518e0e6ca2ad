#include "text/harmony_utf8.h"

#include <cstdint>

namespace gossamer::text::harmony {

namespace {

bool is_continuation(uint8_t byte) {
  return (byte & 0xC0) == 0x80;
}

// Bytes of the sequence a lead byte starts; 0 for a byte that cannot start one.
size_t sequence_width(uint8_t lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return 2;
  if (lead >= 0xE0 && lead <= 0xEF) return 3;
  if (lead >= 0xF0 && lead <= 0xF4) return 4;
  return 0;
}

// Valid range of the second byte for a lead byte (excludes overlongs, surrogates, > U+10FFFF).
bool second_byte_ok(uint8_t lead, uint8_t second) {
  switch (lead) {
    case 0xE0: return second >= 0xA0 && second <= 0xBF;
    case 0xED: return second >= 0x80 && second <= 0x9F;
    case 0xF0: return second >= 0x90 && second <= 0xBF;
    case 0xF4: return second >= 0x80 && second <= 0x8F;
    default: return is_continuation(second);
  }
}

}  // namespace

Utf8Check check_utf8(std::string_view bytes) {
  const auto* data = reinterpret_cast<const uint8_t*>(bytes.data());
  const size_t size = bytes.size();
  size_t pos = 0;
  while (pos < size) {
    const uint8_t lead = data[pos];
    const size_t width = sequence_width(lead);
    if (width == 1) {
      ++pos;
      continue;
    }
    Utf8Check failure{pos, size_t{1}, false};
    if (width == 0) return failure;
    // NOTE: a sequence cut by the end of the input is "incomplete" (error_len nullopt), as in Rust.
    if (pos + 1 >= size) return Utf8Check{pos, std::nullopt, false};
    if (!second_byte_ok(lead, data[pos + 1])) return failure;
    for (size_t k = 2; k < width; ++k) {
      if (pos + k >= size) return Utf8Check{pos, std::nullopt, false};
      if (!is_continuation(data[pos + k])) return Utf8Check{pos, k, false};
    }
    pos += width;
  }
  return Utf8Check{size, std::nullopt, true};
}

std::string utf8_lossy(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  while (!bytes.empty()) {
    const Utf8Check check = check_utf8(bytes);
    out.append(bytes.substr(0, check.valid_up_to));
    if (check.ok) break;
    out.append(kReplacementCharacter);
    if (!check.error_len) break;  // truncated tail: one replacement for all of it
    bytes.remove_prefix(check.valid_up_to + *check.error_len);
  }
  return out;
}

bool is_unicode_whitespace(char32_t c) {
  if (c >= 0x09 && c <= 0x0D) return true;
  if (c < 0x80) return c == 0x20;
  switch (c) {
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000: return true;
    default: return c >= 0x2000 && c <= 0x200A;
  }
}

size_t decode_code_point(std::string_view text, size_t pos, char32_t& code_point) {
  const auto* data = reinterpret_cast<const uint8_t*>(text.data());
  const size_t width = sequence_width(data[pos]);
  if (width <= 1 || pos + width > text.size()) {
    code_point = data[pos];
    return 1;
  }
  char32_t value = data[pos] & (0xFF >> (width + 1));
  for (size_t k = 1; k < width; ++k) value = (value << 6) | (data[pos + k] & 0x3F);
  code_point = value;
  return width;
}

}  // namespace gossamer::text::harmony
