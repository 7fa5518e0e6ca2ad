// ByteRegex: a small regular-expression engine for JSON string contents (the `format`s and `pattern`s of
// a schema), compiled to a DFA over bytes at schema-compile time.
//
// Syntax: literals, escapes (\d \w \s and escaped punctuation), classes [a-z_] and [^...], `.`, groups
// (...) and (?:...), alternation |, quantifiers ? * + {n} {n,} {n,m} (counts up to 64). The whole string
// must match (a leading ^ and trailing $ are accepted and ignored). Everything else throws RegexError.
// NOTE: only printable ASCII other than `"` and `\` is ever matched (a class or `.` never admits other
// bytes), so a match is raw JSON string content with no escapes.
//
// Contract: immutable after compile(); thread-safe. States are ints: start(), then step() per byte
// (kDead when the byte is refused; a non-dead state can always still reach acceptance).
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace gossamer::text::grammar {

class RegexError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class ByteRegex {
 public:
  static constexpr int32_t kDead = -1;
  static std::shared_ptr<const ByteRegex> compile(std::string_view pattern);

  int32_t start() const { return 0; }
  int32_t step(int32_t state, uint8_t byte) const { return table_[static_cast<size_t>(state) * 256 + byte]; }
  bool accepts(int32_t state) const { return accepting_[static_cast<size_t>(state)] != 0; }
  int32_t num_states() const { return static_cast<int32_t>(accepting_.size()); }
  // The fewest bytes that take `state` to acceptance.
  int32_t min_remaining(int32_t state) const { return min_remaining_[static_cast<size_t>(state)]; }

 private:
  std::vector<int32_t> table_;          // [num_states, 256] next state or kDead
  std::vector<uint8_t> accepting_;      // [num_states]
  std::vector<int32_t> min_remaining_;  // [num_states]
  friend class RegexCompiler;
};

}  // namespace gossamer::text::grammar
