// Streaming Harmony parser: token ids → messages with role, channel, recipient and content type (openai-harmony's
// StreamableParser; tests/data/harmony_vectors).
//
// Contract:
//  - Feed ids one at a time with process(), then process_eos() at the end of the stream. Any id is accepted
//    (unknown ids included); malformed output throws gossamer::Error and never crashes. After an error the
//    parser is failed: every later call throws the same error again.
//  - Strict mode (the default) rejects malformed headers; lenient mode recovers from a missing <|message|>
//    in the first header (as openai-harmony does), repairs the broken headers gpt-oss emits (harmony_header_repair.h),
//    takes a `<|channel|>` where `<|start|>` was due as the start of an assistant message, and returns
//    what it can.
//  - Content is decoded incrementally and UTF-8 safely: a character split across ids is emitted once whole;
//    invalid bytes become U+FFFD. A finished message holds exactly one TextContent item.
//  - Getters return references valid until the next call that changes the parser.
//  - Not thread-safe; one parser per stream. The parser shares ownership of the (immutable) tokenizer.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "text/harmony_message.h"
#include "text/tokenizer.h"

namespace gossamer::text::harmony {

enum class ParserState : uint8_t {
  kExpectStart,  // between messages: waiting for <|start|>
  kHeader,       // inside a header: waiting for <|message|>
  kContent,      // inside content: waiting for <|end|>, <|call|>, <|return|> or the end of the stream
};

std::string_view parser_state_name(ParserState state);

// The fields a header carries; author.name is set only for tool messages whose role came from the header.
struct ParsedHeader {
  Author author;
  std::optional<std::string> recipient;
  std::optional<std::string> channel;
  std::optional<std::string> content_type;
};

// Parses decoded header text (everything between <|start|> and <|message|>) (openai-harmony's header grammar). Throws
// on bad headers.
ParsedHeader parse_harmony_header(std::string_view header, std::optional<Role> role_hint);

class HarmonyParser {
 public:
  // With a role hint (usually assistant) the stream starts inside the first header, i.e. right after the
  // prompt's `<|start|>assistant`. Without one every message must start with <|start|> and a role.
  HarmonyParser(std::shared_ptr<const Tokenizer> tokenizer, std::optional<Role> role_hint, bool strict = true);

  void process(TokenId token);
  // End of stream: finishes a message in progress; throws inside an unfinished header.
  void process_eos();

  ParserState state() const { return state_; }
  // The role of the message being read (in content), else the pending role hint.
  std::optional<Role> current_role() const;
  // Header fields of the message being read; nullopt outside content.
  const std::optional<std::string>& current_channel() const;
  const std::optional<std::string>& current_recipient() const;
  const std::optional<std::string>& current_content_type() const;
  // Text decoded so far for the message being read (empty outside content).
  const std::string& current_content() const { return content_; }
  // Text the last processed id added to the content; nullopt if it added none (e.g. half a character).
  const std::optional<std::string>& last_content_delta() const { return last_delta_; }
  const std::vector<Message>& messages() const { return messages_; }
  // Every id fed so far.
  const std::vector<TokenId>& tokens() const { return tokens_; }

 private:
  void process_unchecked(TokenId token);
  void end_header();
  void recover_header();
  void append_content(TokenId token);
  void finish_message();
  [[noreturn]] void fail(const std::string& message);

  std::shared_ptr<const Tokenizer> tokenizer_;
  bool strict_;
  std::optional<Role> role_hint_;
  ParserState state_;
  std::vector<TokenId> header_tokens_;
  std::optional<ParsedHeader> header_;
  std::string content_;
  std::vector<TokenId> undecoded_tokens_;
  std::string undecoded_bytes_;
  std::optional<std::string> last_delta_;
  std::vector<Message> messages_;
  std::vector<TokenId> tokens_;
  std::optional<std::string> failure_;
};

// Parses a whole completion: feeds every id, then the end of the stream (openai-harmony's
// parse_messages_from_completion_tokens).
std::vector<Message> parse_completion_tokens(std::shared_ptr<const Tokenizer> tokenizer,
                                             std::span<const TokenId> tokens, std::optional<Role> role_hint,
                                             bool strict = true);

}  // namespace gossamer::text::harmony
