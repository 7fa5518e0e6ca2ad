#include "text/harmony_parser.h"

#include <utility>

#include "core/error.h"
#include "text/harmony_header_repair.h"
#include "text/harmony_utf8.h"

namespace gossamer::text::harmony {

namespace {

const std::optional<std::string> kNoString;

bool is_ascii_whitespace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\x0C' || c == '\r';
}

// Rust str::split_ascii_whitespace.
std::vector<std::string> split_ascii_whitespace(std::string_view text) {
  std::vector<std::string> parts;
  size_t pos = 0;
  while (pos < text.size()) {
    while (pos < text.size() && is_ascii_whitespace(text[pos])) ++pos;
    const size_t begin = pos;
    while (pos < text.size() && !is_ascii_whitespace(text[pos])) ++pos;
    if (pos > begin) parts.emplace_back(text.substr(begin, pos - begin));
  }
  return parts;
}

// Rust str::split_whitespace (Unicode White_Space) on valid UTF-8.
std::vector<std::string> split_unicode_whitespace(std::string_view text) {
  std::vector<std::string> parts;
  std::string word;
  for (size_t pos = 0; pos < text.size();) {
    char32_t c = 0;
    const size_t width = decode_code_point(text, pos, c);
    if (is_unicode_whitespace(c)) {
      if (!word.empty()) parts.push_back(std::move(word));
      word.clear();
    } else {
      word.append(text.substr(pos, width));
    }
    pos += width;
  }
  if (!word.empty()) parts.push_back(std::move(word));
  return parts;
}

// Rust str::trim (Unicode White_Space) on valid UTF-8.
std::string_view trim_unicode(std::string_view text) {
  size_t begin = 0;
  while (begin < text.size()) {
    char32_t c = 0;
    const size_t width = decode_code_point(text, begin, c);
    if (!is_unicode_whitespace(c)) break;
    begin += width;
  }
  size_t end = begin;
  for (size_t pos = begin; pos < text.size();) {
    char32_t c = 0;
    const size_t width = decode_code_point(text, pos, c);
    pos += width;
    if (!is_unicode_whitespace(c)) end = pos;
  }
  return text.substr(begin, end - begin);
}

// Removes `<|channel|>VALUE` from `header` and returns VALUE; nullopt without a marker. An empty value is
// returned as "" (the caller decides whether that is an error).
std::optional<std::string> take_channel(std::string& header) {
  const size_t marker = header.find(kChannelMarker);
  if (marker == std::string::npos) return std::nullopt;
  const size_t begin = marker + kChannelMarker.size();
  size_t end = begin;
  while (end < header.size()) {
    char32_t c = 0;
    const size_t width = decode_code_point(header, end, c);
    if (c == U'<' || is_unicode_whitespace(c)) break;
    end += width;
  }
  std::string channel = header.substr(begin, end - begin);
  header.erase(marker, end - marker);
  return channel;
}

std::string strip_to(const std::string& part) {
  return part.starts_with("to=") ? part.substr(3) : part;
}

}  // namespace

std::string_view parser_state_name(ParserState state) {
  switch (state) {
    case ParserState::kExpectStart: return "ExpectStart";
    case ParserState::kHeader: return "Header";
    case ParserState::kContent: return "Content";
  }
  return "?";
}

ParsedHeader parse_harmony_header(std::string_view header_text, std::optional<Role> role_hint) {
  ParsedHeader parsed;
  std::string header(header_text);
  parsed.channel = take_channel(header);
  GOSSAMER_CHECK(!parsed.channel || !parsed.channel->empty(),
                 "channel marker present but no channel value found in header");
  header = std::string(trim_unicode(header));
  if (header.find(kConstrainMarker) != std::string::npos) {
    std::string spaced;
    for (size_t pos = 0; pos < header.size();) {
      if (header.compare(pos, kConstrainMarker.size(), kConstrainMarker) == 0) {
        spaced += ' ';
        spaced += kConstrainMarker;
        pos += kConstrainMarker.size();
      } else {
        spaced += header[pos++];
      }
    }
    header = std::string(trim_unicode(spaced));
  }
  std::vector<std::string> parts = split_ascii_whitespace(header);
  size_t next = 0;  // parts[next..] remain

  if (role_hint) {
    parsed.author.role = *role_hint;
  } else {
    GOSSAMER_CHECK(!parts.empty(), "Unknown role: (empty header)");
    if (const auto role = parse_role(parts[0])) {
      parsed.author.role = *role;
      if (*role == Role::kTool) parsed.author.name = parts[0];
    } else if (parts.size() >= 2 || parts[0].starts_with("to=")) {
      parsed.author.role = Role::kTool;
      parsed.author.name = parts[0];
      next = 1;
    } else {
      GOSSAMER_THROW("Unknown role: ", parts[0]);
    }
  }
  if (next < parts.size() && parts[next] == role_name(parsed.author.role)) ++next;

  if (next < parts.size()) {
    const size_t remaining = parts.size() - next;
    std::string last = std::move(parts.back());
    parts.pop_back();
    if (last.starts_with("to=")) {
      parsed.recipient = last.substr(3);
    } else if (remaining == 1) {
      parsed.recipient = std::move(last);
    } else {
      parsed.content_type = std::move(last);
      if (next < parts.size()) {
        parsed.recipient = strip_to(parts.back());
        parts.pop_back();
      }
    }
  }
  if (next < parts.size()) {
    std::string rest;
    for (size_t i = next; i < parts.size(); ++i) rest += (i > next ? " " : "") + parts[i];
    GOSSAMER_THROW("unexpected tokens remaining in message header: ", rest);
  }
  return parsed;
}

HarmonyParser::HarmonyParser(std::shared_ptr<const Tokenizer> tokenizer, std::optional<Role> role_hint, bool strict)
    : tokenizer_(std::move(tokenizer)),
      strict_(strict),
      role_hint_(role_hint),
      state_(role_hint ? ParserState::kHeader : ParserState::kExpectStart) {
  GOSSAMER_CHECK(tokenizer_ != nullptr, "HarmonyParser needs a tokenizer");
}

void HarmonyParser::fail(const std::string& message) {
  failure_ = message;
  throw Error(message);
}

void HarmonyParser::process(TokenId token) {
  if (failure_) throw Error("harmony parser already failed: " + *failure_);
  tokens_.push_back(token);
  try {
    process_unchecked(token);
  } catch (const Error& error) {
    if (!failure_) fail(error.what());
    throw;
  }
}

void HarmonyParser::process_unchecked(TokenId token) {
  switch (state_) {
    case ParserState::kExpectStart:
      if (!strict_ && token == kChannelToken) {
        // NOTE: lenient: `<|channel|>` without `<|start|>assistant` opens an assistant message.
        header_tokens_.assign(1, token);
        role_hint_ = Role::kAssistant;
        state_ = ParserState::kHeader;
        return;
      }
      if (token != kStartToken) {
        fail("Unexpected token " + std::to_string(token) + " while expecting start token " +
             std::to_string(kStartToken));
      }
      header_tokens_.clear();
      state_ = ParserState::kHeader;
      return;
    case ParserState::kHeader:
      if (token == kMessageToken) {
        end_header();
      } else if (!strict_ && is_message_stop_token(token)) {
        recover_header();
      } else {
        header_tokens_.push_back(token);
      }
      return;
    case ParserState::kContent:
      if (is_message_stop_token(token)) {
        finish_message();
      } else {
        append_content(token);
      }
      return;
  }
}

void HarmonyParser::process_eos() {
  if (failure_) throw Error("harmony parser already failed: " + *failure_);
  switch (state_) {
    case ParserState::kExpectStart: return;
    case ParserState::kHeader: fail("Unexpected EOS while waiting for message header to complete");
    case ParserState::kContent: finish_message(); return;
  }
}

void HarmonyParser::end_header() {
  std::string bytes;
  try {
    bytes = tokenizer_->decode_bytes(header_tokens_);
  } catch (const std::exception& error) {
    fail(std::string("could not decode header: ") + error.what());
  }
  if (!check_utf8(bytes).ok) fail("could not decode header: it is not valid UTF-8");
  if (strict_) {
    header_ = parse_harmony_header(bytes, role_hint_);
  } else {
    // NOTE: lenient mode repairs what gpt-oss is known to break (text/harmony_header_repair.h).
    try {
      header_ = parse_harmony_header(bytes, role_hint_);
      if (header_needs_repair(*header_)) header_ = repair_harmony_header(bytes, role_hint_);
    } catch (const Error&) {
      header_ = repair_harmony_header(bytes, role_hint_);
    }
  }
  role_hint_.reset();
  header_tokens_.clear();
  content_.clear();
  last_delta_.reset();
  state_ = ParserState::kContent;
}

void HarmonyParser::recover_header() {
  // NOTE: lenient mode only. A stop token inside the first header means <|message|> was left out: the
  // header words are the content. Later broken headers (no role hint) are dropped, as in the reference.
  if (role_hint_ && !header_tokens_.empty()) {
    std::string bytes;
    try {
      bytes = tokenizer_->decode_bytes(header_tokens_);
    } catch (const std::exception&) {
      bytes = std::string(kReplacementCharacter);
    }
    std::string text = utf8_lossy(bytes);
    std::optional<std::string> channel = take_channel(text);
    if (channel && channel->empty()) channel.reset();
    std::vector<std::string> words = split_unicode_whitespace(text);
    size_t first = 0;
    if (!words.empty() && words[0] == role_name(*role_hint_)) first = 1;
    std::string joined;
    for (size_t i = first; i < words.size(); ++i) joined += (i > first ? " " : "") + words[i];
    Message message;
    message.author.role = *role_hint_;
    message.channel = std::move(channel);
    message.content.emplace_back(TextContent{std::move(joined)});
    messages_.push_back(std::move(message));
  }
  role_hint_.reset();
  header_tokens_.clear();
  state_ = ParserState::kExpectStart;
}

void HarmonyParser::append_content(TokenId token) {
  last_delta_.reset();
  undecoded_tokens_.push_back(token);
  std::string bytes;
  try {
    for (TokenId id : undecoded_tokens_) {
      bytes.append(tokenizer_->token_bytes(id));
    }
  } catch (const std::exception&) {
    return;  // an unknown id stays pending (as openai-harmony's parser keeps it)
  }
  undecoded_tokens_.clear();
  undecoded_bytes_ += bytes;
  const Utf8Check check = check_utf8(undecoded_bytes_);
  std::string delta;
  if (check.ok) {
    delta = std::move(undecoded_bytes_);
    undecoded_bytes_.clear();
  } else {
    delta = undecoded_bytes_.substr(0, check.valid_up_to);
    size_t consumed = check.valid_up_to;
    // NOTE: one invalid sequence per id, as in the reference; bytes after it wait for the next id.
    if (check.error_len) {
      delta += kReplacementCharacter;
      consumed += *check.error_len;
    }
    undecoded_bytes_.erase(0, consumed);
  }
  if (!delta.empty()) {
    content_ += delta;
    last_delta_ = std::move(delta);
  }
}

void HarmonyParser::finish_message() {
  std::string text = std::move(content_);
  if (!undecoded_tokens_.empty()) {
    try {
      text += utf8_lossy(tokenizer_->decode_bytes(undecoded_tokens_));
    } catch (const std::exception&) {
      text += kReplacementCharacter;
    }
  }
  text += utf8_lossy(undecoded_bytes_);
  Message message;
  message.author = header_->author;
  message.recipient = header_->recipient;
  message.channel = header_->channel;
  message.content_type = header_->content_type;
  message.content.emplace_back(TextContent{std::move(text)});
  messages_.push_back(std::move(message));
  header_.reset();
  content_.clear();
  undecoded_tokens_.clear();
  undecoded_bytes_.clear();
  last_delta_.reset();
  state_ = ParserState::kExpectStart;
}

std::optional<Role> HarmonyParser::current_role() const {
  if (state_ == ParserState::kContent && header_) return header_->author.role;
  return role_hint_;
}

const std::optional<std::string>& HarmonyParser::current_channel() const {
  return state_ == ParserState::kContent && header_ ? header_->channel : kNoString;
}

const std::optional<std::string>& HarmonyParser::current_recipient() const {
  return state_ == ParserState::kContent && header_ ? header_->recipient : kNoString;
}

const std::optional<std::string>& HarmonyParser::current_content_type() const {
  return state_ == ParserState::kContent && header_ ? header_->content_type : kNoString;
}

std::vector<Message> parse_completion_tokens(std::shared_ptr<const Tokenizer> tokenizer,
                                             std::span<const TokenId> tokens, std::optional<Role> role_hint,
                                             bool strict) {
  HarmonyParser parser(std::move(tokenizer), role_hint, strict);
  for (TokenId token : tokens) parser.process(token);
  parser.process_eos();
  return parser.messages();
}

}  // namespace gossamer::text::harmony
