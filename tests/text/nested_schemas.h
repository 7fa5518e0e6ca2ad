// Hostile JSON schemas shared by the text and server limit tests: raw JSON text nested `depth` times.
#pragma once

#include <string>

namespace gossamer::text::testing {

// {"type":"array","items":{…}} nested `depth` times around a string schema.
inline std::string nested_items(int depth) {
  std::string text;
  for (int i = 0; i < depth; ++i) text += R"({"type":"array","items":)";
  text += R"({"type":"string"})";
  text.append(static_cast<size_t>(depth), '}');
  return text;
}

// {"type":"object","properties":{"p":{…}}} nested `depth` times around an integer schema; with `required`,
// every level also lists "p" as required.
inline std::string nested_properties(int depth, bool required = false) {
  std::string text;
  for (int i = 0; i < depth; ++i)
    text +=
        required ? R"({"type":"object","required":["p"],"properties":{"p":)" : R"({"type":"object","properties":{"p":)";
  text += R"({"type":"integer"})";
  for (int i = 0; i < depth; ++i) text += "}}";
  return text;
}

}  // namespace gossamer::text::testing
