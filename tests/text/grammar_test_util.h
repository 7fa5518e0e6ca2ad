// Shared by the grammar tests: a JSON Schema validator for the supported subset (independent of the
// grammar code, so that a wrong grammar cannot validate its own output), the tool-schema corpus, and a
// random walk that picks tokens from the masks like a model with random logits.
#pragma once

#include <time.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

#include "text/grammar/grammar_matcher.h"
#include "text/grammar/token_masker.h"
#include "text/tokenizer.h"

namespace gossamer::text::testing {

using Json = nlohmann::json;

// Empty string = valid; else the first violation.
inline std::string validate(const Json& value, const Json& schema, const Json& root) {
  if (schema.is_boolean()) return schema.get<bool>() ? "" : "false schema";
  if (schema.contains("$ref")) {
    const std::string ref = schema["$ref"];
    if (ref == "#") return validate(value, root, root);
    const std::string section = ref.rfind("#/$defs/", 0) == 0 ? "$defs" : "definitions";
    return validate(value, root[section][ref.substr(section.size() + 3)], root);
  }
  if (schema.value("nullable", false) && value.is_null()) return "";
  if (schema.contains("const") && value != schema["const"]) return "const";
  if (schema.contains("enum") && std::find(schema["enum"].begin(), schema["enum"].end(), value) == schema["enum"].end())
    return "enum";
  for (const char* key : {"anyOf", "oneOf"}) {
    if (!schema.contains(key)) continue;
    int matches = 0;
    for (const Json& alternative : schema[key]) matches += validate(value, alternative, root).empty();
    if (matches == 0 || (std::string(key) == "oneOf" && matches > 1)) return key;
  }
  if (schema.contains("type")) {
    const Json types = schema["type"].is_array() ? schema["type"] : Json::array({schema["type"]});
    bool ok = false;
    for (const Json& t : types) {
      const std::string name = t;
      ok |= (name == "object" && value.is_object()) || (name == "array" && value.is_array()) ||
            (name == "string" && value.is_string()) || (name == "number" && value.is_number()) ||
            (name == "integer" && (value.is_number_integer() ||
                                   (value.is_number() && std::floor(value.get<double>()) == value.get<double>()))) ||
            (name == "boolean" && value.is_boolean()) || (name == "null" && value.is_null());
    }
    if (!ok) return "type " + schema["type"].dump() + " for " + value.dump();
  }
  if (value.is_object()) {
    for (const Json& r : schema.value("required", Json::array())) {
      if (!value.contains(r.get<std::string>())) return "required " + r.get<std::string>();
    }
    const Json properties = schema.value("properties", Json::object());
    for (const auto& [key, item] : value.items()) {
      if (properties.contains(key)) {
        if (auto e = validate(item, properties[key], root); !e.empty()) return key + ": " + e;
      } else if (schema.contains("additionalProperties")) {
        if (auto e = validate(item, schema["additionalProperties"], root); !e.empty())
          return "additional " + key + ": " + e;
      }
    }
  }
  if (value.is_array()) {
    if (schema.contains("minItems") && value.size() < schema["minItems"].get<size_t>()) return "minItems";
    if (schema.contains("maxItems") && value.size() > schema["maxItems"].get<size_t>()) return "maxItems";
    if (schema.contains("items")) {
      for (const Json& item : value) {
        if (auto e = validate(item, schema["items"], root); !e.empty()) return "item: " + e;
      }
    }
  }
  if (value.is_string()) {
    const std::string& s = value.get_ref<const std::string&>();
    size_t code_points = 0;
    for (const unsigned char c : s) code_points += (c & 0xC0) != 0x80;
    if (schema.contains("minLength") && code_points < schema["minLength"].get<size_t>()) return "minLength";
    if (schema.contains("maxLength") && code_points > schema["maxLength"].get<size_t>()) return "maxLength";
    if (schema.contains("pattern") && !std::regex_match(s, std::regex(schema["pattern"].get<std::string>())))
      return "pattern";
    if (schema.value("format", "") == "date" && !std::regex_match(s, std::regex("\\d{4}-\\d{2}-\\d{2}")))
      return "format date";
    if (schema.value("format", "") == "email" && s.find('@') == std::string::npos) return "format email";
  }
  if (value.is_number()) {
    const double v = value.get<double>();
    if (schema.contains("minimum") && v < schema["minimum"].get<double>()) return "minimum";
    if (schema.contains("maximum") && v > schema["maximum"].get<double>()) return "maximum";
    if (schema.contains("exclusiveMinimum") && schema["exclusiveMinimum"].is_number() &&
        v <= schema["exclusiveMinimum"].get<double>())
      return "exclusiveMinimum";
    if (schema.contains("exclusiveMaximum") && schema["exclusiveMaximum"].is_number() &&
        v >= schema["exclusiveMaximum"].get<double>())
      return "exclusiveMaximum";
  }
  return "";
}

// Real tool parameter schemas (OpenAI function-calling examples and common agent tools), from
// tests/data/tool_schemas.json (also the default corpus of `gossamer bench masks`).
inline std::vector<Json> tool_schema_corpus() {
  std::ifstream file(std::string(GOSSAMER_TEST_DATA_DIR) + "/tool_schemas.json");
  const Json corpus = Json::parse(file, nullptr, false);
  if (!corpus.is_array()) throw std::runtime_error("tests/data/tool_schemas.json: not a JSON array");
  return corpus.get<std::vector<Json>>();
}

// Generates one answer by drawing tokens from the masks: `adversarial` draws half the time among the
// allowed non-plain tokens (quotes, escapes, digits, structure), else uniformly over all allowed
// tokens. Ends when the value is complete and a coin says so (always when nothing else is allowed).
// Returns false when `max_tokens` ran out.
inline bool random_walk(grammar::GrammarMatcher& matcher, grammar::TokenMasker& masker, const Tokenizer& tokenizer,
                        std::mt19937_64& rng, bool adversarial, int max_tokens, std::string& out,
                        std::vector<double>* mask_us = nullptr) {
  std::vector<uint32_t> mask(static_cast<size_t>(masker.vocabulary().num_words()));
  std::vector<int32_t> allowed, odd;
  static const std::vector<bool> is_odd = [&] {  // tokens with structure in them
    std::vector<bool> flags(static_cast<size_t>(kNumOrdinaryTokens));
    for (TokenId t = 0; t < kNumOrdinaryTokens; ++t) {
      flags[static_cast<size_t>(t)] =
          tokenizer.token_bytes(t).find_first_of("\"\\{}[],:0123456789 -") != std::string_view::npos;
    }
    return flags;
  }();
  for (int step = 0; step < max_tokens; ++step) {
    const bool can_end = matcher.can_end();
    if (matcher.must_end() || (can_end && rng() % 4 == 0)) return true;
    // NOTE: thread CPU time, so that a shared machine's descheduling does not count.
    timespec before{}, after{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &before);
    masker.fill_mask(matcher, mask);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &after);
    if (mask_us)
      mask_us->push_back(static_cast<double>(after.tv_sec - before.tv_sec) * 1e6 +
                         static_cast<double>(after.tv_nsec - before.tv_nsec) * 1e-3);
    allowed.clear();
    odd.clear();
    for (size_t w = 0; w < mask.size(); ++w) {
      for (uint32_t bits = mask[w]; bits != 0; bits &= bits - 1) {
        const auto token = static_cast<int32_t>(w * 32 + static_cast<size_t>(__builtin_ctz(bits)));
        allowed.push_back(token);
        if (is_odd[static_cast<size_t>(token)]) odd.push_back(token);
      }
    }
    if (allowed.empty()) return can_end;  // nothing but the end (checked by the caller)
    const auto& pool = adversarial && !odd.empty() && rng() % 2 == 0 ? odd : allowed;
    const int32_t token = pool[rng() % pool.size()];
    const std::string_view bytes = tokenizer.token_bytes(token);
    if (!matcher.advance(bytes)) return false;
    out += bytes;
  }
  return false;
}

}  // namespace gossamer::text::testing
