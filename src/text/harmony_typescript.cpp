#include "text/harmony_typescript.h"

#include <string_view>
#include <unordered_set>
#include <utility>
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
std::string compact_json(const Json& value) {
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

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

// Appends " | null" when the schema is nullable and the type text written since `start` names no null.
void append_nullable(const Json& schema, std::string& out, size_t start) {
  if (is_nullable(schema) && out.find("null", start) == std::string::npos) out += " | null";
}

void append_joined(const std::vector<std::string>& parts, std::string_view separator, std::string& out) {
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += separator;
    out += parts[i];
  }
}

void render(const Json& schema, const std::string& indent, int32_t depth, std::string& out);

// One variant of a union on its own line: "<indent> | <type>" (with " | null" when nullable).
void append_variant(const Json& variant, const std::string& indent, int32_t depth, std::string& out) {
  out += indent;
  out += " | ";
  const size_t start = out.size();
  render(variant, indent + "   ", depth + 1, out);
  append_nullable(variant, out, start);
}

// " // a b" after a variant, when it has comments.
void append_comments(const std::vector<std::string>& comments, std::string& out) {
  if (comments.empty()) return;
  out += " // ";
  append_joined(comments, " ", out);
}

void top_level_one_of(const Json& variants, const std::string& indent, int32_t depth, std::string& out) {
  for (const Json& variant : variants) {
    out += '\n';
    append_variant(variant, indent, depth, out);
    std::vector<std::string> comments;
    if (const std::string* description = string_member(variant, "description")) comments.push_back(*description);
    // NOTE: here the default is always printed as JSON (quoted even for enum strings), unlike in properties.
    if (const Json* value = member(variant, "default")) comments.push_back("default: " + compact_json(*value));
    append_comments(comments, out);
  }
}

void append_one_of_property(const std::string& key, const std::string& optional, const Json& value,
                            const Json& variants, const std::string& indent, int32_t depth, std::string& out) {
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
    append_variant(variant, indent, depth, out);
    std::vector<std::string> comments;
    if (const std::string* description = string_member(variant, "description")) {
      const bool same_as_property = property_description != nullptr && *description == *property_description;
      if (!(i == 0 && description_printed) && !same_as_property) comments.push_back(*description);
    }
    if (const Json* variant_default = member(variant, "default")) {
      comments.push_back("default: " + format_default(variant, *variant_default));
    }
    append_comments(comments, out);
    out += '\n';
  }
  out += indent + ",\n";
}

void object_type(const Json& schema, const std::string& indent, int32_t depth, std::string& out) {
  if (const std::string* description = string_member(schema, "description")) {
    out += indent + "// " + *description + "\n";
  }
  out += "{\n";
  std::unordered_set<std::string_view> required;
  if (const Json* names = member(schema, "required"); names != nullptr && names->is_array()) {
    for (const Json& name : *names) {
      if (name.is_string()) required.insert(name.get_ref<const std::string&>());
    }
  }
  const Json* properties = member(schema, "properties");
  if (properties != nullptr && properties->is_object()) {
    const std::string property_indent = indent + "    ";
    for (const auto& [key, value] : properties->items()) {
      const std::string optional = required.count(key) ? "" : "?";
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
        append_one_of_property(key, optional, value, *variants, indent, depth, out);
        continue;
      }
      out += indent;
      out += key;
      out += optional;
      out += ": ";
      const size_t start = out.size();
      render(value, property_indent, depth + 1, out);
      append_nullable(value, out, start);
      out += ',';
      if (const Json* value_default = member(value, "default")) {
        out += " // default: " + format_default(value, *value_default);
      }
      out += '\n';
    }
  }
  out += indent;
  out += '}';
}

void string_type(const Json& schema, std::string& out) {
  std::vector<std::string> values;
  if (const Json* options = member(schema, "enum"); options != nullptr && options->is_array()) {
    for (const Json& option : *options) {
      if (option.is_string()) values.push_back(quoted(option.get<std::string>()));
    }
  }
  if (values.empty()) {
    out += "string";
  } else {
    append_joined(values, " | ", out);
  }
}

void render(const Json& schema, const std::string& indent, int32_t depth, std::string& out) {
  if (depth > kMaxRenderDepth) {  // NOTE: callers refuse such schemas first (schema_limit_violation)
    out += "any";
    return;
  }
  if (const Json* variants = one_of(schema)) return top_level_one_of(*variants, indent, depth, out);
  const Json* type = member(schema, "type");
  if (type != nullptr && type->is_array()) {
    std::vector<std::string> names;
    for (const Json& name : *type) {
      if (!name.is_string()) continue;
      const std::string& text = name.get_ref<const std::string&>();
      names.push_back(text == "integer" ? "number" : text);
    }
    return append_joined(names, " | ", out);
  }
  if (type == nullptr || !type->is_string()) {
    out += "any";
    return;
  }
  const std::string& name = type->get_ref<const std::string&>();
  if (name == "object") return object_type(schema, indent, depth, out);
  if (name == "string") return string_type(schema, out);
  if (name == "number" || name == "integer") {
    out += "number";
  } else if (name == "boolean") {
    out += "boolean";
  } else if (name == "array") {
    if (const Json* items = member(schema, "items")) {
      render(*items, indent, depth + 1, out);
      out += "[]";
    } else {
      out += "Array<any>";
    }
  } else {
    out += "any";
  }
}

}  // namespace

std::optional<std::string> schema_limit_violation(const Json& schema, const SchemaLimits& limits, int64_t* num_nodes) {
  // Depth-first over an explicit stack of (value, depth).
  std::vector<std::pair<const Json*, int32_t>> stack = {{&schema, 1}};
  int64_t nodes = 0;
  std::optional<std::string> violation;
  while (!stack.empty() && !violation) {
    const auto [value, depth] = stack.back();
    stack.pop_back();
    if (++nodes > limits.max_nodes) {
      violation = "has more than " + std::to_string(limits.max_nodes) + " JSON values (the limit per schema)";
    } else if (value->is_structured() && depth > limits.max_depth) {
      violation = "nests deeper than " + std::to_string(limits.max_depth) + " levels (the limit per schema)";
    } else if (value->is_structured()) {
      for (const Json& child : *value) stack.emplace_back(&child, depth + 1);
    }
  }
  if (num_nodes != nullptr) *num_nodes = nodes;
  return violation;
}

std::string json_schema_to_typescript(const Json& schema, const std::string& indent) {
  std::string out;
  render(schema, indent, 1, out);
  return out;
}

}  // namespace gossamer::text::harmony
