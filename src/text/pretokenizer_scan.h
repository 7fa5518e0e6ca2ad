// The production pre-tokenizer: a hand-written scanner for o200k's pat_str (spec/harmony-and-tokenizer.md
// §5.1) over the generated class tables of pretokenizer_classes.h. It gives exactly the pieces of the PCRE2
// reference (pretokenizer.h) and of tiktoken, with no regex engine, no allocation and no per-thread state.
//
// Contract:
//  - `text` must be valid UTF-8 (the caller validates once) and outlive the scanner.
//  - next() returns the pieces in order, each non-empty, together covering the text from `from`; `from` must be
//    0 or a piece boundary (e.g. from next_safe_split). Text after a piece's end may be read as lookahead, so
//    a scanner over a prefix of a text is NOT a scanner over that text: pass the whole text and a start.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace gossamer::text {

class PieceScanner {
 public:
  explicit PieceScanner(std::string_view text, size_t from = 0)
      : p_(reinterpret_cast<const uint8_t*>(text.data())), n_(text.size()), pos_(from) {}

  // Sets [begin, end) to the next piece; false at the end of the text.
  bool next(size_t& begin, size_t& end) {
    if (pos_ >= n_) return false;
    begin = pos_;
    end = pos_ = piece_end(pos_);
    return true;
  }

 private:
  size_t piece_end(size_t p) const;
  size_t word_end(size_t s, bool case_alt1_only, bool& ok) const;
  size_t contraction_end(size_t f) const;

  const uint8_t* p_;
  size_t n_;
  size_t pos_;
};

// The first position b >= from (b <= text.size()) at which every scan of `text` has a piece boundary, found by
// local context alone: after '\n' before a character that is neither White_Space nor '/', or after a letter
// before a character that is neither in the pattern's letter classes nor an apostrophe. A scanner started at
// b (over the whole text) continues the pieces of a scan from 0, and one started before b ends a piece at b.
// Returns text.size() if there is none. `from` must be at a character boundary.
size_t next_safe_split(std::string_view text, size_t from);

}  // namespace gossamer::text
