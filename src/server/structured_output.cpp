#include "server/structured_output.h"

#include "core/log.h"
#include "server/api_error.h"
#include "server/shared_grammars.h"
#include "text/grammar/json_schema_compiler.h"

namespace gossamer::server {

namespace {

using OrderedJson = nlohmann::ordered_json;
namespace grammar = text::grammar;

std::shared_ptr<const grammar::Grammar> compile_or_400(const OrderedJson& schema, const std::string& param) {
  try {
    return shared_schema_grammar(schema.dump());
  } catch (const grammar::SchemaError& error) {
    ApiError api = ApiError::invalid(error.what(), param);
    api.code = "unsupported_schema_keyword";
    api.extra = {{"keyword", error.keyword()}};
    throw api;
  }
}

}  // namespace

std::shared_ptr<const StructuredOutputSpec> parse_structured_output(
    const OrderedJson& body, const std::vector<std::pair<std::string, OrderedJson>>& tool_parameters) {
  auto spec = std::make_shared<StructuredOutputSpec>();

  if (body.contains("response_format") && !body["response_format"].is_null()) {
    const OrderedJson& format = body["response_format"];
    if (!format.is_object() || !format.contains("type") || !format["type"].is_string()) {
      throw ApiError::invalid("response_format must be an object with a string 'type'", "response_format");
    }
    const std::string type = format["type"];
    if (type == "json_object") {
      spec->response = shared_json_object_grammar();
      spec->response_format_text = "# Response Formats\n\nRespond with a single JSON object.";
    } else if (type == "json_schema") {
      const OrderedJson* json_schema = format.contains("json_schema") ? &format["json_schema"] : nullptr;
      if (json_schema == nullptr || !json_schema->is_object()) {
        throw ApiError::invalid("response_format json_schema needs a 'json_schema' object",
                                "response_format.json_schema");
      }
      if (!json_schema->contains("schema") || !(*json_schema)["schema"].is_object()) {
        throw ApiError::invalid("response_format.json_schema needs a 'schema' object",
                                "response_format.json_schema.schema");
      }
      if (json_schema->contains("strict") && !(*json_schema)["strict"].is_boolean()) {
        throw ApiError::invalid("response_format.json_schema.strict must be a boolean",
                                "response_format.json_schema.strict");
      }
      const OrderedJson& schema = (*json_schema)["schema"];
      spec->response = compile_or_400(schema, "response_format.json_schema.schema");
      const std::string name = json_schema->contains("name") && (*json_schema)["name"].is_string()
                                   ? (*json_schema)["name"].get<std::string>()
                                   : "response";
      std::string text = "# Response Formats\n\n## " + name + "\n\n";
      if (json_schema->contains("description") && (*json_schema)["description"].is_string()) {
        text += "// " + (*json_schema)["description"].get<std::string>() + "\n";
      }
      spec->response_format_text = text + schema.dump();
    } else if (type != "text") {
      throw ApiError::invalid("response_format.type must be text, json_object or json_schema", "response_format.type");
    }
  }

  if (body.contains("tool_choice") && !body["tool_choice"].is_null()) {
    const OrderedJson& choice = body["tool_choice"];
    if (choice == "auto") {
      spec->tool_choice = ToolChoice::kAuto;
    } else if (choice == "none") {
      spec->tool_choice = ToolChoice::kNone;
    } else if (choice == "required") {
      spec->tool_choice = ToolChoice::kRequired;
    } else if (choice.is_object() && choice.value("type", "") == "function" && choice.contains("function") &&
               choice["function"].is_object() && choice["function"].contains("name") &&
               choice["function"]["name"].is_string()) {
      spec->tool_choice = ToolChoice::kNamed;
      spec->named_tool = choice["function"]["name"];
    } else {
      throw ApiError::invalid(
          "tool_choice must be \"auto\", \"none\", \"required\" or {\"type\": \"function\", \"function\": {\"name\": "
          "…}}",
          "tool_choice");
    }
  }
  const bool forced = spec->tool_choice == ToolChoice::kRequired || spec->tool_choice == ToolChoice::kNamed;
  if (forced && tool_parameters.empty()) {
    throw ApiError::invalid("tool_choice \"required\" or a named function needs 'tools'", "tool_choice");
  }
  if (spec->tool_choice == ToolChoice::kNamed) {
    bool declared = false;
    for (const auto& [name, parameters] : tool_parameters) declared |= name == spec->named_tool;
    if (!declared)
      throw ApiError::invalid("tool_choice names '" + spec->named_tool + "', which is not in 'tools'",
                              "tool_choice.function.name");
  }

  if (spec->tool_choice != ToolChoice::kNone) {
    for (size_t i = 0; i < tool_parameters.size(); ++i) {
      const auto& [name, parameters] = tool_parameters[i];
      if (parameters.is_null()) {
        spec->tools[name] = shared_json_object_grammar();
        continue;
      }
      const std::string param = "tools[" + std::to_string(i) + "].function.parameters";
      if (forced) {
        spec->tools[name] = compile_or_400(parameters, param);
        continue;
      }
      // NOTE: with tool_choice "auto" a schema the grammar does not support still gets JSON arguments
      // (any object) rather than a 400: such requests worked before arguments were constrained.
      try {
        spec->tools[name] = shared_schema_grammar(parameters.dump());
      } catch (const grammar::SchemaError& error) {
        GOSSAMER_LOG_WARN("structured output: ", param, " is not enforced (", error.what(),
                          "); arguments will be any JSON object");
        spec->tools[name] = shared_json_object_grammar();
      }
    }
  }
  return spec;
}

}  // namespace gossamer::server
