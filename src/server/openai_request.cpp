#include "server/openai_request.h"

#include <algorithm>
#include <map>
#include <set>

#include "core/error.h"
#include "server/api_error.h"
#include "server/json_fields.h"
#include "text/harmony_typescript.h"

namespace gossamer::server {

namespace {

using Json = nlohmann::ordered_json;
namespace harmony = text::harmony;
constexpr int64_t kernels_max_top_logprobs = 20;  // OpenAI's cap (kernels::kMaxTopLogprobs)

void check_model(const Json& body, const ApiContext& context) {
  const auto model = get_string(body, "model", "model");
  if (!model || model->empty() || *model == context.served_model_name) return;
  if (std::find(context.model_aliases.begin(), context.model_aliases.end(), *model) != context.model_aliases.end())
    return;
  throw ApiError(404, "not_found_error", "The model `" + *model + "` does not exist.", "model", "model_not_found");
}

// Sampling fields common to both endpoints.
void parse_sampling(const Json& body, GenerationRequest& out, int32_t default_max_tokens) {
  out.sampling.stop_token_ids = harmony_stop_token_ids();
  if (const auto t = get_number(body, "temperature", "temperature")) {
    if (*t < 0.0 || *t > 2.0)
      throw ApiError::invalid("temperature must be in [0, 2], got " + std::to_string(*t), "temperature");
    out.sampling.temperature = static_cast<float>(*t);
  }
  if (const auto p = get_number(body, "top_p", "top_p")) {
    if (*p <= 0.0 || *p > 1.0) throw ApiError::invalid("top_p must be in (0, 1], got " + std::to_string(*p), "top_p");
    out.sampling.top_p = static_cast<float>(*p);
  }
  if (const auto k = get_integer(body, "top_k", "top_k")) {
    if (*k < -1) throw ApiError::invalid("top_k must be >= 0 (or -1 for off)", "top_k");
    out.sampling.top_k = *k <= 0 ? 0 : static_cast<int32_t>(std::min<int64_t>(*k, 1 << 30));
  }
  if (const Json* seed = field(body, "seed")) {
    if (!seed->is_number_integer() && !seed->is_number_unsigned()) wrong_type("seed", "an integer", *seed);
    out.sampling.seed =
        seed->is_number_unsigned() ? seed->get<uint64_t>() : static_cast<uint64_t>(seed->get<int64_t>());
  }
  std::optional<int64_t> max_tokens = get_integer(body, "max_tokens", "max_tokens");
  const char* max_param = "max_tokens";
  if (const auto newer = get_integer(body, "max_completion_tokens", "max_completion_tokens")) {
    max_tokens = newer;
    max_param = "max_completion_tokens";
  }
  if (max_tokens) {
    if (*max_tokens < 1) throw ApiError::invalid(std::string(max_param) + " must be at least 1", max_param);
    out.requested_max_tokens = static_cast<int32_t>(std::min<int64_t>(*max_tokens, 1 << 30));
    out.sampling.max_tokens = out.requested_max_tokens;
  } else {
    out.sampling.max_tokens = default_max_tokens;
  }
  if (const auto n = get_integer(body, "n", "n")) {
    if (*n < 1 || *n > kMaxChoices)
      throw ApiError::invalid("n must be in [1, " + std::to_string(kMaxChoices) + "]", "n");
    out.n = static_cast<int32_t>(*n);
  }
  const auto penalty = [&](const char* key, double low, double high, bool low_open) -> std::optional<float> {
    const auto value = get_number(body, key, key);
    if (!value) return std::nullopt;
    if ((low_open ? *value <= low : *value < low) || *value > high) {
      throw ApiError::invalid(std::string(key) + " must be in " + (low_open ? "(" : "[") + std::to_string(low) + ", " +
                                  std::to_string(high) + "], got " + std::to_string(*value),
                              key);
    }
    return static_cast<float>(*value);
  };
  if (const auto p = penalty("presence_penalty", -2.0, 2.0, false)) out.sampling.presence_penalty = *p;
  if (const auto p = penalty("frequency_penalty", -2.0, 2.0, false)) out.sampling.frequency_penalty = *p;
  if (const auto p = penalty("repetition_penalty", 0.0, 2.0, true)) out.sampling.repetition_penalty = *p;
  if (const auto ignore = get_bool(body, "ignore_eos", "ignore_eos")) out.sampling.ignore_eos = *ignore;
  if (const auto stream = get_bool(body, "stream", "stream")) out.stream = *stream;
  if (const Json* options = field(body, "stream_options")) {
    if (!options->is_object()) wrong_type("stream_options", "an object", *options);
    if (const auto usage = get_bool(*options, "include_usage", "stream_options.include_usage"))
      out.include_usage = *usage;
  }
  if (const Json* stop = field(body, "stop")) {
    if (stop->is_string()) {
      out.stop.push_back(stop->get<std::string>());
    } else if (stop->is_array()) {
      if (stop->size() > 4) throw ApiError::invalid("'stop' takes at most 4 sequences", "stop");
      for (const Json& item : *stop) {
        if (!item.is_string()) wrong_type("stop", "a string or an array of strings", *stop);
        out.stop.push_back(item.get<std::string>());
      }
    } else {
      wrong_type("stop", "a string or an array of strings", *stop);
    }
    std::erase_if(out.stop, [](const std::string& s) { return s.empty(); });
  }
}

// Chat: logprobs (a boolean) and top_logprobs in [0, 20], which needs logprobs.
void parse_chat_logprobs(const Json& body, GenerationRequest& out) {
  const bool logprobs = get_bool(body, "logprobs", "logprobs").value_or(false);
  const auto top = get_integer(body, "top_logprobs", "top_logprobs");
  if (top && (*top < 0 || *top > kernels_max_top_logprobs)) {
    throw ApiError::invalid("top_logprobs must be in [0, 20]", "top_logprobs");
  }
  if (top && !logprobs) throw ApiError::invalid("top_logprobs needs \"logprobs\": true", "top_logprobs");
  if (logprobs) out.sampling.logprobs = static_cast<int32_t>(top.value_or(0));
}

// Completions: logprobs is the number of top tokens per position, in [0, 20] (OpenAI allows up to 5).
void parse_completion_logprobs(const Json& body, GenerationRequest& out) {
  const Json* value = field(body, "logprobs");
  if (!value) return;
  if (value->is_boolean()) {  // some clients send the chat form
    if (value->get<bool>()) out.sampling.logprobs = 0;
    return;
  }
  const auto top = get_integer(body, "logprobs", "logprobs");
  if (*top < 0 || *top > kernels_max_top_logprobs) throw ApiError::invalid("logprobs must be in [0, 20]", "logprobs");
  out.sampling.logprobs = static_cast<int32_t>(*top);
}

void collect_ignored(const Json& body, const std::set<std::string>& known, GenerationRequest& out) {
  for (const auto& [key, value] : body.items()) {
    if (!known.count(key)) out.ignored_fields.push_back(key);
  }
}

// Text of an OpenAI message content: a string, or an array of {"type": "text", "text"} parts.
std::optional<std::string> content_text(const Json& message, const std::string& param) {
  const auto found = message.find("content");
  if (found == message.end() || found->is_null()) return std::nullopt;
  if (found->is_string()) return found->get<std::string>();
  if (!found->is_array()) wrong_type(param, "a string or an array of content parts", *found);
  std::string text;
  for (size_t i = 0; i < found->size(); ++i) {
    const Json& part = (*found)[i];
    const std::string part_param = param + "[" + std::to_string(i) + "]";
    if (!part.is_object()) wrong_type(part_param, "an object", part);
    const auto type = get_string(part, "type", part_param + ".type");
    if (type != "text" && type != "input_text") {
      throw ApiError::invalid("unsupported content part type '" + type.value_or("") + "' (only text is supported)",
                              part_param + ".type");
    }
    const auto part_text = get_string(part, "text", part_param + ".text");
    if (!part_text) throw ApiError::invalid("a text part needs 'text'", part_param + ".text");
    text += *part_text;
  }
  return text;
}

// A tool schema within SchemaLimits, and the request's schemas together within kMaxSchemaNodesPerRequest.
void check_schema(const Json& schema, const std::string& param, int64_t& nodes_so_far) {
  int64_t nodes = 0;
  if (const auto violation = harmony::schema_limit_violation(schema, harmony::SchemaLimits{}, &nodes)) {
    throw ApiError::invalid("'" + param + "' " + *violation, param);
  }
  nodes_so_far += nodes;
  if (nodes_so_far > kMaxSchemaNodesPerRequest) {
    throw ApiError::invalid("the tool schemas of this request hold more than " +
                                std::to_string(kMaxSchemaNodesPerRequest) +
                                " JSON values together (the limit per request)",
                            param);
  }
}

harmony::Message text_message(harmony::Role role, std::string text, std::optional<std::string> channel = std::nullopt) {
  harmony::Message message = harmony::Message::text(role, std::move(text));
  message.channel = std::move(channel);
  return message;
}

}  // namespace

std::vector<engine::TokenId> harmony_stop_token_ids() {
  constexpr engine::TokenId kEndOfTextToken = 199999;  // <|endoftext|> (text/tokenizer_specials.h)
  return {harmony::kReturnToken, harmony::kCallToken, kEndOfTextToken};
}

GenerationRequest parse_chat_request(const nlohmann::ordered_json& body, const ApiContext& context,
                                     const text::harmony::HarmonyRenderer& renderer) {
  GenerationRequest out;
  check_model(body, context);
  collect_ignored(body,
                  {"model",
                   "messages",
                   "temperature",
                   "top_p",
                   "top_k",
                   "seed",
                   "max_tokens",
                   "max_completion_tokens",
                   "n",
                   "stream",
                   "stream_options",
                   "stop",
                   "ignore_eos",
                   "tools",
                   "tool_choice",
                   "reasoning_effort",
                   "reasoning",
                   "include_reasoning",
                   "logprobs",
                   "top_logprobs",
                   "response_format",
                   "parallel_tool_calls",
                   "presence_penalty",
                   "frequency_penalty",
                   "repetition_penalty"},
                  out);
  parse_sampling(body, out, 0);  // 0 = up to the context (gpt-oss reasons at length)
  parse_chat_logprobs(body, out);

  // Reasoning effort and switches.
  harmony::SystemContent system;
  std::optional<std::string> effort = get_string(body, "reasoning_effort", "reasoning_effort");
  if (const Json* reasoning = field(body, "reasoning")) {
    if (!reasoning->is_object()) wrong_type("reasoning", "an object", *reasoning);
    if (!effort) effort = get_string(*reasoning, "effort", "reasoning.effort");
    if (const auto exclude = get_bool(*reasoning, "exclude", "reasoning.exclude"); exclude && *exclude)
      out.include_reasoning = false;
  }
  if (effort) {
    const auto parsed = harmony::parse_reasoning_effort(*effort);
    if (!parsed) throw ApiError::invalid("reasoning_effort must be one of low, medium, high", "reasoning_effort");
    system.reasoning_effort = *parsed;
  }
  if (const auto include = get_bool(body, "include_reasoning", "include_reasoning"); include && !*include)
    out.include_reasoning = false;

  // Tools (tool_choice and response_format are checked by parse_structured_output).
  const Json* choice = field(body, "tool_choice");
  const bool tools_enabled = !(choice && choice->is_string() && *choice == "none");
  std::vector<std::pair<std::string, Json>> tool_parameters;
  harmony::ToolNamespace functions;
  functions.name = "functions";
  if (const Json* tools = field(body, "tools")) {
    if (!tools->is_array()) wrong_type("tools", "an array", *tools);
    if (tools->size() > static_cast<size_t>(kMaxTools)) {
      throw ApiError::invalid(
          "at most " + std::to_string(kMaxTools) + " tools are allowed, got " + std::to_string(tools->size()), "tools");
    }
    int64_t schema_nodes = 0;
    for (size_t i = 0; i < tools->size(); ++i) {
      const Json& tool = (*tools)[i];
      const std::string param = "tools[" + std::to_string(i) + "]";
      if (!tool.is_object()) wrong_type(param, "an object", tool);
      if (get_string(tool, "type", param + ".type").value_or("function") != "function") {
        throw ApiError::invalid("only function tools are supported", param + ".type");
      }
      const Json* function = field(tool, "function");
      if (!function || !function->is_object())
        throw ApiError::invalid("a tool needs a 'function' object", param + ".function");
      harmony::ToolDescription description;
      const auto name = get_string(*function, "name", param + ".function.name");
      if (!name || name->empty()) throw ApiError::invalid("a function tool needs a name", param + ".function.name");
      description.name = *name;
      description.description = get_string(*function, "description", param + ".function.description").value_or("");
      if (const Json* parameters = field(*function, "parameters")) {
        if (!parameters->is_object()) wrong_type(param + ".function.parameters", "an object", *parameters);
        check_schema(*parameters, param + ".function.parameters", schema_nodes);
        description.parameters = *parameters;
      }
      tool_parameters.emplace_back(description.name, description.parameters.value_or(Json()));
      out.tool_names.push_back(description.name);
      functions.tools.push_back(std::move(description));
    }
  }

  out.structured = parse_structured_output(body, tool_parameters);
  if (!out.structured->active()) out.structured.reset();

  // Messages.
  const Json* messages = field(body, "messages");
  if (!messages) throw ApiError::invalid("'messages' is required", "messages");
  if (!messages->is_array()) wrong_type("messages", "an array", *messages);
  if (messages->empty()) throw ApiError::invalid("'messages' must not be empty", "messages");
  std::string instructions;
  std::vector<harmony::Message> turns;
  std::map<std::string, std::string> tool_name_by_call_id;
  for (size_t i = 0; i < messages->size(); ++i) {
    const Json& message = (*messages)[i];
    const std::string param = "messages[" + std::to_string(i) + "]";
    if (!message.is_object()) wrong_type(param, "an object", message);
    const auto role = get_string(message, "role", param + ".role");
    if (!role) throw ApiError::invalid("a message needs a role", param + ".role");
    const auto text = content_text(message, param + ".content");
    if (*role == "system" || *role == "developer") {
      if (text && !text->empty()) instructions += (instructions.empty() ? "" : "\n\n") + *text;
    } else if (*role == "user") {
      if (!text) throw ApiError::invalid("a user message needs content", param + ".content");
      turns.push_back(text_message(harmony::Role::kUser, *text));
    } else if (*role == "assistant") {
      std::optional<std::string> reasoning = get_string(message, "reasoning", param + ".reasoning");
      if (!reasoning) reasoning = get_string(message, "reasoning_content", param + ".reasoning_content");
      if (reasoning && !reasoning->empty())
        turns.push_back(text_message(harmony::Role::kAssistant, *reasoning, "analysis"));
      const Json* calls = field(message, "tool_calls");
      if (calls && !calls->is_array()) wrong_type(param + ".tool_calls", "an array", *calls);
      const bool has_calls = calls && !calls->empty();
      if (text && !text->empty()) {
        turns.push_back(text_message(harmony::Role::kAssistant, *text, has_calls ? "commentary" : "final"));
      }
      if (has_calls) {
        for (size_t c = 0; c < calls->size(); ++c) {
          const Json& call = (*calls)[c];
          const std::string call_param = param + ".tool_calls[" + std::to_string(c) + "]";
          if (!call.is_object()) wrong_type(call_param, "an object", call);
          const Json* function = field(call, "function");
          if (!function || !function->is_object())
            throw ApiError::invalid("a tool call needs 'function'", call_param + ".function");
          const auto name = get_string(*function, "name", call_param + ".function.name");
          if (!name || name->empty())
            throw ApiError::invalid("a tool call needs a function name", call_param + ".function.name");
          const auto arguments = get_string(*function, "arguments", call_param + ".function.arguments").value_or("{}");
          if (const auto id = get_string(call, "id", call_param + ".id")) tool_name_by_call_id[*id] = *name;
          harmony::Message call_message = text_message(harmony::Role::kAssistant, arguments, "commentary");
          call_message.recipient = "functions." + *name;
          call_message.content_type = "<|constrain|>json";
          turns.push_back(std::move(call_message));
        }
      }
    } else if (*role == "tool") {
      std::optional<std::string> name = get_string(message, "name", param + ".name");
      if (!name) {
        const auto id = get_string(message, "tool_call_id", param + ".tool_call_id");
        const auto found = id ? tool_name_by_call_id.find(*id) : tool_name_by_call_id.end();
        if (found == tool_name_by_call_id.end()) {
          throw ApiError::invalid(
              "a tool message needs a 'tool_call_id' of an earlier assistant tool call (or a 'name')",
              param + ".tool_call_id");
        }
        name = found->second;
      }
      harmony::Message result = text_message(harmony::Role::kTool, text.value_or(""), "commentary");
      result.author.name = "functions." + *name;
      result.recipient = "assistant";
      turns.push_back(std::move(result));
    } else {
      throw ApiError::invalid("unknown role '" + *role + "' (expected system, developer, user, assistant or tool)",
                              param + ".role");
    }
  }

  if (out.structured && !out.structured->response_format_text.empty()) {
    instructions += (instructions.empty() ? "" : "\n\n") + out.structured->response_format_text;
  }
  harmony::Conversation conversation;
  harmony::Message system_message;
  system_message.author.role = harmony::Role::kSystem;
  system_message.content.emplace_back(system);
  conversation.messages.push_back(std::move(system_message));
  const bool with_tools = tools_enabled && !functions.tools.empty();
  if (!instructions.empty() || with_tools) {
    harmony::DeveloperContent developer;
    if (!instructions.empty()) developer.instructions = instructions;
    if (with_tools) developer.tools = harmony::ToolNamespaces{{"functions", functions}};
    harmony::Message developer_message;
    developer_message.author.role = harmony::Role::kDeveloper;
    developer_message.content.emplace_back(std::move(developer));
    conversation.messages.push_back(std::move(developer_message));
  }
  for (auto& turn : turns) conversation.messages.push_back(std::move(turn));
  try {
    out.prompt = renderer.render(conversation).tokens;
  } catch (const Error& error) {
    throw ApiError::invalid(std::string("cannot render the conversation: ") + error.what(), "messages");
  }
  return out;
}

GenerationRequest parse_completion_request(const nlohmann::ordered_json& body, const ApiContext& context,
                                           const text::Tokenizer& tokenizer) {
  GenerationRequest out;
  check_model(body, context);
  collect_ignored(body,
                  {"model", "prompt", "temperature", "top_p", "top_k", "seed", "max_tokens", "max_completion_tokens",
                   "n", "stream", "stream_options", "stop", "ignore_eos", "logprobs", "echo", "presence_penalty",
                   "frequency_penalty", "repetition_penalty"},
                  out);
  parse_sampling(body, out, 16);  // OpenAI's and vLLM's default for completions
  parse_completion_logprobs(body, out);
  const Json* prompt = field(body, "prompt");
  if (!prompt) throw ApiError::invalid("'prompt' is required", "prompt");
  const Json* single = prompt;
  if (prompt->is_array() && !prompt->empty() && (prompt->front().is_string() || prompt->front().is_array())) {
    if (prompt->size() != 1) throw ApiError::invalid("only one prompt per request is supported", "prompt");
    single = &prompt->front();
  }
  if (single->is_string()) {
    try {
      out.prompt = tokenizer.encode(single->get<std::string>(), {}, true);
    } catch (const Error& error) {
      throw ApiError::invalid(std::string("cannot tokenize the prompt: ") + error.what(), "prompt");
    }
  } else if (single->is_array()) {
    for (const Json& id : *single) {
      if (!id.is_number_integer() && !id.is_number_unsigned())
        wrong_type("prompt", "a string or an array of token ids", *prompt);
      const int64_t value = id.get<int64_t>();
      if (value < 0 || value >= tokenizer.vocab_size()) {
        throw ApiError::invalid("token id " + std::to_string(value) + " is outside the vocabulary", "prompt");
      }
      out.prompt.push_back(static_cast<engine::TokenId>(value));
    }
  } else {
    wrong_type("prompt", "a string or an array of token ids", *prompt);
  }
  if (out.prompt.empty()) throw ApiError::invalid("the prompt is empty", "prompt");
  if (const auto echo = get_bool(body, "echo", "echo"); echo && *echo)
    throw ApiError::invalid("echo is not supported", "echo");
  return out;
}

}  // namespace gossamer::server
