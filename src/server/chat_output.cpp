#include "server/chat_output.h"

#include <random>

#include "core/error.h"

namespace gossamer::server {

namespace harmony = text::harmony;

namespace {

// A real header is a handful of tokens (`<|channel|>commentary to=functions.x <|constrain|>json`).
constexpr size_t kMaxHeaderTokens = 64;

std::string random_call_id() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  static const char* hex = "0123456789abcdef";
  std::string id = "call_";
  for (int i = 0; i < 24; ++i) id += hex[rng() % 16];
  return id;
}

}  // namespace

void ChatDelta::append(ChatDelta other) {
  reasoning += other.reasoning;
  content += other.content;
  for (auto& call : other.tool_calls) {
    if (!tool_calls.empty() && tool_calls.back().index == call.index && !call.id) {
      tool_calls.back().arguments += call.arguments;
    } else {
      tool_calls.push_back(std::move(call));
    }
  }
}

ChatOutputParser::ChatOutputParser(std::shared_ptr<const text::Tokenizer> tokenizer,
                                   std::vector<std::string> stop_strings)
    : tokenizer_(tokenizer),
      parser_(tokenizer, harmony::Role::kAssistant, /*strict=*/false),
      raw_detokenizer_(*tokenizer_),
      stop_(std::move(stop_strings)) {}

void ChatOutputParser::route(Kind kind, const std::string& text, ChatDelta& delta) {
  if (text.empty()) return;
  switch (kind) {
    case Kind::kReasoning:
      reasoning_ += text;
      delta.reasoning += text;
      return;
    case Kind::kToolCall:
      tool_calls_.back().arguments += text;
      delta.tool_calls.push_back({static_cast<int>(tool_calls_.size()) - 1, std::nullopt, std::nullopt, text});
      return;
    case Kind::kFinal: {
      const std::string safe = stop_.push(text);
      content_ += safe;
      delta.content += safe;
      return;
    }
    case Kind::kContent:
    case Kind::kNone:
      content_ += text;
      delta.content += text;
      return;
  }
}

void ChatOutputParser::enter_raw_mode(ChatDelta& delta) {
  raw_mode_ = true;
  end_message(delta);
  kind_ = Kind::kFinal;
  std::string text;
  for (const text::TokenId token : header_tokens_) {
    if (!tokenizer_->is_special(token)) text += raw_detokenizer_.push(token);
  }
  header_tokens_.clear();
  route(Kind::kFinal, text, delta);
}

void ChatOutputParser::start_message(ChatDelta& delta) {
  const auto& recipient = parser_.current_recipient();
  const auto& channel = parser_.current_channel();
  header_tokens_.clear();
  if (recipient && *recipient != "assistant" && !recipient->empty()) {
    std::string name = *recipient;
    if (name.rfind("functions.", 0) == 0) name = name.substr(10);
    tool_calls_.push_back({random_call_id(), name, ""});
    delta.tool_calls.push_back({static_cast<int>(tool_calls_.size()) - 1, tool_calls_.back().id, name, ""});
    kind_ = Kind::kToolCall;
  } else if (channel && *channel == "analysis") {
    kind_ = Kind::kReasoning;
  } else if (channel && *channel == "final") {
    kind_ = Kind::kFinal;
  } else {
    kind_ = Kind::kContent;
  }
}

void ChatOutputParser::end_message(ChatDelta& delta) {
  if (kind_ == Kind::kFinal) {
    const std::string held = stop_.flush();
    content_ += held;
    delta.content += held;
  }
  kind_ = Kind::kNone;
}

ChatDelta ChatOutputParser::push(text::TokenId token) {
  ChatDelta delta;
  ++num_tokens_;
  last_was_content_ = false;
  if (stop_.stopped()) return delta;
  if (raw_mode_) {
    if (!tokenizer_->is_special(token)) {
      route(Kind::kFinal, raw_detokenizer_.push(token), delta);
      last_was_content_ = true;
    }
    return delta;
  }
  const harmony::ParserState before = parser_.state();
  if (before == harmony::ParserState::kContent && kind_ == Kind::kReasoning) ++num_reasoning_tokens_;
  // NOTE: with the assistant role hint the stream starts inside a header, which must open with
  // <|channel|> or " to=...". Anything else is not Harmony: pass it through as text at once.
  if (num_tokens_ == 1 && before == harmony::ParserState::kHeader && token != harmony::kChannelToken) {
    bool recipient_first = false;
    try {
      recipient_first = tokenizer_->token_bytes(token).rfind(" to", 0) == 0;
    } catch (const Error&) {
    }
    if (!recipient_first) {
      header_tokens_.push_back(token);
      enter_raw_mode(delta);
      return delta;
    }
  }
  if (before != harmony::ParserState::kContent) header_tokens_.push_back(token);
  try {
    parser_.process(token);
  } catch (const Error&) {
    enter_raw_mode(delta);
    return delta;
  }
  const harmony::ParserState after = parser_.state();
  if (before != harmony::ParserState::kContent && after == harmony::ParserState::kContent) {
    start_message(delta);
  } else if (before == harmony::ParserState::kContent && after == harmony::ParserState::kContent) {
    last_was_content_ = kind_ == Kind::kFinal || kind_ == Kind::kContent;
    if (const auto& text = parser_.last_content_delta()) route(kind_, *text, delta);
  } else if (before == harmony::ParserState::kContent) {
    end_message(delta);
  } else if (before == harmony::ParserState::kHeader && after == harmony::ParserState::kExpectStart) {
    // A stop token inside the first header (no <|message|>): the lenient parser made its words a message.
    header_tokens_.clear();
    const auto& messages = parser_.messages();
    if (!messages.empty() && !messages.back().content.empty()) {
      const auto* text = std::get_if<harmony::TextContent>(&messages.back().content.front());
      if (text != nullptr)
        route(messages.back().channel == "analysis" ? Kind::kReasoning : Kind::kContent, text->text, delta);
    }
  }
  if (after == harmony::ParserState::kHeader && header_tokens_.size() > kMaxHeaderTokens) enter_raw_mode(delta);
  return delta;
}

ChatDelta ChatOutputParser::finish() {
  ChatDelta delta;
  if (stop_.stopped()) return delta;
  if (raw_mode_) {
    route(Kind::kFinal, raw_detokenizer_.flush(), delta);
  } else if (parser_.state() == harmony::ParserState::kHeader && !header_tokens_.empty()) {
    // Cut off (max tokens) inside a header: the stream was Harmony (push() sends anything else to the raw
    // path at its first token, and over-long headers too), so these tokens are the start of a message
    // that never began (e.g. `<|start|>assistant<|channel|>final`): structure, not content. Drop them.
    header_tokens_.clear();
  } else if (parser_.state() == harmony::ParserState::kContent) {
    // NOTE: content cut off (max tokens): what the parser decoded is already out; flush the held text.
    end_message(delta);
    return delta;
  }
  const std::string held = stop_.flush();
  content_ += held;
  delta.content += held;
  return delta;
}

}  // namespace gossamer::server
