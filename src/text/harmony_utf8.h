// UTF-8 helpers for the Harmony parser, with Rust's std semantics (the reference parser is Rust).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace gossamer::text::harmony {

// Result of validating bytes as UTF-8, like Rust's Utf8Error.
struct Utf8Check {
  size_t valid_up_to = 0;           // length of the longest valid prefix
  std::optional<size_t> error_len;  // bytes of the invalid sequence after it; nullopt: incomplete at the end
  bool ok = true;                   // the whole input is valid
};

Utf8Check check_utf8(std::string_view bytes);

// Rust String::from_utf8_lossy: each maximal invalid subpart (and a truncated tail) becomes U+FFFD.
std::string utf8_lossy(std::string_view bytes);

// Rust char::is_whitespace (the Unicode White_Space property).
bool is_unicode_whitespace(char32_t c);

// Decodes the code point at `pos` of VALID UTF-8 text; returns its byte length (1 for a stray byte).
size_t decode_code_point(std::string_view text, size_t pos, char32_t& code_point);

inline constexpr std::string_view kReplacementCharacter = "\xEF\xBF\xBD";  // U+FFFD

}  // namespace gossamer::text::harmony
