// Harmony renderer: conversation → token ids, exactly as openai-harmony renders it (tests/data/harmony_vectors holds
// its outputs).
//
// Contract:
//  - Text is encoded with Tokenizer::encode_ordinary, one segment at a time (role, " to=…", channel, each
//    content item...), so text can never inject special tokens; specials are written by id.
//  - Throws gossamer::Error on an invalid conversation (tool message without a name, system content outside a
//    system message, developer content outside a developer message, text that is not valid UTF-8).
//  - A HarmonyRenderer holds a shared, immutable tokenizer; it is immutable and thread-safe itself.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "text/harmony_message.h"
#include "text/tokenizer.h"

namespace gossamer::text::harmony {

enum class RenderMode : uint8_t {
  kCompletion,    // the conversation, then `<|start|>{next_role}` for the model to continue
  kConversation,  // the conversation only
  kTraining,      // the conversation; a final assistant message at the end ends in <|return|>, not <|end|>
};

struct RenderOptions {
  RenderMode mode = RenderMode::kCompletion;
  Role next_role = Role::kAssistant;  // kCompletion only
  // Drop analysis messages before the first `final` once the last assistant message is final (openai-harmony's rule).
  bool auto_drop_analysis = true;
};

struct RenderedConversation {
  std::vector<TokenId> tokens;
  std::string text;  // the same tokens decoded, specials written as their `<|…|>` strings
};

class HarmonyRenderer {
 public:
  explicit HarmonyRenderer(std::shared_ptr<const Tokenizer> tokenizer);

  RenderedConversation render(const Conversation& conversation, const RenderOptions& options = {}) const;

  // One message on its own. `has_function_tools` adds the functions note to system content (as openai-harmony does).
  RenderedConversation render_message(const Message& message, bool has_function_tools = false) const;

  // The plain texts of structured content items (as openai-harmony reads them); no tokens.
  static std::string system_content_text(const SystemContent& content, bool has_function_tools);
  static std::string developer_content_text(const DeveloperContent& content);
  // "# Tools\n\n## ns\n..." (openai-harmony's tool section).
  static std::string tools_section_text(const ToolNamespaces& namespaces);

  // Whether a developer message declares at least one tool in namespace "functions".
  static bool has_function_tools(const Conversation& conversation);
  // Indices of the messages rendered after the analysis-dropping rule (openai-harmony's rule).
  static std::vector<size_t> kept_message_indices(const Conversation& conversation, bool auto_drop_analysis);

 private:
  class Output;
  void render_message_into(const Message& message, bool has_function_tools, Output& out) const;

  std::shared_ptr<const Tokenizer> tokenizer_;
};

}  // namespace gossamer::text::harmony
