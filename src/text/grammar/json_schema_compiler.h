// compile_json_schema: a JSON Schema (the subset tool parameters and structured outputs use) to a Grammar.
//
// Supported: type (one or a list), properties, required, additionalProperties (false / true / a schema),
// items, enum, const, anyOf, oneOf (as anyOf: alternatives are expected to be disjoint), nullable
// (OpenAPI), minItems/maxItems, minLength/maxLength, minimum/maximum and exclusiveMinimum/Maximum (number
// or draft-4 boolean), pattern (byte_regex.h syntax), format (date, time, date-time, uuid, email, ipv4,
// hostname, uri; other formats are annotations and ignored, as JSON Schema allows), $ref to "#",
// "#/$defs/…" or "#/definitions/…", and the annotations (title, description, default, examples, $schema,
// $id, $comment, deprecated, readOnly, writeOnly, strict).
//
// Choices the grammar makes (every output still validates against the schema): properties come in any
// order, each at most once; an object with `properties` and no `additionalProperties` is closed (no extra keys, as in
// OpenAI's strict mode), one without `properties` is open; unbounded strings, arrays, objects and
// numbers get GrammarLimits' caps; numbers with bounds have no exponent.
//
// Contract: throws SchemaError naming the offending keyword and its JSON pointer for anything else
// (an unknown keyword, a wrong value type, contradictory bounds, an unresolvable $ref).
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "text/grammar/grammar.h"

namespace gossamer::text::grammar {

class SchemaError : public std::runtime_error {
 public:
  SchemaError(std::string keyword, const std::string& message)
      : std::runtime_error(message), keyword_(std::move(keyword)) {}
  const std::string& keyword() const { return keyword_; }

 private:
  std::string keyword_;
};

std::shared_ptr<const Grammar> compile_json_schema(const nlohmann::json& schema, const GrammarLimits& limits = {});
// Any JSON value whose top level is an object (response_format json_object).
std::shared_ptr<const Grammar> json_object_grammar(const GrammarLimits& limits = {});

}  // namespace gossamer::text::grammar
