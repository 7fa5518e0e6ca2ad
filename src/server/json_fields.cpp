#include "server/json_fields.h"

#include "server/api_error.h"

namespace gossamer::server {

namespace {

using Json = nlohmann::ordered_json;

struct TooDeep {};

}  // namespace

Json parse_json_body(const std::string& body) {
  Json json;
  try {
    // NOTE: the callback sees every value's depth before it is built; throwing stops the parse there.
    json = Json::parse(body, [](int depth, Json::parse_event_t, Json&) {
      if (depth > kMaxBodyDepth) throw TooDeep{};
      return true;
    });
  } catch (const TooDeep&) {
    throw ApiError::invalid("the request body nests deeper than " + std::to_string(kMaxBodyDepth) +
                            " levels (the limit for a request body)");
  } catch (const nlohmann::json::exception& error) {
    throw ApiError::invalid(std::string("the request body is not valid JSON: ") + error.what());
  }
  if (!json.is_object()) throw ApiError::invalid("the request body must be a JSON object");
  return json;
}

std::string json_type_name(const Json& value) {
  if (value.is_null()) return "null";
  if (value.is_boolean()) return "boolean";
  if (value.is_number_integer() || value.is_number_unsigned()) return "integer";
  if (value.is_number()) return "number";
  if (value.is_string()) return "string";
  if (value.is_array()) return "array";
  return "object";
}

void wrong_type(const std::string& param, const char* wanted, const Json& value) {
  throw ApiError::invalid("'" + param + "' must be " + wanted + ", got " + json_type_name(value), param);
}

const Json* field(const Json& object, const char* key) {
  const auto found = object.find(key);
  if (found == object.end() || found->is_null()) return nullptr;
  return &*found;
}

std::optional<double> get_number(const Json& object, const char* key, const std::string& param) {
  const Json* value = field(object, key);
  if (!value) return std::nullopt;
  if (!value->is_number()) wrong_type(param, "a number", *value);
  return value->get<double>();
}

std::optional<int64_t> get_integer(const Json& object, const char* key, const std::string& param) {
  const Json* value = field(object, key);
  if (!value) return std::nullopt;
  if (value->is_number_float()) {
    const double d = value->get<double>();
    if (d >= -9.0e18 && d <= 9.0e18 && d == static_cast<double>(static_cast<int64_t>(d)))
      return static_cast<int64_t>(d);
  }
  if (!value->is_number_integer() && !value->is_number_unsigned()) wrong_type(param, "an integer", *value);
  if (value->is_number_unsigned() && value->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) return INT64_MAX;
  return value->get<int64_t>();
}

std::optional<bool> get_bool(const Json& object, const char* key, const std::string& param) {
  const Json* value = field(object, key);
  if (!value) return std::nullopt;
  if (!value->is_boolean()) wrong_type(param, "a boolean", *value);
  return value->get<bool>();
}

std::optional<std::string> get_string(const Json& object, const char* key, const std::string& param) {
  const Json* value = field(object, key);
  if (!value) return std::nullopt;
  if (!value->is_string()) wrong_type(param, "a string", *value);
  return value->get<std::string>();
}

}  // namespace gossamer::server
