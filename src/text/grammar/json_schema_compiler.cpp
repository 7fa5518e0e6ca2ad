#include "text/grammar/json_schema_compiler.h"

#include <cmath>
#include <map>
#include <set>

#include "text/grammar/token_mask_cache.h"

namespace gossamer::text::grammar {

namespace {

using Json = nlohmann::json;

const std::set<std::string>& annotation_keywords() {
  static const std::set<std::string> keys = {"title",  "description", "default",     "examples",      "$schema",
                                             "$id",    "$comment",    "deprecated",  "readOnly",      "writeOnly",
                                             "strict", "$defs",       "definitions", "discriminator", "example"};
  return keys;
}

const std::map<std::string, std::string>& format_patterns() {
  static const std::string date = "[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])";
  static const std::string time =
      "([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\\.[0-9]{1,6})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])";
  static const std::string octet = "(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])";
  // NOTE: unbounded repetitions, not counted ones: a count makes a DFA state per position (and a token
  // list per state in the masker); the string's length bound ends them instead.
  static const std::string label = "[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?";
  static const std::map<std::string, std::string> formats = {
      {"date", date},
      {"time", time},
      {"date-time", date + "T" + time},
      {"uuid", "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"},
      {"email", "[A-Za-z0-9._%+-]+@" + label + "(\\." + label + ")+"},
      {"ipv4", "(" + octet + "\\.){3}" + octet},
      {"hostname", label + "(\\." + label + ")*"},
      {"uri", "[a-zA-Z][a-zA-Z0-9+.-]*:[A-Za-z0-9._~:/?#@!$&'()*+,;=%-]+"},
  };
  return formats;
}

class Compiler {
 public:
  Compiler(const Json& root, const GrammarLimits& limits) : root_(root) {
    grammar_ = std::make_shared<Grammar>();
    grammar_->limits = limits;
    grammar_->mask_cache = std::make_shared<TokenMaskCache>();
  }

  std::shared_ptr<const Grammar> run(bool object_only) {
    const int32_t root = add({});  // node 0
    add_any_nodes();
    if (object_only) {
      grammar_->nodes[0] = grammar_->nodes[static_cast<size_t>(grammar_->any_object)];
    } else {
      compile_into(root, root_, "#");
    }
    return grammar_;
  }

 private:
  [[noreturn]] static void fail(const std::string& keyword, const std::string& pointer, const std::string& what) {
    throw SchemaError(keyword, "invalid or unsupported JSON Schema at " + pointer + ": '" + keyword + "' " + what);
  }

  int32_t add(Node node) {
    grammar_->nodes.push_back(std::move(node));
    return static_cast<int32_t>(grammar_->nodes.size() - 1);
  }
  Node& at(int32_t index) { return grammar_->nodes[static_cast<size_t>(index)]; }

  void add_any_nodes() {
    const GrammarLimits& l = grammar_->limits;
    Grammar& g = *grammar_;
    const int32_t any = add({});
    Node object;
    object.kind = NodeKind::kObject;
    object.additional = any;
    object.max_additional = l.max_object_properties;
    g.any_object = add(object);
    Node array;
    array.kind = NodeKind::kArray;
    array.items = any;
    array.max_items = l.max_array_items;
    g.any_array = add(array);
    Node string;
    string.kind = NodeKind::kString;
    string.max_length = l.max_string_length;
    g.any_string = add(string);
    Node number;
    number.kind = NodeKind::kNumber;
    g.any_number = add(number);
    Node literal;
    literal.kind = NodeKind::kLiterals;
    literal.literals = {"true", "false", "null"};
    g.any_literal = add(literal);
    any_value_ = any;
  }

  int32_t compile(const Json& schema, const std::string& pointer) {
    const int32_t index = add({});
    compile_into(index, schema, pointer);
    return index;
  }

  int32_t resolve_ref(const std::string& ref, const std::string& pointer) {
    const auto found = refs_.find(ref);
    if (found != refs_.end()) return found->second;
    const Json* target = nullptr;
    if (ref == "#") {
      target = &root_;
    } else {
      for (const char* prefix : {"#/$defs/", "#/definitions/"}) {
        const std::string p = prefix;
        if (ref.rfind(p, 0) != 0) continue;
        const std::string section = p.substr(2, p.size() - 3);
        const std::string name = ref.substr(p.size());
        if (root_.is_object() && root_.contains(section) && root_[section].is_object() &&
            root_[section].contains(name)) {
          target = &root_[section][name];
        }
      }
    }
    if (target == nullptr)
      fail("$ref", pointer, "'" + ref + "' does not resolve (only #, #/$defs/NAME and #/definitions/NAME)");
    // NOTE: the node exists before its body is compiled, so recursive references terminate.
    const int32_t index = ref == "#" ? 0 : add({});
    refs_.emplace(ref, index);
    if (ref != "#") compile_into(index, *target, ref);
    return index;
  }

  static int32_t count_of(const Json& schema, const char* key, const std::string& pointer) {
    const Json& value = schema[key];
    if (!value.is_number_integer() || value.get<int64_t>() < 0 || value.get<int64_t>() > (1 << 20)) {
      fail(key, pointer, "must be a non-negative integer");
    }
    return value.get<int32_t>();
  }

  void compile_into(int32_t index, const Json& schema, const std::string& pointer) {
    const GrammarLimits& l = grammar_->limits;
    if (schema.is_boolean()) {
      if (!schema.get<bool>()) fail("false", pointer, "schema admits nothing");
      at(index).kind = NodeKind::kAny;
      return;
    }
    if (!schema.is_object()) fail("schema", pointer, "must be an object or a boolean");
    static const std::set<std::string> known = {"type",
                                                "properties",
                                                "required",
                                                "additionalProperties",
                                                "items",
                                                "enum",
                                                "const",
                                                "anyOf",
                                                "oneOf",
                                                "nullable",
                                                "minItems",
                                                "maxItems",
                                                "minLength",
                                                "maxLength",
                                                "minimum",
                                                "maximum",
                                                "exclusiveMinimum",
                                                "exclusiveMaximum",
                                                "pattern",
                                                "format",
                                                "$ref"};
    for (const auto& [key, value] : schema.items()) {
      if (known.count(key) == 0 && annotation_keywords().count(key) == 0) fail(key, pointer, "is not supported");
    }
    if (schema.contains("$ref")) {
      if (!schema["$ref"].is_string()) fail("$ref", pointer, "must be a string");
      Node node;
      node.kind = NodeKind::kAnyOf;
      node.alternatives = {resolve_ref(schema["$ref"].get<std::string>(), pointer)};
      at(index) = node;
      return;
    }
    // nullable: the schema without it, or null.
    if (schema.value("nullable", false)) {
      Json inner = schema;
      inner.erase("nullable");
      Node node;
      node.kind = NodeKind::kAnyOf;
      const int32_t value = compile(inner, pointer);
      Node null_node;
      null_node.kind = NodeKind::kLiterals;
      null_node.literals = {"null"};
      node.alternatives = {value, add(null_node)};
      at(index) = node;
      return;
    }
    if (schema.contains("enum") || schema.contains("const")) {
      Node node;
      node.kind = NodeKind::kLiterals;
      if (schema.contains("const")) {
        node.literals.push_back(schema["const"].dump());
      } else {
        if (!schema["enum"].is_array() || schema["enum"].empty()) fail("enum", pointer, "must be a non-empty array");
        if (schema["enum"].size() > 64) fail("enum", pointer, "has more than 64 values");
        for (const Json& value : schema["enum"]) node.literals.push_back(value.dump());
      }
      at(index) = node;
      return;
    }
    for (const char* key : {"anyOf", "oneOf"}) {
      if (!schema.contains(key)) continue;
      const Json& list = schema[key];
      if (!list.is_array() || list.empty()) fail(key, pointer, "must be a non-empty array");
      if (schema.contains("type") || schema.contains("properties"))
        fail(key, pointer, "combined with 'type' or 'properties' is not supported");
      Node node;
      node.kind = NodeKind::kAnyOf;
      for (size_t i = 0; i < list.size(); ++i)
        node.alternatives.push_back(compile(list[i], pointer + "/" + key + "/" + std::to_string(i)));
      at(index) = node;
      return;
    }
    if (!schema.contains("type")) {
      // Untyped: infer from the keywords present, else any value.
      Json typed = schema;
      if (schema.contains("properties") || schema.contains("required") || schema.contains("additionalProperties"))
        typed["type"] = "object";
      else if (schema.contains("items") || schema.contains("minItems") || schema.contains("maxItems"))
        typed["type"] = "array";
      else if (schema.contains("pattern") || schema.contains("minLength") || schema.contains("maxLength"))
        typed["type"] = "string";
      else if (schema.contains("minimum") || schema.contains("maximum"))
        typed["type"] = "number";
      if (!typed.contains("type")) {
        at(index).kind = NodeKind::kAny;
        return;
      }
      return compile_into(index, typed, pointer);
    }
    const Json& type = schema["type"];
    if (type.is_array()) {
      if (type.empty()) fail("type", pointer, "must not be empty");
      Node node;
      node.kind = NodeKind::kAnyOf;
      for (const Json& one : type) {
        Json single = schema;
        single["type"] = one;
        node.alternatives.push_back(compile(single, pointer));
      }
      at(index) = node;
      return;
    }
    if (!type.is_string()) fail("type", pointer, "must be a string or an array of strings");
    const std::string name = type.get<std::string>();
    Node node;
    if (name == "object") {
      node.kind = NodeKind::kObject;
      std::set<std::string> required;
      if (schema.contains("required")) {
        if (!schema["required"].is_array()) fail("required", pointer, "must be an array of strings");
        for (const Json& r : schema["required"]) {
          if (!r.is_string()) fail("required", pointer, "must be an array of strings");
          required.insert(r.get<std::string>());
        }
      }
      const bool has_properties = schema.contains("properties");
      if (has_properties) {
        if (!schema["properties"].is_object()) fail("properties", pointer, "must be an object");
        if (schema["properties"].size() > 63) fail("properties", pointer, "has more than 63 entries");
        for (const auto& [key, value] : schema["properties"].items()) {
          Property property;
          property.key = Json(key).dump();
          property.required = required.erase(key) > 0;
          if (property.required) node.required_mask |= uint64_t{1} << node.properties.size();
          property.node = compile(value, pointer + "/properties/" + key);
          node.properties.push_back(property);
        }
      }
      if (!required.empty())
        fail("required", pointer, "names '" + *required.begin() + "', which is not in 'properties'");
      const Json additional =
          schema.contains("additionalProperties") ? schema["additionalProperties"] : Json(!has_properties);
      if (additional.is_boolean()) {
        node.additional = additional.get<bool>() ? any_value_ : -1;
      } else if (additional.is_object()) {
        node.additional = compile(additional, pointer + "/additionalProperties");
      } else {
        fail("additionalProperties", pointer, "must be a boolean or a schema");
      }
      node.max_additional = l.max_object_properties;
    } else if (name == "array") {
      node.kind = NodeKind::kArray;
      node.items = schema.contains("items") ? compile(schema["items"], pointer + "/items") : any_value_;
      if (schema.contains("minItems")) node.min_items = count_of(schema, "minItems", pointer);
      node.max_items = schema.contains("maxItems") ? count_of(schema, "maxItems", pointer)
                                                   : std::max(node.min_items, l.max_array_items);
      if (node.max_items < node.min_items) fail("maxItems", pointer, "is below minItems");
    } else if (name == "string") {
      node.kind = NodeKind::kString;
      if (schema.contains("minLength")) node.min_length = count_of(schema, "minLength", pointer);
      node.max_length = schema.contains("maxLength") ? count_of(schema, "maxLength", pointer)
                                                     : std::max(node.min_length, l.max_string_length);
      if (node.max_length < node.min_length) fail("maxLength", pointer, "is below minLength");
      std::string pattern;
      if (schema.contains("format")) {
        if (!schema["format"].is_string()) fail("format", pointer, "must be a string");
        const auto found = format_patterns().find(schema["format"].get<std::string>());
        if (found != format_patterns().end()) pattern = found->second;
      }
      if (schema.contains("pattern")) {
        if (!schema["pattern"].is_string()) fail("pattern", pointer, "must be a string");
        if (!pattern.empty()) fail("pattern", pointer, "together with a 'format' is not supported");
        pattern = schema["pattern"].get<std::string>();
      }
      if (!pattern.empty()) {
        try {
          node.regex = ByteRegex::compile(pattern);
          if (node.regex->min_remaining(node.regex->start()) > node.max_length) {
            fail("maxLength", pointer, "is shorter than the shortest string the pattern or format allows");
          }
        } catch (const RegexError& error) {
          fail(schema.contains("pattern") ? "pattern" : "format", pointer, error.what());
        }
      }
    } else if (name == "number" || name == "integer") {
      node.kind = name == "number" ? NodeKind::kNumber : NodeKind::kInteger;
      const auto bound = [&](const char* key) -> std::optional<double> {
        if (!schema.contains(key)) return std::nullopt;
        if (!schema[key].is_number()) fail(key, pointer, "must be a number");
        return schema[key].get<double>();
      };
      node.minimum = bound("minimum");
      node.maximum = bound("maximum");
      for (const char* key : {"exclusiveMinimum", "exclusiveMaximum"}) {
        if (!schema.contains(key)) continue;
        const bool is_min = std::string(key) == "exclusiveMinimum";
        if (schema[key].is_boolean()) {  // draft 4: a flag on minimum/maximum
          (is_min ? node.exclusive_minimum : node.exclusive_maximum) = schema[key].get<bool>();
        } else {
          const double value = *bound(key);
          auto& target = is_min ? node.minimum : node.maximum;
          if (!target || (is_min ? value >= *target : value <= *target)) {
            target = value;
            (is_min ? node.exclusive_minimum : node.exclusive_maximum) = true;
          }
        }
      }
      const double limit = std::pow(10.0, l.max_integer_digits);
      if (node.minimum && node.maximum && *node.minimum > *node.maximum) fail("maximum", pointer, "is below minimum");
      if ((node.minimum && *node.minimum >= limit) || (node.maximum && *node.maximum <= -limit)) {
        fail(node.minimum ? "minimum" : "maximum", pointer,
             "is beyond the " + std::to_string(l.max_integer_digits) + "-digit cap");
      }
      if (node.kind == NodeKind::kInteger && node.minimum && node.maximum &&
          std::floor(*node.maximum) < std::ceil(*node.minimum)) {
        fail("maximum", pointer, "leaves no integer above minimum");
      }
    } else if (name == "boolean") {
      node.kind = NodeKind::kLiterals;
      node.literals = {"true", "false"};
    } else if (name == "null") {
      node.kind = NodeKind::kLiterals;
      node.literals = {"null"};
    } else {
      fail("type", pointer, "'" + name + "' is not a JSON Schema type");
    }
    at(index) = std::move(node);
  }

  const Json& root_;
  std::shared_ptr<Grammar> grammar_;
  std::map<std::string, int32_t> refs_;
  int32_t any_value_ = -1;
};

}  // namespace

std::shared_ptr<const Grammar> compile_json_schema(const nlohmann::json& schema, const GrammarLimits& limits) {
  return Compiler(schema, limits).run(false);
}

std::shared_ptr<const Grammar> json_object_grammar(const GrammarLimits& limits) {
  return Compiler(nlohmann::json::object(), limits).run(true);
}

}  // namespace gossamer::text::grammar
