#include "text/harmony_json.h"

#include <initializer_list>
#include <string_view>

#include "core/error.h"

namespace gossamer::text::harmony {

namespace {

using Json = nlohmann::ordered_json;

std::string type_name(const Json& value) {
  return value.type_name();
}

void require_object(const Json& json, const std::string& path) {
  GOSSAMER_CHECK(json.is_object(), "harmony JSON: ", path, " must be an object, got ", type_name(json));
}

void reject_unknown_keys(const Json& json, const std::string& path, std::initializer_list<std::string_view> known) {
  for (const auto& [key, value] : json.items()) {
    bool found = false;
    for (std::string_view k : known) found = found || k == key;
    GOSSAMER_CHECK(found, "harmony JSON: unknown key '", key, "' in ", path);
  }
}

// Missing or null → nullopt; a string → its value; anything else throws.
std::optional<std::string> optional_string(const Json& json, const char* key, const std::string& path) {
  const auto it = json.find(key);
  if (it == json.end() || it->is_null()) return std::nullopt;
  GOSSAMER_CHECK(it->is_string(), "harmony JSON: ", path, ".", key, " must be a string, got ", type_name(*it));
  return it->get<std::string>();
}

std::string required_string(const Json& json, const char* key, const std::string& path) {
  auto value = optional_string(json, key, path);
  GOSSAMER_CHECK(value.has_value(), "harmony JSON: ", path, ".", key, " is required");
  return *value;
}

ToolDescription tool_from_json(const Json& json, const std::string& path) {
  require_object(json, path);
  ToolDescription tool;
  tool.name = required_string(json, "name", path);
  tool.description = optional_string(json, "description", path).value_or("");
  const auto it = json.find("parameters");
  if (it != json.end() && !it->is_null()) tool.parameters = *it;
  return tool;
}

ToolNamespaces namespaces_from_json(const Json& json, const std::string& path) {
  require_object(json, path);
  ToolNamespaces namespaces;
  for (const auto& [key, value] : json.items()) {
    const std::string ns_path = path + "." + key;
    require_object(value, ns_path);
    ToolNamespace ns;
    ns.name = optional_string(value, "name", ns_path).value_or(key);
    ns.description = optional_string(value, "description", ns_path);
    const auto tools = value.find("tools");
    if (tools != value.end() && !tools->is_null()) {
      GOSSAMER_CHECK(tools->is_array(), "harmony JSON: ", ns_path, ".tools must be an array");
      for (size_t i = 0; i < tools->size(); ++i) {
        ns.tools.push_back(tool_from_json((*tools)[i], ns_path + ".tools[" + std::to_string(i) + "]"));
      }
    }
    namespaces.emplace(key, std::move(ns));
  }
  return namespaces;
}

Json namespaces_to_json(const ToolNamespaces& namespaces) {
  Json out = Json::object();
  for (const auto& [key, ns] : namespaces) {
    Json ns_json = Json::object();
    ns_json["name"] = ns.name;
    if (ns.description) ns_json["description"] = *ns.description;
    Json tools = Json::array();
    for (const ToolDescription& tool : ns.tools) {
      Json tool_json = Json::object();
      tool_json["name"] = tool.name;
      tool_json["description"] = tool.description;
      if (tool.parameters) tool_json["parameters"] = *tool.parameters;
      tools.push_back(std::move(tool_json));
    }
    ns_json["tools"] = std::move(tools);
    out[key] = std::move(ns_json);
  }
  return out;
}

// Reads an optional field that keeps `fallback` when the key is missing and becomes nullopt on null.
template <typename T, typename Read>
void read_defaulted(const Json& json, const char* key, std::optional<T>& field, Read read) {
  const auto it = json.find(key);
  if (it == json.end()) return;
  if (it->is_null()) {
    field.reset();
    return;
  }
  field = read(*it);
}

SystemContent system_content_from_json(const Json& json, const std::string& path) {
  reject_unknown_keys(json, path,
                      {"type", "model_identity", "reasoning_effort", "conversation_start_date", "knowledge_cutoff",
                       "channel_config", "tools"});
  SystemContent content;
  auto read_string = [&](const char* key) {
    return [&path, key](const Json& v) {
      GOSSAMER_CHECK(v.is_string(), "harmony JSON: ", path, ".", key, " must be a string, got ", type_name(v));
      return v.get<std::string>();
    };
  };
  read_defaulted(json, "model_identity", content.model_identity, read_string("model_identity"));
  read_defaulted(json, "conversation_start_date", content.conversation_start_date,
                 read_string("conversation_start_date"));
  read_defaulted(json, "knowledge_cutoff", content.knowledge_cutoff, read_string("knowledge_cutoff"));
  read_defaulted(json, "reasoning_effort", content.reasoning_effort, [&](const Json& v) {
    GOSSAMER_CHECK(v.is_string(), "harmony JSON: ", path, ".reasoning_effort must be a string");
    const auto effort = parse_reasoning_effort(v.get<std::string>());
    GOSSAMER_CHECK(effort.has_value(), "harmony JSON: ", path, ".reasoning_effort must be low, medium or high, got '",
                   v.get<std::string>(), "'");
    return *effort;
  });
  read_defaulted(json, "channel_config", content.channel_config, [&](const Json& v) {
    const std::string cc_path = path + ".channel_config";
    require_object(v, cc_path);
    reject_unknown_keys(v, cc_path, {"valid_channels", "channel_required"});
    ChannelConfig config;
    const auto channels = v.find("valid_channels");
    GOSSAMER_CHECK(channels != v.end() && channels->is_array(), "harmony JSON: ", cc_path,
                   ".valid_channels must be an array of strings");
    for (const Json& channel : *channels) {
      GOSSAMER_CHECK(channel.is_string(), "harmony JSON: ", cc_path, ".valid_channels must hold strings only");
      config.valid_channels.push_back(channel.get<std::string>());
    }
    const auto required = v.find("channel_required");
    if (required != v.end() && !required->is_null()) {
      GOSSAMER_CHECK(required->is_boolean(), "harmony JSON: ", cc_path, ".channel_required must be a boolean");
      config.channel_required = required->get<bool>();
    }
    return config;
  });
  read_defaulted(json, "tools", content.tools, [&](const Json& v) { return namespaces_from_json(v, path + ".tools"); });
  return content;
}

DeveloperContent developer_content_from_json(const Json& json, const std::string& path) {
  reject_unknown_keys(json, path, {"type", "instructions", "tools"});
  DeveloperContent content;
  content.instructions = optional_string(json, "instructions", path);
  const auto tools = json.find("tools");
  if (tools != json.end() && !tools->is_null()) content.tools = namespaces_from_json(*tools, path + ".tools");
  return content;
}

Content content_item_from_json(const Json& json, const std::string& path) {
  require_object(json, path);
  const std::string type = required_string(json, "type", path);
  if (type == "text") {
    reject_unknown_keys(json, path, {"type", "text"});
    return TextContent{required_string(json, "text", path)};
  }
  if (type == "system_content") return system_content_from_json(json, path);
  if (type == "developer_content") return developer_content_from_json(json, path);
  GOSSAMER_THROW("harmony JSON: ", path, ".type must be text, system_content or developer_content, got '", type, "'");
}

Json optional_to_json(const std::optional<std::string>& value) {
  return value ? Json(*value) : Json(nullptr);
}

Json content_item_to_json(const Content& item) {
  Json out = Json::object();
  if (const auto* text = std::get_if<TextContent>(&item)) {
    out["type"] = "text";
    out["text"] = text->text;
  } else if (const auto* system = std::get_if<SystemContent>(&item)) {
    out["type"] = "system_content";
    out["model_identity"] = optional_to_json(system->model_identity);
    out["reasoning_effort"] =
        system->reasoning_effort ? Json(std::string(reasoning_effort_name(*system->reasoning_effort))) : Json(nullptr);
    out["conversation_start_date"] = optional_to_json(system->conversation_start_date);
    out["knowledge_cutoff"] = optional_to_json(system->knowledge_cutoff);
    if (system->channel_config) {
      out["channel_config"] = Json{{"valid_channels", system->channel_config->valid_channels},
                                   {"channel_required", system->channel_config->channel_required}};
    } else {
      out["channel_config"] = nullptr;
    }
    out["tools"] = system->tools ? namespaces_to_json(*system->tools) : Json(nullptr);
  } else {
    const auto& developer = std::get<DeveloperContent>(item);
    out["type"] = "developer_content";
    if (developer.instructions) out["instructions"] = *developer.instructions;
    if (developer.tools) out["tools"] = namespaces_to_json(*developer.tools);
  }
  return out;
}

}  // namespace

Message message_from_json(const Json& json, const std::string& path) {
  require_object(json, path);
  reject_unknown_keys(json, path, {"role", "name", "recipient", "channel", "content_type", "content"});
  Message message;
  const std::string role = required_string(json, "role", path);
  const auto parsed_role = parse_role(role);
  GOSSAMER_CHECK(parsed_role.has_value(), "harmony JSON: ", path,
                 ".role must be user, assistant, system, developer or tool, got '", role, "'");
  message.author.role = *parsed_role;
  message.author.name = optional_string(json, "name", path);
  message.recipient = optional_string(json, "recipient", path);
  message.channel = optional_string(json, "channel", path);
  message.content_type = optional_string(json, "content_type", path);
  const auto content = json.find("content");
  GOSSAMER_CHECK(content != json.end() && !content->is_null(), "harmony JSON: ", path, ".content is required");
  if (content->is_string()) {
    message.content.emplace_back(TextContent{content->get<std::string>()});
  } else {
    GOSSAMER_CHECK(content->is_array(), "harmony JSON: ", path, ".content must be a string or an array, got ",
                   type_name(*content));
    for (size_t i = 0; i < content->size(); ++i) {
      message.content.push_back(content_item_from_json((*content)[i], path + ".content[" + std::to_string(i) + "]"));
    }
  }
  return message;
}

Json message_to_json(const Message& message) {
  Json out = Json::object();
  out["role"] = std::string(role_name(message.author.role));
  if (message.author.name) out["name"] = *message.author.name;
  if (message.recipient) out["recipient"] = *message.recipient;
  if (message.channel) out["channel"] = *message.channel;
  if (message.content_type) out["content_type"] = *message.content_type;
  Json content = Json::array();
  for (const Content& item : message.content) content.push_back(content_item_to_json(item));
  out["content"] = std::move(content);
  return out;
}

Json messages_to_json(const std::vector<Message>& messages) {
  Json out = Json::array();
  for (const Message& message : messages) out.push_back(message_to_json(message));
  return out;
}

Conversation conversation_from_json(const Json& json) {
  require_object(json, "conversation");
  reject_unknown_keys(json, "conversation", {"messages"});
  const auto messages = json.find("messages");
  GOSSAMER_CHECK(messages != json.end() && messages->is_array(),
                 "harmony JSON: conversation.messages must be an array of messages");
  Conversation conversation;
  for (size_t i = 0; i < messages->size(); ++i) {
    conversation.messages.push_back(message_from_json((*messages)[i], "messages[" + std::to_string(i) + "]"));
  }
  return conversation;
}

Json conversation_to_json(const Conversation& conversation) {
  Json out = Json::object();
  out["messages"] = messages_to_json(conversation.messages);
  return out;
}

}  // namespace gossamer::text::harmony
