// JSON numbers in the grammar matcher: the byte steps of `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`
// with digit caps, and the bounds (minimum / maximum, exclusive or not) checked before a digit is taken:
// a digit is refused when no completion of the number could meet them.
//
// Contract: pure functions of (node, frame, byte); a refused byte leaves the frame unchanged.
#pragma once

#include <cstdint>

#include "text/grammar/grammar.h"
#include "text/grammar/grammar_matcher.h"

namespace gossamer::text::grammar {

// Frame::state of a number frame; Frame::hex holds kNumNegative.
enum NumberState : uint8_t { kNumStart, kNumSign, kNumZero, kNumInt, kNumDot, kNumFrac, kNumE, kNumESign, kNumExp };
inline constexpr uint8_t kNumNegative = 1;

enum class NumberStep : uint8_t {
  kTaken,    // the byte continues the number
  kEnded,    // the number is complete and in bounds; the byte belongs to what follows
  kRefused,  // neither
};

NumberStep step_number(const Node& node, Frame& f, uint8_t byte, const GrammarLimits& limits);
// True when the number so far is a complete value within the bounds.
bool number_complete(const Node& node, const Frame& f);

}  // namespace gossamer::text::grammar
