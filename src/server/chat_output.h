// ChatOutputParser: turns the generated Harmony tokens of one chat completion into OpenAI deltas:
// reasoning (analysis channel), content (final channel and commentary preambles) and tool calls
// (messages addressed to a recipient such as functions.NAME), as docs/server-http.md describes.
//
// Malformed output never fails the request: the Harmony parser runs in lenient mode (it repairs the broken
// headers gpt-oss is known to emit, text/harmony_header_repair.h); when it still rejects the stream (or a
// header runs on without <|message|>), the text from there on is passed through as content. This is also what the
// random-weight embedded default model produces.
//
// Contract: one parser per request, fed from one thread. Every delta holds whole UTF-8 characters.
// Stop strings are matched on content only; once matched, stopped_by_string() is true and the caller
// must stop generation.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "server/stop_strings.h"
#include "text/harmony_parser.h"
#include "text/incremental_detokenizer.h"
#include "text/tokenizer.h"

namespace gossamer::server {

struct ToolCallDelta {
  int index = 0;
  std::optional<std::string> id;    // first delta of a call only
  std::optional<std::string> name;  // first delta of a call only
  std::string arguments;
};

struct ChatDelta {
  std::string reasoning;
  std::string content;
  std::vector<ToolCallDelta> tool_calls;
  bool empty() const { return reasoning.empty() && content.empty() && tool_calls.empty(); }
  void append(ChatDelta other);
};

struct ToolCall {
  std::string id;
  std::string name;
  std::string arguments;
};

class ChatOutputParser {
 public:
  ChatOutputParser(std::shared_ptr<const text::Tokenizer> tokenizer, std::vector<std::string> stop_strings);

  ChatDelta push(text::TokenId token);
  ChatDelta finish();

  bool stopped_by_string() const { return stop_.stopped(); }
  bool malformed() const { return raw_mode_; }
  const std::string& reasoning() const { return reasoning_; }
  const std::string& content() const { return content_; }
  const std::vector<ToolCall>& tool_calls() const { return tool_calls_; }
  int32_t num_reasoning_tokens() const { return num_reasoning_tokens_; }
  // True when the token last pushed was text of the returned content (final channel, a preamble, or
  // passed-through output): the tokens chat logprobs report.
  bool last_token_was_content() const { return last_was_content_; }

 private:
  enum class Kind { kNone, kReasoning, kContent, kFinal, kToolCall };
  void route(Kind kind, const std::string& text, ChatDelta& delta);
  void enter_raw_mode(ChatDelta& delta);
  void start_message(ChatDelta& delta);
  void end_message(ChatDelta& delta);

  std::shared_ptr<const text::Tokenizer> tokenizer_;
  text::harmony::HarmonyParser parser_;
  text::IncrementalDetokenizer raw_detokenizer_;
  StopStringMatcher stop_;
  bool raw_mode_ = false;
  Kind kind_ = Kind::kNone;
  std::vector<text::TokenId> header_tokens_;  // tokens since the current header began (for the raw fallback)
  int32_t num_tokens_ = 0;
  int32_t num_reasoning_tokens_ = 0;
  bool last_was_content_ = false;
  std::string reasoning_;
  std::string content_;
  std::vector<ToolCall> tool_calls_;
};

}  // namespace gossamer::server
