#include "text/harmony_message.h"

#include <array>
#include <cctype>

namespace gossamer::text::harmony {

namespace {

constexpr std::array<std::string_view, 5> kRoleNames = {"user", "assistant", "system", "developer", "tool"};
constexpr std::array<std::string_view, 3> kEffortNames = {"low", "medium", "high"};

// NOTE: the texts below are the built-in tool descriptions of openai-harmony, as its test vectors render them
// (tests/data/harmony_vectors/test_browser_and_python_tool.txt).
constexpr std::string_view kBrowserDescription =
    "Tool for browsing.\n"
    "The `cursor` appears in brackets before each browsing display: `[{cursor}]`.\n"
    "Cite information from the tool using the following format:\n"
    "`\u3010{cursor}\u2020L{line_start}(-L{line_end})?\u3011`, for example: `\u30106\u2020L9-L11\u3011` or "
    "`\u30108\u2020L3\u3011`.\n"
    "Do not quote more than 10 words directly from the tool output.\n"
    "sources=web (default: web)";

constexpr std::string_view kBrowserSearchDescription =
    "Searches for information related to `query` and displays `topn` results.";

constexpr std::string_view kBrowserOpenDescription =
    "Opens the link `id` from the page indicated by `cursor` starting at line number `loc`, showing `num_lines` "
    "lines.\n"
    "Valid link ids are displayed with the formatting: `\u3010{id}\u2020.*\u3011`.\n"
    "If `cursor` is not provided, the most recent page is implied.\n"
    "If `id` is a string, it is treated as a fully qualified URL associated with `source`.\n"
    "If `loc` is not provided, the viewport will be positioned at the beginning of the document or centered on "
    "the most relevant passage, if available.\n"
    "Use this function without `id` to scroll to a new location of an opened page.";

constexpr std::string_view kBrowserFindDescription =
    "Finds exact matches of `pattern` in the current page, or the page given by `cursor`.";

constexpr std::string_view kPythonDescription =
    "Use this tool to execute Python code in your chain of thought. The code will not be shown to the user. This "
    "tool should be used for internal reasoning, but not for code that is intended to be visible to the user (e.g. "
    "when creating plots, tables, or files).\n\n"
    "When you send a message containing Python code to python, it will be executed in a stateful Jupyter notebook "
    "environment. python will respond with the output of the execution or time out after 120.0 seconds. The drive "
    "at '/mnt/data' can be used to save and persist user files. Internet access for this session is UNKNOWN. "
    "Depends on the cluster.";

constexpr std::string_view kBrowserSearchSchema =
    R"({"type":"object","properties":{"query":{"type":"string"},"topn":{"type":"number","default":10},)"
    R"("source":{"type":"string"}},"required":["query"]})";

constexpr std::string_view kBrowserOpenSchema =
    R"({"type":"object","properties":{"id":{"type":["number","string"],"default":-1},)"
    R"("cursor":{"type":"number","default":-1},"loc":{"type":"number","default":-1},)"
    R"("num_lines":{"type":"number","default":-1},"view_source":{"type":"boolean","default":false},)"
    R"("source":{"type":"string"}}})";

constexpr std::string_view kBrowserFindSchema =
    R"({"type":"object","properties":{"pattern":{"type":"string"},"cursor":{"type":"number","default":-1}},)"
    R"("required":["pattern"]})";

}  // namespace

std::string_view role_name(Role role) {
  return kRoleNames[static_cast<size_t>(role)];
}

std::optional<Role> parse_role(std::string_view text) {
  for (size_t i = 0; i < kRoleNames.size(); ++i) {
    if (kRoleNames[i] == text) return static_cast<Role>(i);
  }
  return std::nullopt;
}

std::string_view reasoning_effort_name(ReasoningEffort effort) {
  return kEffortNames[static_cast<size_t>(effort)];
}

std::optional<ReasoningEffort> parse_reasoning_effort(std::string_view text) {
  std::string lower(text);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (size_t i = 0; i < kEffortNames.size(); ++i) {
    if (kEffortNames[i] == lower) return static_cast<ReasoningEffort>(i);
  }
  return std::nullopt;
}

ToolNamespace ToolNamespace::browser() {
  ToolNamespace ns;
  ns.name = "browser";
  ns.description = std::string(kBrowserDescription);
  ns.tools.push_back(
      {"search", std::string(kBrowserSearchDescription), nlohmann::ordered_json::parse(kBrowserSearchSchema)});
  ns.tools.push_back({"open", std::string(kBrowserOpenDescription), nlohmann::ordered_json::parse(kBrowserOpenSchema)});
  ns.tools.push_back({"find", std::string(kBrowserFindDescription), nlohmann::ordered_json::parse(kBrowserFindSchema)});
  return ns;
}

ToolNamespace ToolNamespace::python() {
  ToolNamespace ns;
  ns.name = "python";
  ns.description = std::string(kPythonDescription);
  return ns;
}

ChannelConfig ChannelConfig::default_channels() {
  return ChannelConfig{{"analysis", "commentary", "final"}, true};
}

Message Message::text(Role role, std::string text) {
  Message message;
  message.author.role = role;
  message.content.emplace_back(TextContent{std::move(text)});
  return message;
}

std::string Message::text_content() const {
  std::string out;
  for (const Content& item : content) {
    if (const auto* text = std::get_if<TextContent>(&item)) out += text->text;
  }
  return out;
}

}  // namespace gossamer::text::harmony
