// Pre-tokenization: splits text into the pieces of o200k's `pat_str` (npm tiktoken's o200k_base.json),
// with PCRE2 (UTF + UCP, JIT) as the matcher. This is the reference: the tokenizer uses the hand-written
// scanner of pretokenizer_scan.h, which the tests check against this one on every code point and on random
// text, and the bench compares with it.
//
// Contract:
//  - A Pretokenizer is immutable after construction and safe to use from many threads at once (match data
//    and the JIT stack are per thread).
//  - next_piece() requires `text` to be valid UTF-8 (the caller validates once; PCRE2 is told not to check,
//    which keeps matching linear).
//  - Pieces follow the leftmost-first, greedy, backtracking semantics of tiktoken's fancy_regex, with the
//    character classes of the Unicode version tiktoken's regex tables use (see pretokenizer_unicode.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace gossamer::text {

class Pretokenizer {
 public:
  Pretokenizer();
  ~Pretokenizer();
  Pretokenizer(const Pretokenizer&) = delete;
  Pretokenizer& operator=(const Pretokenizer&) = delete;

  // Two compiled patterns give the same pieces on text without code points of pretokenizer_unicode.h:
  // kPlain (PCRE2's own Unicode 14 classes, about 3x faster) and kFull (with the added Unicode 16 ranges).
  enum class Variant : uint8_t { kPlain, kFull };
  // The fastest variant that is exact for `text` (valid UTF-8): kPlain unless a delta code point occurs.
  static Variant variant_for(std::string_view text);

  // Finds the next piece of `text` at or after byte `from`. Returns false when there is none; otherwise sets
  // [begin, end) (begin >= from, end > begin). `variant` must be kFull or variant_for(text) (or of a text
  // containing it). Throws gossamer::Error if PCRE2 fails (e.g. resource limits).
  bool next_piece(std::string_view text, size_t from, size_t& begin, size_t& end,
                  Variant variant = Variant::kFull) const;

  // The PCRE2 pattern actually compiled (o200k's pat_str with explicit character classes).
  const std::string& pattern(Variant variant = Variant::kFull) const { return patterns_[index(variant)]; }
  bool jit_enabled() const { return jit_[0] && jit_[1]; }

  // o200k's pat_str exactly as tiktoken publishes it; the loader checks the data file against it.
  static constexpr std::string_view kO200kPatStr =
      "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'"
      "ll|'"
      "d)?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|"
      "'m|'ll|'d)?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

 private:
  static size_t index(Variant variant) { return variant == Variant::kFull ? 1 : 0; }

  std::string patterns_[2];
  void* codes_[2] = {nullptr, nullptr};  // pcre2_code_8*
  bool jit_[2] = {false, false};
};

}  // namespace gossamer::text
