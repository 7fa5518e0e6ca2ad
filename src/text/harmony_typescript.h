// JSON Schema → the TypeScript-like type text Harmony puts in tool descriptions (openai-harmony's rendering; tests/text/harmony_typescript_test.cpp).
//
// Contract: total over any JSON value; never throws on odd schemas (unsupported constructs render as `any`).
// Property order is the order of the input object, so pass nlohmann::ordered_json parsed from the user's text.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace gossamer::text::harmony {

// The type text of `schema`; `indent` prefixes the comment and property lines of objects.
std::string json_schema_to_typescript(const nlohmann::ordered_json& schema, const std::string& indent = "");

}  // namespace gossamer::text::harmony
