#include "text/harmony_renderer.h"

#include <string_view>
#include <utility>

#include "core/error.h"
#include "text/harmony_typescript.h"

namespace gossamer::text::harmony {

namespace {

constexpr std::string_view kFunctionsNote = "Calls to these tools must go to the commentary channel: 'functions'.";

// Rust str::lines(): split on '\n', drop one trailing '\r' per line, no extra line after a final '\n'.
std::vector<std::string_view> lines(std::string_view text) {
  std::vector<std::string_view> out;
  while (!text.empty()) {
    const size_t newline = text.find('\n');
    std::string_view line = text.substr(0, newline);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    out.push_back(line);
    if (newline == std::string_view::npos) break;
    text.remove_prefix(newline + 1);
  }
  return out;
}

std::string join(const std::vector<std::string>& parts, std::string_view separator) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += separator;
    out += parts[i];
  }
  return out;
}

std::string namespace_section_text(const ToolNamespace& ns) {
  std::vector<std::string> items;
  items.push_back("## " + ns.name + "\n");
  const bool has_tools = !ns.tools.empty();
  if (ns.description) {
    for (std::string_view line : lines(*ns.description)) {
      items.push_back(has_tools ? "// " + std::string(line) : std::string(line));
    }
  }
  if (has_tools) {
    items.push_back("namespace " + ns.name + " {\n");
    for (const ToolDescription& tool : ns.tools) {
      for (std::string_view line : lines(tool.description)) items.push_back("// " + std::string(line));
      if (tool.parameters) {
        items.push_back("type " + tool.name + " = (_: " + json_schema_to_typescript(*tool.parameters, "") +
                        ") => any;\n");
      } else {
        items.push_back("type " + tool.name + " = () => any;\n");
      }
    }
    items.push_back("} // namespace " + ns.name);
  }
  return join(items, "\n");
}

}  // namespace

// Accumulates ids and their text side by side.
class HarmonyRenderer::Output {
 public:
  explicit Output(const Tokenizer& tokenizer) : tokenizer_(tokenizer) {}

  void text(std::string_view segment) {
    if (segment.empty()) return;
    const std::vector<TokenId> ids = tokenizer_.encode_ordinary(segment);
    result_.tokens.insert(result_.tokens.end(), ids.begin(), ids.end());
    result_.text += segment;
  }
  void special(TokenId id, std::string_view marker) {
    result_.tokens.push_back(id);
    result_.text += marker;
  }
  RenderedConversation& result() { return result_; }

 private:
  const Tokenizer& tokenizer_;
  RenderedConversation result_;
};

HarmonyRenderer::HarmonyRenderer(std::shared_ptr<const Tokenizer> tokenizer) : tokenizer_(std::move(tokenizer)) {
  GOSSAMER_CHECK(tokenizer_ != nullptr, "HarmonyRenderer needs a tokenizer");
}

std::string HarmonyRenderer::tools_section_text(const ToolNamespaces& namespaces) {
  std::vector<std::string> sections = {"# Tools"};
  for (const auto& [key, ns] : namespaces) sections.push_back(namespace_section_text(ns));
  return join(sections, "\n\n");
}

std::string HarmonyRenderer::system_content_text(const SystemContent& content, bool has_function_tools) {
  std::vector<std::string> sections;
  std::vector<std::string> header;
  if (content.model_identity) header.push_back(*content.model_identity);
  if (content.knowledge_cutoff) header.push_back("Knowledge cutoff: " + *content.knowledge_cutoff);
  if (content.conversation_start_date) header.push_back("Current date: " + *content.conversation_start_date);
  sections.push_back(join(header, "\n"));
  if (content.reasoning_effort) {
    sections.push_back("Reasoning: " + std::string(reasoning_effort_name(*content.reasoning_effort)));
  }
  if (content.tools && !content.tools->empty()) sections.push_back(tools_section_text(*content.tools));
  if (content.channel_config && !content.channel_config->valid_channels.empty()) {
    std::string channels = "# Valid channels: " + join(content.channel_config->valid_channels, ", ") + ".";
    if (content.channel_config->channel_required) channels += " Channel must be included for every message.";
    if (has_function_tools) channels += "\n" + std::string(kFunctionsNote);
    sections.push_back(std::move(channels));
  }
  std::vector<std::string> non_empty;
  for (std::string& section : sections) {
    if (!section.empty()) non_empty.push_back(std::move(section));
  }
  return join(non_empty, "\n\n");
}

std::string HarmonyRenderer::developer_content_text(const DeveloperContent& content) {
  std::vector<std::string> sections;
  if (content.instructions) {
    sections.push_back("# Instructions");
    sections.push_back(*content.instructions);
  }
  if (content.tools && !content.tools->empty()) sections.push_back(tools_section_text(*content.tools));
  return join(sections, "\n\n");
}

bool HarmonyRenderer::has_function_tools(const Conversation& conversation) {
  for (const Message& message : conversation.messages) {
    for (const Content& item : message.content) {
      const auto* developer = std::get_if<DeveloperContent>(&item);
      if (developer == nullptr || !developer->tools) continue;
      const auto functions = developer->tools->find("functions");
      if (functions != developer->tools->end() && !functions->second.tools.empty()) return true;
    }
  }
  return false;
}

std::vector<size_t> HarmonyRenderer::kept_message_indices(const Conversation& conversation, bool auto_drop_analysis) {
  const auto& messages = conversation.messages;
  std::vector<size_t> kept;
  bool drop = false;
  size_t first_final = messages.size();
  if (auto_drop_analysis) {
    for (size_t i = messages.size(); i-- > 0;) {
      if (messages[i].author.role == Role::kAssistant) {
        drop = messages[i].channel == "final";
        break;
      }
    }
    for (size_t i = 0; drop && i < messages.size(); ++i) {
      if (messages[i].channel == "final") {
        first_final = i;
        break;
      }
    }
  }
  for (size_t i = 0; i < messages.size(); ++i) {
    if (drop && i < first_final && messages[i].channel == "analysis") continue;
    kept.push_back(i);
  }
  return kept;
}

void HarmonyRenderer::render_message_into(const Message& message, bool has_function_tools, Output& out) const {
  out.special(kStartToken, "<|start|>");
  if (message.author.role == Role::kTool) {
    GOSSAMER_CHECK(message.author.name.has_value(), "Tools should have a name! (a tool message has no author name)");
    out.text(*message.author.name);
  } else {
    std::string author(role_name(message.author.role));
    if (message.author.name) author += ":" + *message.author.name;
    out.text(author);
  }
  if (message.recipient && *message.recipient != "all") out.text(" to=" + *message.recipient);
  if (message.channel) {
    out.special(kChannelToken, "<|channel|>");
    out.text(*message.channel);
  }
  if (message.content_type) {
    const std::string& type = *message.content_type;
    if (type.starts_with(kConstrainMarker)) {
      out.text(" ");
      out.special(kConstrainToken, kConstrainMarker);
      out.text(std::string_view(type).substr(kConstrainMarker.size()));
    } else {
      out.text(" " + type);
    }
  }
  out.special(kMessageToken, "<|message|>");
  for (const Content& item : message.content) {
    if (const auto* text = std::get_if<TextContent>(&item)) {
      out.text(text->text);
    } else if (const auto* system = std::get_if<SystemContent>(&item)) {
      GOSSAMER_CHECK(message.author.role == Role::kSystem, "system content is only allowed in a system message, not ",
                     role_name(message.author.role));
      out.text(system_content_text(*system, has_function_tools));
    } else {
      GOSSAMER_CHECK(message.author.role == Role::kDeveloper,
                     "developer content is only allowed in a developer message, not ", role_name(message.author.role));
      out.text(developer_content_text(std::get<DeveloperContent>(item)));
    }
  }
  // NOTE: a recipient makes an assistant message a tool call, even the unrendered recipient "all".
  if (message.author.role == Role::kAssistant && message.recipient) {
    out.special(kCallToken, "<|call|>");
  } else {
    out.special(kEndToken, "<|end|>");
  }
}

RenderedConversation HarmonyRenderer::render_message(const Message& message, bool has_function_tools) const {
  Output out(*tokenizer_);
  render_message_into(message, has_function_tools, out);
  return std::move(out.result());
}

RenderedConversation HarmonyRenderer::render(const Conversation& conversation, const RenderOptions& options) const {
  const bool function_tools = has_function_tools(conversation);
  Output out(*tokenizer_);
  for (size_t index : kept_message_indices(conversation, options.auto_drop_analysis)) {
    render_message_into(conversation.messages[index], function_tools, out);
  }
  RenderedConversation& result = out.result();
  if (options.mode == RenderMode::kCompletion) {
    out.special(kStartToken, "<|start|>");
    out.text(role_name(options.next_role));
  } else if (options.mode == RenderMode::kTraining && !conversation.messages.empty()) {
    const Message& last = conversation.messages.back();
    constexpr std::string_view kEnd = "<|end|>";
    if (last.author.role == Role::kAssistant && last.channel == "final" && !result.tokens.empty() &&
        result.tokens.back() == kEndToken) {
      result.tokens.back() = kReturnToken;
      result.text.resize(result.text.size() - kEnd.size());
      result.text += "<|return|>";
    }
  }
  return std::move(result);
}

}  // namespace gossamer::text::harmony
