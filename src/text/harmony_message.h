// Harmony data model: the messages of a gpt-oss conversation (openai-harmony's Message; docs/harmony-json.md).
//
// Contract:
//  - Plain value types; no invariants are enforced on construction. The renderer checks what it needs
//    (a tool message has a name, system content only in system messages, ...) and throws gossamer::Error.
//  - Tool parameters are JSON Schema kept as nlohmann::ordered_json, so property order is the input order
//    (the rendered TypeScript-like types depend on it).
//  - Namespaces are held in a std::map keyed by namespace name: rendering order is byte-wise ascending,
//    as in the reference (Rust BTreeMap).
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "text/tokenizer.h"

namespace gossamer::text::harmony {

// Special tokens of o200k_harmony that the format uses (text/tokenizer_specials.h).
inline constexpr TokenId kReturnToken = 200002;     // <|return|>: end of the final answer, stop token
inline constexpr TokenId kConstrainToken = 200003;  // <|constrain|>: starts a constrained content type
inline constexpr TokenId kChannelToken = 200005;    // <|channel|>
inline constexpr TokenId kStartToken = 200006;      // <|start|>
inline constexpr TokenId kEndToken = 200007;        // <|end|>
inline constexpr TokenId kMessageToken = 200008;    // <|message|>
inline constexpr TokenId kCallToken = 200012;       // <|call|>: end of a tool call, stop token

inline constexpr std::string_view kConstrainMarker = "<|constrain|>";
inline constexpr std::string_view kChannelMarker = "<|channel|>";

// Ends a message for the parser: <|return|>, <|call|>, <|end|>.
constexpr bool is_message_stop_token(TokenId id) {
  return id == kReturnToken || id == kCallToken || id == kEndToken;
}
// Stops sampling: <|return|> and <|call|> only (<|end|> separates messages inside one completion).
constexpr bool is_assistant_action_stop_token(TokenId id) {
  return id == kReturnToken || id == kCallToken;
}

enum class Role : uint8_t { kUser, kAssistant, kSystem, kDeveloper, kTool };

// "user", "assistant", "system", "developer", "tool".
std::string_view role_name(Role role);
// Exact lower-case match of role_name(); nullopt otherwise.
std::optional<Role> parse_role(std::string_view text);

enum class ReasoningEffort : uint8_t { kLow, kMedium, kHigh };

// "low", "medium", "high".
std::string_view reasoning_effort_name(ReasoningEffort effort);
// Case-insensitive; nullopt for anything else.
std::optional<ReasoningEffort> parse_reasoning_effort(std::string_view text);

struct Author {
  Role role = Role::kUser;
  // Tool messages: the tool's full name (e.g. "functions.get_weather"). Other roles: rendered as "role:name".
  std::optional<std::string> name;

  bool operator==(const Author&) const = default;
};

struct ToolDescription {
  std::string name;
  std::string description;
  std::optional<nlohmann::ordered_json> parameters;  // JSON Schema; absent renders as "() => any"

  bool operator==(const ToolDescription&) const = default;
};

struct ToolNamespace {
  std::string name;
  std::optional<std::string> description;
  std::vector<ToolDescription> tools;  // rendered in this order

  bool operator==(const ToolNamespace&) const = default;

  // The built-in namespaces of openai-harmony, exactly as its vectors render them.
  static ToolNamespace browser();
  static ToolNamespace python();
};

// Namespace name → namespace. Rendering iterates in key order.
using ToolNamespaces = std::map<std::string, ToolNamespace>;

struct ChannelConfig {
  std::vector<std::string> valid_channels;
  bool channel_required = true;

  bool operator==(const ChannelConfig&) const = default;

  // analysis, commentary, final; required.
  static ChannelConfig default_channels();
};

inline constexpr std::string_view kDefaultModelIdentity = "You are ChatGPT, a large language model trained by OpenAI.";
inline constexpr std::string_view kDefaultKnowledgeCutoff = "2024-06";

// The system message's structured content. Defaults are openai-harmony's SystemContent defaults.
struct SystemContent {
  std::optional<std::string> model_identity = std::string(kDefaultModelIdentity);
  std::optional<ReasoningEffort> reasoning_effort = ReasoningEffort::kMedium;
  std::optional<std::string> conversation_start_date;
  std::optional<std::string> knowledge_cutoff = std::string(kDefaultKnowledgeCutoff);
  std::optional<ChannelConfig> channel_config = ChannelConfig::default_channels();
  std::optional<ToolNamespaces> tools;  // built-in tools (browser, python)

  bool operator==(const SystemContent&) const = default;
};

// The developer message's structured content: instructions and function tools.
struct DeveloperContent {
  std::optional<std::string> instructions;
  std::optional<ToolNamespaces> tools;

  bool operator==(const DeveloperContent&) const = default;
};

struct TextContent {
  std::string text;

  bool operator==(const TextContent&) const = default;
};

using Content = std::variant<TextContent, SystemContent, DeveloperContent>;

struct Message {
  Author author;
  std::optional<std::string> recipient;     // e.g. "functions.get_weather", "python", "assistant"
  std::optional<std::string> channel;       // "analysis" | "commentary" | "final" | any string
  std::optional<std::string> content_type;  // e.g. "<|constrain|>json", "json", "code"
  std::vector<Content> content;

  bool operator==(const Message&) const = default;

  static Message text(Role role, std::string text);
  // Concatenation of every TextContent item (structured items are skipped).
  std::string text_content() const;
};

struct Conversation {
  std::vector<Message> messages;

  bool operator==(const Conversation&) const = default;
};

}  // namespace gossamer::text::harmony
