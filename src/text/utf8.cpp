#include "text/utf8.h"

#include <cstring>

#include "core/error.h"

namespace gossamer::text {

namespace {

// Valid second-byte range for each lead byte (Unicode Table 3-7); later continuation bytes are 80..BF.
struct LeadInfo {
  uint8_t length;  // 0: not a lead byte
  uint8_t second_lo;
  uint8_t second_hi;
};

constexpr LeadInfo lead_info(uint8_t lead) {
  if (lead < 0x80) return {1, 0, 0};
  if (lead < 0xC2) return {0, 0, 0};
  if (lead < 0xE0) return {2, 0x80, 0xBF};
  if (lead == 0xE0) return {3, 0xA0, 0xBF};
  if (lead == 0xED) return {3, 0x80, 0x9F};
  if (lead < 0xF0) return {3, 0x80, 0xBF};
  if (lead == 0xF0) return {4, 0x90, 0xBF};
  if (lead < 0xF4) return {4, 0x80, 0xBF};
  if (lead == 0xF4) return {4, 0x80, 0x8F};
  return {0, 0, 0};
}

}  // namespace

Utf8Step utf8_step(std::string_view bytes) {
  GOSSAMER_ASSERT(!bytes.empty());
  const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
  const LeadInfo info = lead_info(p[0]);
  if (info.length == 1) return {Utf8Step::Kind::kChar, 1};
  if (info.length == 0) return {Utf8Step::Kind::kInvalid, 1};
  for (uint8_t i = 1; i < info.length; ++i) {
    if (i >= bytes.size()) return {Utf8Step::Kind::kIncomplete, i};
    const uint8_t lo = i == 1 ? info.second_lo : 0x80;
    const uint8_t hi = i == 1 ? info.second_hi : 0xBF;
    if (p[i] < lo || p[i] > hi) return {Utf8Step::Kind::kInvalid, i};
  }
  return {Utf8Step::Kind::kChar, info.length};
}

size_t utf8_valid_prefix(std::string_view bytes) {
  size_t i = 0;
  const size_t n = bytes.size();
  while (i < n) {
    // NOTE: fast path over 8 ASCII bytes at a time; most text is mostly ASCII.
    if (i + 8 <= n) {
      uint64_t word;
      std::memcpy(&word, bytes.data() + i, 8);
      if ((word & 0x8080808080808080ull) == 0) {
        i += 8;
        continue;
      }
    }
    if (static_cast<uint8_t>(bytes[i]) < 0x80) {
      ++i;
      continue;
    }
    const Utf8Step step = utf8_step(bytes.substr(i));
    if (step.kind != Utf8Step::Kind::kChar) return i;
    i += step.length;
  }
  return n;
}

void check_utf8(std::string_view bytes, std::string_view what) {
  const size_t valid = utf8_valid_prefix(bytes);
  if (valid == bytes.size()) return;
  const Utf8Step step = utf8_step(bytes.substr(valid));
  std::string shown;
  static constexpr char kHex[] = "0123456789ABCDEF";
  for (size_t i = valid; i < valid + step.length; ++i) {
    const auto byte = static_cast<uint8_t>(bytes[i]);
    if (!shown.empty()) shown += ' ';
    shown += "0x";
    shown += kHex[byte >> 4];
    shown += kHex[byte & 15];
  }
  GOSSAMER_THROW(what, " is not valid UTF-8 at byte ", valid, ": ",
                 step.kind == Utf8Step::Kind::kIncomplete ? "truncated sequence " : "invalid sequence ", shown);
}

std::string utf8_lossy(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  size_t i = 0;
  while (i < bytes.size()) {
    const size_t valid = utf8_valid_prefix(bytes.substr(i));
    out.append(bytes.substr(i, valid));
    i += valid;
    if (i == bytes.size()) break;
    const Utf8Step step = utf8_step(bytes.substr(i));
    append_utf8(out, kReplacementChar);
    i += step.length;
  }
  return out;
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

}  // namespace gossamer::text
