#include "text/pretokenizer_scan.h"

#include "text/pretokenizer_classes.h"

namespace gossamer::text {

namespace {

using classes::kLetter;
using classes::kLower;
using classes::kNumber;
using classes::kSpace;
using classes::kUpper;

constexpr size_t kFail = SIZE_MAX;

struct Char {
  uint8_t cls;  // classes::k* bits
  uint8_t len;  // bytes
};

// The character at byte i (i < n, valid UTF-8).
inline Char char_at(const uint8_t* p, size_t i) {
  const uint8_t b = p[i];
  if (b < 0x80) return {classes::kStage2[b], 1};  // block 0 holds U+0000..U+007F
  if (b < 0xE0) return {classes::of((char32_t(b & 0x1F) << 6) | (p[i + 1] & 0x3F)), 2};
  if (b < 0xF0) {
    return {classes::of((char32_t(b & 0x0F) << 12) | (char32_t(p[i + 1] & 0x3F) << 6) | (p[i + 2] & 0x3F)), 3};
  }
  return {classes::of((char32_t(b & 0x07) << 18) | (char32_t(p[i + 1] & 0x3F) << 12) |
                      (char32_t(p[i + 2] & 0x3F) << 6) | (p[i + 3] & 0x3F)),
          4};
}

// `[U]*[L]+` at s (U = kUpper, L = kLower), as a backtracking matcher takes it: the greedy U-run, then an
// L-run after it if the next character is in L; else L+ gives back to the last character of the U-run that
// is also in L (Lm, Lo, M), and that character alone ends the match. kFail if neither exists.
inline size_t upper_then_lower(const uint8_t* p, size_t n, size_t s) {
  size_t i = s;
  size_t both_end = kFail;  // end of the last character of the U-run that is also in L
  while (i < n) {
    const Char c = char_at(p, i);
    if (!(c.cls & kUpper)) {
      if (!(c.cls & kLower)) break;
      for (i += c.len; i < n;) {
        const Char d = char_at(p, i);
        if (!(d.cls & kLower)) break;
        i += d.len;
      }
      return i;
    }
    i += c.len;
    if (c.cls & kLower) both_end = i;
  }
  return both_end;
}

// `[U]+[L]*` at s: greedy, no backtracking needed. kFail if the character at s is not in U.
inline size_t upper_plus_lower(const uint8_t* p, size_t n, size_t s) {
  size_t i = s;
  while (i < n) {
    const Char c = char_at(p, i);
    if (!(c.cls & kUpper)) break;
    i += c.len;
  }
  if (i == s) return kFail;
  while (i < n) {
    const Char c = char_at(p, i);
    if (!(c.cls & kLower)) break;
    i += c.len;
  }
  return i;
}

inline bool ascii_is(uint8_t byte, char lower) {
  return (byte | 0x20) == static_cast<uint8_t>(lower);
}

}  // namespace

// `(?i:'s|'t|'re|'ve|'m|'ll|'d)?` at f. Case-insensitive in Unicode: 's' also matches U+017F (long s).
size_t PieceScanner::contraction_end(size_t f) const {
  if (f + 1 >= n_ || p_[f] != '\'') return f;
  const uint8_t c1 = p_[f + 1];
  if (ascii_is(c1, 's') || ascii_is(c1, 't') || ascii_is(c1, 'm') || ascii_is(c1, 'd')) return f + 2;
  if (f + 2 >= n_) return f;
  const uint8_t c2 = p_[f + 2];
  if (c1 == 0xC5 && c2 == 0xBF) return f + 3;  // U+017F
  if ((ascii_is(c1, 'r') || ascii_is(c1, 'v')) && ascii_is(c2, 'e')) return f + 3;
  if (ascii_is(c1, 'l') && ascii_is(c2, 'l')) return f + 3;
  return f;
}

// The end of the piece that starts at p: the first of the seven alternatives of pat_str that matches.
size_t PieceScanner::piece_end(size_t p) const {
  const uint8_t b0 = p_[p];
  const Char c0 = char_at(p_, p);
  // Alternatives 1 and 2 start with `[^\r\n\p{L}\p{N}]?`: any character but CR, LF, letters and numbers.
  const bool prefix = b0 != '\r' && b0 != '\n' && !(c0.cls & (kLetter | kNumber));
  if (!prefix && (c0.cls & (kUpper | kLower))) {  // a letter
    size_t f = upper_then_lower(p_, n_, p);
    if (f == kFail) f = upper_plus_lower(p_, n_, p);
    return contraction_end(f);
  }
  if (prefix) {
    const size_t q = p + c0.len;
    size_t f = q < n_ ? upper_then_lower(p_, n_, q) : kFail;  // 1 with the prefix
    if (f == kFail && (c0.cls & kUpper)) {
      f = upper_then_lower(p_, n_, p);  // 1 without it: c0 is a mark (in both letter classes), so it matches
    }
    if (f == kFail && q < n_) f = upper_plus_lower(p_, n_, q);  // 2 with the prefix
    if (f != kFail) return contraction_end(f);
  }
  if (c0.cls & kNumber) {  // 3: `\p{N}{1,3}`
    size_t i = p + c0.len;
    for (int k = 1; k < 3 && i < n_; ++k) {
      const Char c = char_at(p_, i);
      if (!(c.cls & kNumber)) break;
      i += c.len;
    }
    return i;
  }
  // 4: ` ?[^\s\p{L}\p{N}]+[\r\n/]*`
  const size_t s = b0 == ' ' ? p + 1 : p;
  if (s < n_) {
    size_t i = s;
    while (i < n_) {
      const Char c = char_at(p_, i);
      if (c.cls & (kSpace | kLetter | kNumber)) break;
      i += c.len;
    }
    if (i > s) {
      while (i < n_ && (p_[i] == '\r' || p_[i] == '\n' || p_[i] == '/')) ++i;
      return i;
    }
  }
  // c0 is White_Space. 5: `\s*[\r\n]+` ends after the last CR/LF of the run; 6: `\s+(?!\S)` takes the run to
  // the end of the text, or all of it but its last character; 7: `\s+` the single character left.
  size_t i = p;
  size_t newline_end = kFail;
  size_t last_start = p;
  while (i < n_) {
    const Char c = char_at(p_, i);
    if (!(c.cls & kSpace)) break;
    if (p_[i] == '\r' || p_[i] == '\n') newline_end = i + 1;
    last_start = i;
    i += c.len;
  }
  if (newline_end != kFail) return newline_end;
  if (i == n_ || last_start == p) return i;
  return last_start;
}

size_t next_safe_split(std::string_view text, size_t from) {
  const auto* p = reinterpret_cast<const uint8_t*>(text.data());
  const size_t n = text.size();
  if (from >= n) return n;
  Char prev = char_at(p, from);
  uint8_t prev_byte = p[from];
  for (size_t i = from + prev.len; i < n;) {
    const uint8_t b = p[i];
    const Char c = char_at(p, i);
    // A '\n' ends the piece it is in (alternatives 4 and 5 stop at a non-space, non-'/' character; 1, 2 and 6
    // never hold one). A letter is only ever in alternatives 1 and 2, which end at a character outside the
    // letter classes unless a contraction's apostrophe follows.
    if (prev_byte == '\n' && !(c.cls & kSpace) && b != '/') return i;
    if ((prev.cls & kLetter) && !(c.cls & (kUpper | kLower)) && b != '\'') return i;
    prev = c;
    prev_byte = b;
    i += c.len;
  }
  return n;
}

}  // namespace gossamer::text
