// Bounded, deterministic fuzzing of the Harmony parser (and a render → parse property test).
// The parser must return messages or throw gossamer::Error on any id stream, never crash or throw anything else.
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <climits>
#include <iterator>
#include <random>

#include "harmony_test_util.h"
#include "text/harmony_parser.h"
#include "text/harmony_renderer.h"
#include "text/harmony_utf8.h"

namespace gossamer::text::harmony {
namespace {

using namespace test_support;

class StreamGenerator {
 public:
  StreamGenerator(std::shared_ptr<const Tokenizer> tokenizer, uint64_t seed)
      : tokenizer_(std::move(tokenizer)), rng_(seed) {
    for (const char* piece :
         {"assistant", "user",       "tool",       "functions.f", " to=",        "to=browser.search",
          "analysis",  "final",      "commentary", " code",       "json",        " ",
          "\n",        "{\"a\": 1}", "\u00e9",     "\U0001F496",  "<|channel|>", "<|constrain|>",
          "<|",        "|>",         "to=",        "=",           "a b c"}) {
      for (TokenId id : tokenizer_->encode_ordinary(piece)) pieces_.push_back(id);
    }
  }

  std::vector<TokenId> next() {
    switch (pick(4)) {
      case 0: return random_ids(pick(64));
      case 1: return mutated_messages();
      case 2: return huge_header();
      default: return utf8_splits();
    }
  }

 private:
  size_t pick(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }

  TokenId random_id() {
    switch (pick(8)) {
      case 0: return static_cast<TokenId>(200000 + pick(14));     // format specials
      case 1: return static_cast<TokenId>(pick(kVocabSize + 2));  // anything, a bit past the end
      case 2: return std::array<TokenId, 5>{-1, INT_MIN, INT_MAX, 201088, 201089}[pick(5)];  // invalid
      case 3: return static_cast<TokenId>(pick(256));                    // single bytes (lone UTF-8)
      case 4: return std::array<TokenId, 3>{9552, 31446, 244}[pick(3)];  // partial characters
      default: return pieces_[pick(pieces_.size())];
    }
  }

  std::vector<TokenId> random_ids(size_t n) {
    std::vector<TokenId> ids;
    for (size_t i = 0; i < n; ++i) ids.push_back(random_id());
    return ids;
  }

  std::vector<TokenId> append(std::vector<TokenId> ids, const std::string& text) {
    for (TokenId id : tokenizer_->encode(text, {}, true)) ids.push_back(id);
    return ids;
  }

  // Well-formed messages, then truncation, deletion, insertion or duplication.
  std::vector<TokenId> mutated_messages() {
    static const char* kMessages[] = {
        "<|start|>assistant<|channel|>analysis<|message|>think<|end|>",
        "<|start|>assistant to=functions.f<|channel|>commentary <|constrain|>json<|message|>{\"x\": 1}<|call|>",
        "<|start|>assistant<|channel|>commentary to=browser.search code<|message|>{}<|call|>",
        "<|start|>browser.search to=assistant<|channel|>commentary<|message|>result<|end|>",
        "<|start|>assistant<|channel|>final<|message|>done<|return|>",
        "<|channel|>final<|message|>hint start<|end|>",
        "no message token<|end|>",
    };
    std::vector<TokenId> ids;
    for (size_t n = 1 + pick(4); n > 0; --n) ids = append(std::move(ids), kMessages[pick(std::size(kMessages))]);
    for (size_t n = pick(4); n > 0 && !ids.empty(); --n) {
      switch (pick(4)) {
        case 0: ids.resize(pick(ids.size() + 1)); break;
        case 1: ids.erase(ids.begin() + static_cast<std::ptrdiff_t>(pick(ids.size()))); break;
        case 2: ids.insert(ids.begin() + static_cast<std::ptrdiff_t>(pick(ids.size() + 1)), random_id()); break;
        default: ids.insert(ids.end(), ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(pick(ids.size())));
      }
    }
    return ids;
  }

  std::vector<TokenId> huge_header() {
    std::vector<TokenId> ids = {kStartToken};
    const size_t n = 2000 + pick(20000);
    for (size_t i = 0; i < n; ++i) ids.push_back(pick(3) == 0 ? random_id() : pieces_[pick(pieces_.size())]);
    if (pick(2) == 0) ids.push_back(kMessageToken);
    return append(std::move(ids), "content<|end|>");
  }

  // Content made of ids whose bytes split characters, broken sequences and invalid ids.
  std::vector<TokenId> utf8_splits() {
    std::vector<TokenId> ids = tokenizer_->encode("<|start|>assistant<|channel|>final<|message|>", {}, true);
    for (size_t n = pick(200); n > 0; --n) {
      ids.push_back(pick(3) == 0 ? std::array<TokenId, 3>{9552, 31446, 244}[pick(3)]
                                 : static_cast<TokenId>(pick(3) == 0 ? pick(256) : pick(kNumOrdinaryTokens)));
    }
    if (pick(2) == 0) ids.push_back(kEndToken);
    return ids;
  }

  std::shared_ptr<const Tokenizer> tokenizer_;
  std::mt19937_64 rng_;
  std::vector<TokenId> pieces_;
};

// Runs one stream; returns true when it parsed, false on a clean gossamer::Error.
bool run_stream(const std::shared_ptr<const Tokenizer>& tokenizer, const std::vector<TokenId>& ids,
                std::optional<Role> hint, bool strict) {
  HarmonyParser parser(tokenizer, hint, strict);
  try {
    for (TokenId id : ids) {
      parser.process(id);
      // The getters a server calls after every id must always be usable.
      (void)parser.current_role();
      (void)parser.current_channel();
      (void)parser.current_recipient();
      if (parser.last_content_delta()) {
        EXPECT_TRUE(check_utf8(*parser.last_content_delta()).ok);
      }
    }
    parser.process_eos();
  } catch (const Error&) {
    EXPECT_THROW(parser.process(kStartToken), Error);  // failed parsers stay failed
    return false;
  }
  EXPECT_EQ(parser.tokens(), ids);
  for (const Message& message : parser.messages()) {
    EXPECT_EQ(message.content.size(), 1u);
    EXPECT_TRUE(check_utf8(message.text_content()).ok);
  }
  return true;
}

TEST(HarmonyFuzz, ParserNeverCrashes) {
  const auto tokenizer = any_tokenizer();
  StreamGenerator generator(tokenizer, 20250805);
  const auto start = std::chrono::steady_clock::now();
  size_t parsed = 0, rejected = 0;
  for (int i = 0; i < 5000; ++i) {
    const std::vector<TokenId> ids = generator.next();
    for (std::optional<Role> hint : {std::optional<Role>(), std::optional<Role>(Role::kAssistant)}) {
      for (bool strict : {true, false}) {
        SCOPED_TRACE("stream " + std::to_string(i));
        if (run_stream(tokenizer, ids, hint, strict)) {
          ++parsed;
        } else {
          ++rejected;
        }
      }
    }
    if (std::chrono::steady_clock::now() - start > std::chrono::seconds(20)) break;  // a bound for slow machines
  }
  EXPECT_GT(parsed, 100u);
  EXPECT_GT(rejected, 100u);
}

TEST(HarmonyFuzz, HeaderGrammarNeverCrashes) {
  std::mt19937_64 rng(7);
  const std::vector<std::string> atoms = {"assistant",     "tool",     "x.y", "to=",    "to=a",   "<|channel|>",
                                          "<|constrain|>", " ",        "\t",  "\u3000", "\u00a0", "<",
                                          "json",          "\xF0\x9F", "",    "user"};
  for (int i = 0; i < 20000; ++i) {
    std::string header;
    for (size_t n = rng() % 8; n > 0; --n) header += atoms[rng() % atoms.size()];
    if (!check_utf8(header).ok) continue;  // the parser rejects invalid UTF-8 before the grammar
    try {
      parse_harmony_header(header, rng() % 2 ? std::optional<Role>(Role::kAssistant) : std::nullopt);
    } catch (const Error&) {
    }
  }
}

// Random conversations the parser can read back (no tool message without recipient) round-trip exactly.
TEST(HarmonyFuzz, RenderParseRoundTrip) {
  const auto tokenizer = any_tokenizer();
  const HarmonyRenderer renderer(tokenizer);
  std::mt19937_64 rng(11);
  const std::vector<std::string> texts = {
      "hi",          "",          "2 + 2 = 4", "{\"a\": [1, 2]}", "<|end|> is text here", "caf\u00e9 \U0001F496",
      "line\nbreak", "  spaces  "};
  for (int i = 0; i < 300; ++i) {
    Conversation c;
    for (size_t n = 1 + rng() % 6; n > 0; --n) {
      Message m = Message::text(Role::kUser, texts[rng() % texts.size()]);
      switch (rng() % 4) {
        case 0: break;
        case 1:
          m.author.role = Role::kAssistant;
          m.channel = std::array<const char*, 3>{"analysis", "commentary", "final"}[rng() % 3];
          if (rng() % 2) m.recipient = "functions.get_weather";
          if (m.recipient && rng() % 2) m.content_type = rng() % 2 ? "<|constrain|>json" : "json";
          break;
        case 2:
          m.author = Author{Role::kTool, "functions.get_weather"};
          m.recipient = "assistant";
          m.channel = "commentary";
          break;
        default: m.author.role = Role::kDeveloper;
      }
      c.messages.push_back(std::move(m));
    }
    const auto rendered = renderer.render(c, {RenderMode::kConversation, Role::kAssistant, false});
    EXPECT_EQ(tokenizer->decode_bytes(rendered.tokens), rendered.text);
    EXPECT_EQ(parse_completion_tokens(tokenizer, rendered.tokens, std::nullopt), c.messages) << rendered.text;
  }
}

}  // namespace
}  // namespace gossamer::text::harmony
