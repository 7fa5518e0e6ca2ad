#include "text/harmony_typescript.h"

#include <string_view>
#include <vector>

namespace gossamer::text::harmony {

namespace {

using Json = nlohmann::ordered_json;

const Json* member(const Json& object, std::string_view key) {
  if (!object.is_object()) return nullptr;
  const auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

const std::string* string_member(const Json& object, std::string_view key) {
  const Json* value = member(object, key);
  return value != nullptr && value->is_string() ? value->get_ptr<const std::string*>() : nullptr;
}

bool is_nullable(const Json& schema) {
  const Json* nullable = member(schema, "nullable");
  return nullable != nullptr && nullable->is_boolean() && nullable->get<bool>();
}

bool has_non_empty_enum(const Json& schema) {
  const Json* values = member(schema, "enum");
  return values != nullptr && values->is_array() && !values->empty();
}

const Json* one_of(const Json& schema) {
  const Json* variants = member(schema, "oneOf");
  return variants != nullptr && variants->is_array() ? variants : nullptr;
}

// serde_json's compact form; nlohmann's dump() matches it for the values schemas carry.
std::string compact_json(const Json& value) { return value.dump(-1, ' ', false, Json::error_handler_t::replace); }

// "text" with raw double quotes around it (appended, not operator+: GCC 12 reports a false -Wrestrict there).
std::string quoted(const std::string& text) {
  std::string out;
  out.reserve(text.size() + 2);
  out += '"';
  out += text;
  out += '"';
  return out;
}

// A default as it appears in a property comment: enum strings bare, other strings quoted raw, else JSON.
std::string format_default(const Json& schema, const Json& value) {
  if (value.is_string()) {
    if (has_non_empty_enum(schema)) return value.get<std::string>();
    return quoted(value.get<std::string>());
  }
  return compact_json(value);
}

void append_nullable(const Json& schema, std::string& text) {
  if (is_nullable(schema) && text.find("null") == std::string::npos) text += " | null";
}

std::string join(const std::vector<std::string>& parts, std::string_view separator) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += separator;
    out += parts[i];
  }
  return out;
}

std::string top_level_one_of(const Json& variants, const std::string& indent) {
  std::string out;
  for (const Json& variant : variants) {
    out += "\n" + indent + " | ";
    std::string type = json_schema_to_typescript(variant, indent + "   ");
    append_nullable(variant, type);
    out += type;
    std::vector<std::string> comments;
    if (const std::string* description = string_member(variant, "description")) comments.push_back(*description);
    // NOTE: here the default is always printed as JSON (quoted even for enum strings), unlike in properties.
    if (const Json* value = member(variant, "default")) comments.push_back("default: " + compact_json(*value));
    if (!comments.empty()) out += " // " + join(comments, " ");
  }
  return out;
}

void append_one_of_property(const std::string& key, const std::string& optional, const Json& value,
                            const Json& variants, const std::string& indent, std::string& out) {
  const std::string* property_description = string_member(value, "description");
  const std::string* first_variant_description =
      variants.empty() ? nullptr : string_member(variants.front(), "description");
  const bool description_printed =
      property_description != nullptr &&
      (first_variant_description == nullptr || *first_variant_description != *property_description);
  if (description_printed) out += indent + "// " + *property_description + "\n";
  if (const Json* value_default = member(value, "default")) {
    out += indent + "// default: " + format_default(value, *value_default) + "\n";
  }
  out += indent + key + optional + ":\n";
  for (size_t i = 0; i < variants.size(); ++i) {
    const Json& variant = variants[i];
    std::string line = indent + " | " + json_schema_to_typescript(variant, indent + "   ");
    append_nullable(variant, line);
    std::vector<std::string> comments;
    if (const std::string* description = string_member(variant, "description")) {
      const bool same_as_property = property_description != nullptr && *description == *property_description;
      if (!(i == 0 && description_printed) && !same_as_property) comments.push_back(*description);
    }
    if (const Json* variant_default = member(variant, "default")) {
      comments.push_back("default: " + format_default(variant, *variant_default));
    }
    if (!comments.empty()) line += " // " + join(comments, " ");
    out += line + "\n";
  }
  out += indent + ",\n";
}

std::string object_type(const Json& schema, const std::string& indent) {
  std::string out;
  if (const std::string* description = string_member(schema, "description")) {
    out += indent + "// " + *description + "\n";
  }
  out += "{\n";
  std::vector<std::string> required;
  if (const Json* names = member(schema, "required"); names != nullptr && names->is_array()) {
    for (const Json& name : *names) {
      if (name.is_string()) required.push_back(name.get<std::string>());
    }
  }
  const Json* properties = member(schema, "properties");
  if (properties != nullptr && properties->is_object()) {
    for (const auto& [key, value] : properties->items()) {
      bool is_required = false;
      for (const std::string& name : required) is_required = is_required || name == key;
      const std::string optional = is_required ? "" : "?";
      const Json* variants = one_of(value);
      if (const std::string* title = string_member(value, "title")) {
        out += indent + "// " + *title + "\n" + indent + "//\n";
      }
      if (variants == nullptr) {
        if (const std::string* description = string_member(value, "description")) {
          out += indent + "// " + *description + "\n";
        }
      }
      if (const Json* examples = member(value, "examples");
          examples != nullptr && examples->is_array() && !examples->empty()) {
        out += indent + "// Examples:\n";
        for (const Json& example : *examples) {
          if (example.is_string()) out += indent + "// - \"" + example.get<std::string>() + "\"\n";
        }
      }
      if (variants != nullptr) {
        append_one_of_property(key, optional, value, *variants, indent, out);
        continue;
      }
      std::string type = json_schema_to_typescript(value, indent + "    ");
      append_nullable(value, type);
      out += indent + key + optional + ": " + type + ",";
      if (const Json* value_default = member(value, "default")) {
        out += " // default: " + format_default(value, *value_default);
      }
      out += "\n";
    }
  }
  out += indent + "}";
  return out;
}

std::string string_type(const Json& schema) {
  std::vector<std::string> values;
  if (const Json* options = member(schema, "enum"); options != nullptr && options->is_array()) {
    for (const Json& option : *options) {
      if (option.is_string()) values.push_back(quoted(option.get<std::string>()));
    }
  }
  return values.empty() ? "string" : join(values, " | ");
}

}  // namespace

std::string json_schema_to_typescript(const Json& schema, const std::string& indent) {
  if (const Json* variants = one_of(schema)) return top_level_one_of(*variants, indent);
  const Json* type = member(schema, "type");
  if (type != nullptr && type->is_array()) {
    std::vector<std::string> names;
    for (const Json& name : *type) {
      if (!name.is_string()) continue;
      const std::string& text = name.get_ref<const std::string&>();
      names.push_back(text == "integer" ? "number" : text);
    }
    return join(names, " | ");
  }
  if (type == nullptr || !type->is_string()) return "any";
  const std::string& name = type->get_ref<const std::string&>();
  if (name == "object") return object_type(schema, indent);
  if (name == "string") return string_type(schema);
  if (name == "number" || name == "integer") return "number";
  if (name == "boolean") return "boolean";
  if (name == "array") {
    const Json* items = member(schema, "items");
    return items != nullptr ? json_schema_to_typescript(*items, indent) + "[]" : "Array<any>";
  }
  return "any";
}

}  // namespace gossamer::text::harmony
