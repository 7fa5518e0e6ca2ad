// Typed reads of request-body fields with OpenAI-style 400s naming the field, and the bounded body parser.
//
// Contract: every function throws ApiError (400) with `param` naming the offending field; a null field
// reads as absent. parse_json_body refuses bodies nesting deeper than kMaxBodyDepth (nothing downstream
// then recurses deeper than that on user input).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace gossamer::server {

// Deepest JSON nesting a request body may have (tool schemas are limited further, to 64).
inline constexpr int kMaxBodyDepth = 256;

// Parses a request body; a syntax error, a non-object or nesting deeper than kMaxBodyDepth is an ApiError.
nlohmann::ordered_json parse_json_body(const std::string& body);

std::string json_type_name(const nlohmann::ordered_json& value);
[[noreturn]] void wrong_type(const std::string& param, const char* wanted, const nlohmann::ordered_json& value);

// The field, or null when absent or JSON null.
const nlohmann::ordered_json* field(const nlohmann::ordered_json& object, const char* key);
std::optional<double> get_number(const nlohmann::ordered_json& object, const char* key, const std::string& param);
std::optional<int64_t> get_integer(const nlohmann::ordered_json& object, const char* key, const std::string& param);
std::optional<bool> get_bool(const nlohmann::ordered_json& object, const char* key, const std::string& param);
std::optional<std::string> get_string(const nlohmann::ordered_json& object, const char* key, const std::string& param);

}  // namespace gossamer::server
