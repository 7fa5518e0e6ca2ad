// GrammarMatcher: the byte-level pushdown automaton of a Grammar. Its state is a small set of stacks
// (more than one only while anyOf alternatives are still both possible); each stack holds frames for the
// open object / array / string / number / literal, bottom first.
//
// Contract: a matcher is a value (copyable, cheap for shallow JSON); it refers to its Grammar, which must
// outlive it. advance(byte) returns false and leaves the state unchanged when the byte is refused. A
// state reached by allowed bytes can always be completed (no dead ends): bounds are checked before a byte
// is allowed, not after. Not thread-safe; one request's constraint owns its matcher.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "text/grammar/grammar.h"

namespace gossamer::text::grammar {

// One open construct. Fields are reused per kind (see grammar_matcher.cpp). Always made as `Frame f{}`
// (all zero), so that stacks compare with memcmp.
struct Frame {  // 56 bytes, no padding
  uint8_t kind;
  uint8_t state;
  uint8_t ws;      // whitespace bytes in the current gap
  uint8_t utf8;    // string: continuation bytes still expected
  uint8_t lo, hi;  // string: range of the next continuation byte
  uint8_t hex;     // string: \u hex digits read; number: flags
  uint8_t key;     // string: 1 = an object key
  int32_t node;
  int32_t count;   // array: items; string: code points; number: digits of this part
  int32_t extra;   // object: extra properties; string: regex state or key byte position; literal: position
  int32_t aux;     // object: the pending value's node; number: fraction digits
  uint64_t bits;   // object: properties given; key: allowed candidate properties; literal: candidates
  uint64_t bits2;  // key: every property still equal so far
  double value;    // number: magnitude so far
  double scale;    // number: weight of the next fraction digit
};

static_assert(sizeof(Frame) == 56, "Frame must have no padding (stacks compare with memcmp)");

// Frames bottom first, in place (copying a stack copies only its used frames: no allocation).
struct Stack {
  static constexpr int32_t kMaxFrames = 40;  // root + 2 per nesting level (GrammarLimits::max_depth <= 18)
  Frame frames[kMaxFrames];
  int32_t size = 0;
  int32_t depth = 0;  // open objects and arrays

  Stack() = default;
  Stack(const Stack& other) : size(other.size), depth(other.depth) { copy_frames(other); }
  Stack& operator=(const Stack& other) {
    size = other.size;
    depth = other.depth;
    copy_frames(other);
    return *this;
  }
  Frame& back() { return frames[size - 1]; }
  const Frame& back() const { return frames[size - 1]; }
  void push(const Frame& frame) { frames[size++] = frame; }
  void pop() { --size; }

 private:
  void copy_frames(const Stack& other);
};

class GrammarMatcher {
 public:
  explicit GrammarMatcher(std::shared_ptr<const Grammar> grammar);

  bool advance(uint8_t byte);
  bool advance(std::string_view bytes);  // all or nothing
  // True when the bytes so far form a complete value (the answer may end here).
  bool can_end() const;
  // True when no byte at all can follow (complete, and not a number that could grow).
  bool must_end() const;
  const Grammar& grammar() const { return *grammar_; }
  const std::vector<Stack>& stacks() const { return stacks_; }

  // Low-level, for the token masker: advances every stack of `in` by `byte` into `out` (cleared first).
  void step(const std::vector<Stack>& in, uint8_t byte, std::vector<Stack>& out) const;
  // Where every stack's top is inside a string (no pending escape or UTF-8 sequence): the code points
  // the string may still take, and for a pattern string (one stack only) its regex and state.
  struct StringContext {
    int32_t room = -1;  // -1: not inside a string everywhere
    const ByteRegex* regex = nullptr;
    int32_t regex_state = 0;
  };
  StringContext string_context() const;

 private:
  void step_stack(Stack& stack, uint8_t byte, std::vector<Stack>& out) const;
  void start_value(Stack& stack, int32_t node, uint8_t byte, std::vector<Stack>& out) const;
  bool stack_can_end(const Stack& stack) const;

  std::shared_ptr<const Grammar> grammar_;
  std::vector<Stack> stacks_;
  mutable std::vector<Stack> scratch_;
};

}  // namespace gossamer::text::grammar
