// Grammar: what a constrained JSON answer may be, as a graph of schema nodes that the byte-level pushdown
// matcher (grammar_matcher.h) walks. Built by compile_json_schema (json_schema_compiler.h); plain JSON is
// the single node kAny.
//
// Termination is part of the grammar: every repetition has a bound (the schema's, else a default cap
// from GrammarLimits), whitespace runs are bounded, and nesting is bounded, so any walk that keeps
// choosing allowed bytes completes the value within a bounded number of bytes.
//
// Contract: immutable once built, but for its mask cache (thread-safe); shared between requests
// (shared_ptr<const Grammar>). Node 0 is the root.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "text/grammar/byte_regex.h"

namespace gossamer::text::grammar {

class TokenMaskCache;  // token_mask_cache.h

// Default caps where a schema gives no bound (documented in docs/structured-output.md).
struct GrammarLimits {
  int32_t max_string_length = 512;     // code points in a string without maxLength
  int32_t max_array_items = 64;        // items in an array without maxItems
  int32_t max_object_properties = 32;  // extra properties of an open object (json_object, additionalProperties)
  int32_t max_integer_digits = 15;     // digits before the point (exact in a double)
  int32_t max_fraction_digits = 12;
  int32_t max_whitespace = 2;  // whitespace bytes between two structural bytes
  int32_t max_depth = 12;      // nesting of objects and arrays
};

enum class NodeKind : uint8_t { kAny, kObject, kArray, kString, kNumber, kInteger, kBoolean, kNull, kLiterals, kAnyOf };

struct Property {
  std::string key;  // the key as JSON text, quotes included (escaped): "\"city\""
  int32_t node = 0;
  bool required = false;
};

struct Node {
  NodeKind kind = NodeKind::kAny;
  // kObject: properties (at most 63, each at most once, in any order); additional < 0: none allowed.
  std::vector<Property> properties;
  uint64_t required_mask = 0;
  int32_t additional = -1;
  int32_t max_additional = 0;
  // kArray: item node, bounds on the count.
  int32_t items = -1;
  int32_t min_items = 0, max_items = 0;
  // kString: bounds in code points; a format or pattern compiles to a byte regex over the string's raw
  // content (between the quotes).
  int32_t min_length = 0, max_length = 0;
  std::shared_ptr<const ByteRegex> regex;
  // kNumber / kInteger: inclusive or exclusive bounds.
  std::optional<double> minimum, maximum;
  bool exclusive_minimum = false, exclusive_maximum = false;
  // kLiterals (enum, const): each value's compact JSON text; kAnyOf: alternative nodes.
  std::vector<std::string> literals;
  std::vector<int32_t> alternatives;
};

struct Grammar {
  std::vector<Node> nodes;  // nodes[0] is the root
  GrammarLimits limits;
  // The parts of an unconstrained JSON value (kAny dispatches on its first byte to these).
  int32_t any_object = -1, any_array = -1, any_string = -1, any_number = -1, any_literal = -1;
  // NOTE: the one part that changes after the build: the token masks of the states met so far, shared by
  // every request that walks this grammar object (compile_json_schema gives each grammar one).
  std::shared_ptr<TokenMaskCache> mask_cache;
};

}  // namespace gossamer::text::grammar
