#include "server/responses_request.h"

#include <cstring>
#include <set>

#include "server/api_error.h"
#include "server/json_fields.h"

namespace gossamer::server {

namespace {

using Json = nlohmann::ordered_json;

// Text of a Responses message content: a string or parts of type input_text / output_text / text.
std::string item_text(const Json& content, const std::string& param) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) wrong_type(param, "a string or an array of content parts", content);
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    const Json& part = content[i];
    const std::string part_param = param + "[" + std::to_string(i) + "]";
    if (!part.is_object()) wrong_type(part_param, "an object", part);
    const std::string type = get_string(part, "type", part_param + ".type").value_or("");
    if (type != "input_text" && type != "output_text" && type != "text" && type != "reasoning_text" &&
        type != "summary_text") {
      throw ApiError::invalid("unsupported content part type '" + type + "' (only text is supported)",
                              part_param + ".type");
    }
    text += get_string(part, "text", part_param + ".text").value_or("");
  }
  return text;
}

// Builds chat messages from input items, merging reasoning + content / tool calls into assistant messages.
class ChatMessageBuilder {
 public:
  ChatMessageBuilder(Json& messages, const ResponsesStore& store) : messages_(messages), store_(store) {}

  void add(const Json& item, const std::string& param) {
    if (!item.is_object()) wrong_type(param, "an object", item);
    std::string type = get_string(item, "type", param + ".type").value_or(item.contains("role") ? "message" : "");
    if (type == "item_reference") {
      const auto id = get_string(item, "id", param + ".id");
      const auto found = id ? store_.find_item(*id) : std::nullopt;
      if (!found) throw ApiError::invalid("item_reference names no stored item", param + ".id");
      return add(Json(*found), param);
    }
    if (type == "message") {
      const std::string role = get_string(item, "role", param + ".role").value_or("");
      const Json* content = field(item, "content");
      const std::string text = content ? item_text(*content, param + ".content") : "";
      if (role == "assistant") {
        if (pending_.contains("content") || pending_.contains("tool_calls")) flush();
        pending_["content"] = text;
        flush();
      } else if (role == "user" || role == "system" || role == "developer") {
        flush();
        messages_.push_back({{"role", role}, {"content", text}});
      } else {
        throw ApiError::invalid("unknown role '" + role + "' (expected user, system, developer or assistant)",
                                param + ".role");
      }
    } else if (type == "reasoning") {
      std::string text;
      if (const Json* content = field(item, "content"); content && !content->empty()) {
        text = item_text(*content, param + ".content");
      } else if (const auto encrypted = get_string(item, "encrypted_content", param + ".encrypted_content")) {
        const auto decoded = decode_reasoning(*encrypted);
        if (!decoded)
          throw ApiError::invalid("encrypted_content was not made by this server", param + ".encrypted_content");
        text = *decoded;
      } else if (const Json* summary = field(item, "summary"); summary && !summary->empty()) {
        text = item_text(*summary, param + ".summary");
      }
      if (pending_.contains("content") || pending_.contains("tool_calls")) flush();
      if (!text.empty()) pending_["reasoning"] = pending_.value("reasoning", std::string()) + text;
    } else if (type == "function_call") {
      const auto call_id = get_string(item, "call_id", param + ".call_id");
      const auto name = get_string(item, "name", param + ".name");
      if (!call_id || !name) throw ApiError::invalid("a function_call item needs call_id and name", param);
      if (pending_.contains("content")) flush();
      if (!pending_.contains("tool_calls")) pending_["tool_calls"] = Json::array();
      pending_["tool_calls"].push_back(
          {{"id", *call_id},
           {"type", "function"},
           {"function",
            {{"name", *name}, {"arguments", get_string(item, "arguments", param + ".arguments").value_or("{}")}}}});
    } else if (type == "function_call_output") {
      const auto call_id = get_string(item, "call_id", param + ".call_id");
      if (!call_id) throw ApiError::invalid("a function_call_output item needs call_id", param + ".call_id");
      const Json* output = field(item, "output");
      const std::string text = output ? item_text(*output, param + ".output") : "";
      flush();
      messages_.push_back({{"role", "tool"}, {"tool_call_id", *call_id}, {"content", text}});
    } else {
      throw ApiError::invalid("unsupported input item type '" + type + "'", param + ".type");
    }
  }

  void flush() {
    if (pending_.empty()) return;
    Json message = {{"role", "assistant"}, {"content", pending_.value("content", Json(nullptr))}};
    if (pending_.contains("reasoning")) message["reasoning"] = pending_["reasoning"];
    if (pending_.contains("tool_calls")) message["tool_calls"] = pending_["tool_calls"];
    messages_.push_back(std::move(message));
    pending_ = Json::object();
  }

 private:
  Json& messages_;
  const ResponsesStore& store_;
  Json pending_ = Json::object();
};

const char kBase64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
constexpr std::string_view kReasoningPrefix = "gossamer-reasoning-v1:";

}  // namespace

std::string encode_reasoning(const std::string& text) {
  std::string out(kReasoningPrefix);
  uint32_t buffer = 0;
  int bits = 0;
  for (const unsigned char c : text) {
    buffer = (buffer << 8) | c;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out += kBase64[(buffer >> bits) & 63];
    }
  }
  if (bits > 0) out += kBase64[(buffer << (6 - bits)) & 63];
  while ((out.size() - kReasoningPrefix.size()) % 4 != 0) out += '=';
  return out;
}

std::optional<std::string> decode_reasoning(const std::string& encoded) {
  if (!encoded.starts_with(kReasoningPrefix)) return std::nullopt;
  std::string out;
  uint32_t buffer = 0;
  int bits = 0;
  for (size_t i = kReasoningPrefix.size(); i < encoded.size(); ++i) {
    const char c = encoded[i];
    if (c == '=') break;
    const char* found = std::strchr(kBase64, c);
    if (found == nullptr || c == '\0') return std::nullopt;
    buffer = (buffer << 6) | static_cast<uint32_t>(found - kBase64);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((buffer >> bits) & 0xFF);
    }
  }
  return out;
}

ResponsesRequest parse_responses_request(const Json& body, const ApiContext& context,
                                         const text::harmony::HarmonyRenderer& renderer, const ResponsesStore& store) {
  ResponsesRequest out;
  static const std::set<std::string> kKnown = {"model",
                                               "input",
                                               "instructions",
                                               "tools",
                                               "tool_choice",
                                               "reasoning",
                                               "max_output_tokens",
                                               "temperature",
                                               "top_p",
                                               "parallel_tool_calls",
                                               "metadata",
                                               "user",
                                               "store",
                                               "previous_response_id",
                                               "include",
                                               "stream",
                                               "text",
                                               "truncation",
                                               "background",
                                               "top_logprobs"};
  if (get_bool(body, "background", "background").value_or(false)) {
    throw ApiError::invalid("background responses are not supported", "background");
  }
  if (const auto truncation = get_string(body, "truncation", "truncation"); truncation && *truncation != "disabled") {
    throw ApiError::invalid("only truncation \"disabled\" is supported", "truncation");
  }
  if (field(body, "top_logprobs"))
    throw ApiError::invalid("top_logprobs is not supported on /v1/responses yet", "top_logprobs");
  // text.format → the chat request's response_format (constrained decoding: server/structured_output.h).
  Json response_format;
  Json text_echo = {{"format", {{"type", "text"}}}};
  if (const Json* text = field(body, "text")) {
    if (!text->is_object()) wrong_type("text", "an object", *text);
    if (const Json* format = field(*text, "format")) {
      if (!format->is_object()) wrong_type("text.format", "an object", *format);
      const std::string type = get_string(*format, "type", "text.format.type").value_or("text");
      if (type == "json_object") {
        response_format = {{"type", "json_object"}};
      } else if (type == "json_schema") {
        const Json* schema = field(*format, "schema");
        if (schema == nullptr) throw ApiError::invalid("text.format json_schema needs a schema", "text.format.schema");
        Json spec = {{"name", get_string(*format, "name", "text.format.name").value_or("response")},
                     {"schema", *schema}};
        if (const auto strict = get_bool(*format, "strict", "text.format.strict")) spec["strict"] = *strict;
        response_format = {{"type", "json_schema"}, {"json_schema", std::move(spec)}};
      } else if (type != "text") {
        throw ApiError::invalid("text.format.type must be text, json_object or json_schema", "text.format.type");
      }
      text_echo["format"] = *format;
    }
  }
  if (const Json* include = field(body, "include")) {
    if (!include->is_array()) wrong_type("include", "an array of strings", *include);
    for (const Json& value : *include) {
      if (value == "reasoning.encrypted_content") {
        out.include_encrypted_reasoning = true;
      } else {
        throw ApiError::invalid("unsupported include value " + value.dump(), "include");
      }
    }
  }
  out.store = get_bool(body, "store", "store").value_or(true);

  // The conversation: the previous response's, then this input.
  Json conversation = Json::array();
  if (const auto previous = get_string(body, "previous_response_id", "previous_response_id")) {
    const auto stored = store.get(*previous);
    if (!stored) {
      throw ApiError(404, "invalid_request_error", "Previous response with id '" + *previous + "' not found.",
                     "previous_response_id", "previous_response_not_found");
    }
    conversation = stored->messages;
    out.previous_response_id = *previous;
  }
  const Json* input = field(body, "input");
  if (!input) throw ApiError::invalid("'input' is required", "input");
  ChatMessageBuilder builder(conversation, store);
  if (input->is_string()) {
    conversation.push_back({{"role", "user"}, {"content", input->get<std::string>()}});
  } else if (input->is_array()) {
    for (size_t i = 0; i < input->size(); ++i) builder.add((*input)[i], "input[" + std::to_string(i) + "]");
    builder.flush();
  } else {
    wrong_type("input", "a string or an array of items", *input);
  }
  out.messages = conversation;

  // The equivalent chat request.
  Json chat = Json::object();
  if (const Json* model = field(body, "model")) chat["model"] = *model;
  Json messages = Json::array();
  const auto instructions = get_string(body, "instructions", "instructions");
  if (instructions && !instructions->empty()) messages.push_back({{"role", "developer"}, {"content", *instructions}});
  for (const Json& message : conversation) messages.push_back(message);
  if (messages.empty()) throw ApiError::invalid("'input' must not be empty", "input");
  chat["messages"] = std::move(messages);
  if (const Json* tools = field(body, "tools")) {
    if (!tools->is_array()) wrong_type("tools", "an array", *tools);
    Json chat_tools = Json::array();
    for (size_t i = 0; i < tools->size(); ++i) {
      const Json& tool = (*tools)[i];
      const std::string param = "tools[" + std::to_string(i) + "]";
      if (!tool.is_object()) wrong_type(param, "an object", tool);
      if (get_string(tool, "type", param + ".type").value_or("") != "function") {
        throw ApiError::invalid("only function tools are supported", param + ".type");
      }
      Json function = {{"name", get_string(tool, "name", param + ".name").value_or("")}};
      if (const auto description = get_string(tool, "description", param + ".description"))
        function["description"] = *description;
      if (const Json* parameters = field(tool, "parameters")) function["parameters"] = *parameters;
      chat_tools.push_back({{"type", "function"}, {"function", std::move(function)}});
    }
    chat["tools"] = std::move(chat_tools);
  }
  if (const Json* choice = field(body, "tool_choice")) {
    // The Responses API names a function flat ({type, name}); Chat Completions nests it under "function".
    if (choice->is_object() && choice->contains("name") && !choice->contains("function")) {
      chat["tool_choice"] = {{"type", "function"}, {"function", {{"name", (*choice)["name"]}}}};
    } else {
      chat["tool_choice"] = *choice;
    }
  }
  if (!response_format.is_null()) chat["response_format"] = response_format;
  if (const Json* reasoning = field(body, "reasoning")) {
    if (!reasoning->is_object()) wrong_type("reasoning", "an object", *reasoning);
    if (const auto effort = get_string(*reasoning, "effort", "reasoning.effort")) chat["reasoning_effort"] = *effort;
  }
  if (const auto max = get_integer(body, "max_output_tokens", "max_output_tokens")) {
    if (*max < 1) throw ApiError::invalid("max_output_tokens must be at least 1", "max_output_tokens");
    chat["max_completion_tokens"] = *max;
  }
  for (const char* key : {"temperature", "top_p", "parallel_tool_calls"}) {
    if (const Json* value = field(body, key)) chat[key] = *value;
  }
  if (const Json* metadata = field(body, "metadata"); metadata && !metadata->is_object())
    wrong_type("metadata", "an object", *metadata);
  out.generation = parse_chat_request(chat, context, renderer);
  out.generation.stream = get_bool(body, "stream", "stream").value_or(false);
  for (const auto& [key, value] : body.items()) {
    if (!kKnown.count(key)) out.generation.ignored_fields.push_back(key);
  }

  // What the response object repeats.
  out.echo = {
      {"instructions", instructions ? nlohmann::json(*instructions) : nlohmann::json(nullptr)},
      {"tools",
       body.contains("tools") && !body["tools"].is_null() ? nlohmann::json(body["tools"]) : nlohmann::json::array()},
      {"tool_choice", body.contains("tool_choice") ? nlohmann::json(body["tool_choice"]) : nlohmann::json("auto")},
      {"parallel_tool_calls", get_bool(body, "parallel_tool_calls", "parallel_tool_calls").value_or(true)},
      {"temperature", get_number(body, "temperature", "temperature").value_or(1.0)},
      {"top_p", get_number(body, "top_p", "top_p").value_or(1.0)},
      {"max_output_tokens",
       body.contains("max_output_tokens") ? nlohmann::json(body["max_output_tokens"]) : nlohmann::json(nullptr)},
      {"metadata", body.contains("metadata") && body["metadata"].is_object() ? nlohmann::json(body["metadata"])
                                                                             : nlohmann::json::object()},
      {"user", body.contains("user") ? nlohmann::json(body["user"]) : nlohmann::json(nullptr)},
      {"reasoning",
       {{"effort",
         chat.contains("reasoning_effort") ? nlohmann::json(chat["reasoning_effort"]) : nlohmann::json(nullptr)},
        {"summary", nullptr}}},
      {"text", text_echo},
      {"truncation", "disabled"},
      {"store", out.store},
      {"previous_response_id",
       out.previous_response_id ? nlohmann::json(*out.previous_response_id) : nlohmann::json(nullptr)}};
  return out;
}

}  // namespace gossamer::server
