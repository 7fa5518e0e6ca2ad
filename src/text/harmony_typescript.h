// JSON Schema → the TypeScript-like type text Harmony puts in tool descriptions (openai-harmony's rendering;
// tests/text/harmony_typescript_test.cpp).
//
// Contract: total over any JSON value; never throws on odd schemas (unsupported constructs render as `any`).
// Property order is the order of the input object, so pass nlohmann::ordered_json parsed from the user's text.
// Cost: linear in the schema's size (one output buffer, no re-copying of rendered sub-schemas). Schemas are
// rendered to kMaxRenderDepth nested schemas (properties / items / oneOf); deeper ones render as `any`, so no
// input can exhaust the stack. Callers that take schemas from users check them first with
// schema_limit_violation() and refuse the request, so that guard never changes what a valid request renders.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace gossamer::text::harmony {

inline constexpr int32_t kMaxRenderDepth = 64;

// Limits on one user-supplied schema (a tool's `parameters`).
struct SchemaLimits {
  int32_t max_depth = 64;     // object/array nesting depth of the schema value ({"type":"string"} is depth 1)
  int64_t max_nodes = 10000;  // JSON values in it (objects, arrays, scalars; object keys not counted)
};

// The first limit `schema` breaks, as a sentence naming it ("… nests deeper than 64 levels"), or nullopt.
// Iterative: safe on any nesting the JSON parser accepted. `num_nodes` (optional) receives the node count
// seen (stops counting once max_nodes is passed).
std::optional<std::string> schema_limit_violation(const nlohmann::ordered_json& schema, const SchemaLimits& limits,
                                                  int64_t* num_nodes = nullptr);

// The type text of `schema`; `indent` prefixes the comment and property lines of objects.
std::string json_schema_to_typescript(const nlohmann::ordered_json& schema, const std::string& indent = "");

}  // namespace gossamer::text::harmony
