// Shared helpers of the Harmony tests: the tokenizer they run on, vector files, small builders.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "core/error.h"
#include "text/harmony_message.h"
#include "text/tokenizer.h"

namespace gossamer::text::harmony::test_support {

// A stand-in tokenizer: one id per byte (id = byte value) plus the real special-token ids. Structure tests
// that compare text run on it; tests that compare ids need the real o200k_harmony tokenizer.
class ByteTokenizer final : public Tokenizer {
 public:
  std::vector<TokenId> encode_ordinary(std::string_view text) const override {
    return std::vector<TokenId>(reinterpret_cast<const unsigned char*>(text.data()),
                                reinterpret_cast<const unsigned char*>(text.data()) + text.size());
  }
  std::vector<TokenId> encode(std::string_view text, const std::unordered_set<std::string>& allowed,
                              bool allow_all) const override {
    std::vector<TokenId> out;
    size_t pos = 0;
    while (pos < text.size()) {
      bool matched = false;
      if (text[pos] == '<') {
        const size_t close = text.find("|>", pos);
        if (close != std::string_view::npos) {
          const std::string_view candidate = text.substr(pos, close + 2 - pos);
          const auto id = special_token_id(candidate);
          if (id && (allow_all || allowed.contains(std::string(candidate)))) {
            out.push_back(*id);
            pos += candidate.size();
            matched = true;
          }
        }
      }
      if (!matched) out.push_back(static_cast<unsigned char>(text[pos++]));
    }
    return out;
  }
  std::string decode_bytes(std::span<const TokenId> ids) const override {
    std::string out;
    for (TokenId id : ids) out += token_bytes(id);
    return out;
  }
  std::string_view token_bytes(TokenId id) const override {
    if (id >= 0 && id < 256) return std::string_view(&bytes_[id], 1);
    if (id >= kNumOrdinaryTokens && id < kVocabSize) return specials_[id - kNumOrdinaryTokens];
    GOSSAMER_THROW("Invalid token for decoding: ", id);
  }
  std::optional<TokenId> special_token_id(std::string_view text) const override {
    for (size_t i = 0; i < specials_.size(); ++i) {
      if (specials_[i] == text) return static_cast<TokenId>(kNumOrdinaryTokens + i);
    }
    return std::nullopt;
  }
  bool is_special(TokenId id) const override { return id >= kNumOrdinaryTokens && id < kVocabSize; }
  TokenId vocab_size() const override { return kVocabSize; }

  ByteTokenizer() {
    for (int i = 0; i < 256; ++i) bytes_[i] = static_cast<char>(i);
    const char* named[] = {
        "<|startoftext|>", "<|endoftext|>",       "<|reserved_200000|>", "<|reserved_200001|>", "<|return|>",
        "<|constrain|>",   "<|reserved_200004|>", "<|channel|>",         "<|start|>",           "<|end|>",
        "<|message|>",     "<|reserved_200009|>", "<|reserved_200010|>", "<|reserved_200011|>", "<|call|>"};
    for (const char* name : named) specials_.emplace_back(name);
    for (TokenId id = 200013; id < kVocabSize; ++id) specials_.push_back("<|reserved_" + std::to_string(id) + "|>");
  }

 private:
  char bytes_[256];
  std::vector<std::string> specials_;
};

inline std::shared_ptr<const Tokenizer> byte_tokenizer() {
  static const auto tokenizer = std::make_shared<const ByteTokenizer>();
  return tokenizer;
}

// The real o200k_harmony tokenizer, or nullptr while it is not available in this build.
std::shared_ptr<const Tokenizer> real_tokenizer();
// True under CI (CI=true), where scripts/setup.sh has installed the npm tokenizer data.
bool running_under_ci();

// For tests that need the real tokenizer: without its npm data they skip on a developer's machine, and
// fail under CI, where a missing fixture means a broken set-up (a skip would pass it).
#define GOSSAMER_REQUIRE_REAL_TOKENIZER(tokenizer)                                                         \
  do {                                                                                                     \
    if ((tokenizer) == nullptr) {                                                                          \
      if (::gossamer::text::harmony::test_support::running_under_ci()) {                                   \
        FAIL() << "the real o200k_harmony tokenizer (npm data) is missing under CI: run scripts/setup.sh"; \
      }                                                                                                    \
      GTEST_SKIP() << "needs the real o200k_harmony tokenizer (npm data: scripts/setup.sh)";               \
    }                                                                                                      \
  } while (0)

// The real tokenizer when available, else the byte stand-in.
inline std::shared_ptr<const Tokenizer> any_tokenizer() {
  auto real = real_tokenizer();
  return real ? real : byte_tokenizer();
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

inline std::string vector_path(const std::string& name) {
  return std::string(GOSSAMER_TEST_DATA_DIR) + "/harmony_vectors/" + name;
}

// As the upstream tests read vectors: CRLF → LF, trailing whitespace stripped.
inline std::string read_vector(const std::string& name) {
  std::string text = read_file(vector_path(name));
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\r' && i + 1 < text.size() && text[i + 1] == '\n') continue;
    out += text[i];
  }
  while (!out.empty() && (out.back() == ' ' || out.back() == '\n' || out.back() == '\t' || out.back() == '\r')) {
    out.pop_back();
  }
  return out;
}

inline Message make_message(Role role, std::string text, std::optional<std::string> channel = std::nullopt,
                            std::optional<std::string> recipient = std::nullopt,
                            std::optional<std::string> content_type = std::nullopt) {
  Message message = Message::text(role, std::move(text));
  message.channel = std::move(channel);
  message.recipient = std::move(recipient);
  message.content_type = std::move(content_type);
  return message;
}

inline Message system_message(SystemContent content) {
  Message message;
  message.author.role = Role::kSystem;
  message.content.emplace_back(std::move(content));
  return message;
}

inline Message developer_message(DeveloperContent content) {
  Message message;
  message.author.role = Role::kDeveloper;
  message.content.emplace_back(std::move(content));
  return message;
}

inline Message tool_message(std::string name, std::string text) {
  Message message = Message::text(Role::kTool, std::move(text));
  message.author.name = std::move(name);
  return message;
}

}  // namespace gossamer::text::harmony::test_support
