// UTF-8 validation and decoding helpers shared by the tokenizer and the incremental detokenizer.
//
// Contract: "valid" means RFC 3629 UTF-8 (no overlong forms, no surrogates U+D800..U+DFFF, nothing above
// U+10FFFF), the definition PCRE2, Rust's str and Python's codecs share. Functions never allocate except
// the ones returning std::string.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace gossamer::text {

inline constexpr char32_t kReplacementChar = 0xFFFD;

// Length of the longest valid UTF-8 prefix of `bytes`; equals bytes.size() when all of it is valid.
size_t utf8_valid_prefix(std::string_view bytes);

// Throws gossamer::Error ("<what> is not valid UTF-8 at byte N: ...") unless `bytes` is valid UTF-8.
void check_utf8(std::string_view bytes, std::string_view what = "text");

// Outcome of decoding one character at the start of `bytes` (bytes must be non-empty).
struct Utf8Step {
  enum class Kind : uint8_t {
    kChar,        // a complete valid character of `length` bytes
    kIncomplete,  // a valid prefix of a character that `bytes` cuts short (`length` = bytes.size())
    kInvalid,     // an invalid sequence: `length` = its maximal subpart (replace it by one U+FFFD)
  };
  Kind kind;
  uint8_t length;
};
Utf8Step utf8_step(std::string_view bytes);

// `bytes` with every invalid sequence (including a truncated last character) replaced by U+FFFD, one per
// maximal subpart, as Python's `errors="replace"` and Rust's `from_utf8_lossy` do.
std::string utf8_lossy(std::string_view bytes);

void append_utf8(std::string& out, char32_t code_point);

}  // namespace gossamer::text
