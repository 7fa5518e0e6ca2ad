#include "text/tokenizer.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <thread>
#include <unordered_map>

#include "core/error.h"
#include "text/bpe.h"
#include "text/tokenizer_encode.h"
#include "text/tokenizer_ranks.h"
#include "text/tokenizer_specials.h"
#include "text/utf8.h"

namespace gossamer::text {

std::string special_token_string(TokenId id) {
  switch (id) {
    case 199998: return "<|startoftext|>";
    case 199999: return "<|endoftext|>";
    case 200002: return "<|return|>";
    case 200003: return "<|constrain|>";
    case 200005: return "<|channel|>";
    case 200006: return "<|start|>";
    case 200007: return "<|end|>";
    case 200008: return "<|message|>";
    case 200012: return "<|call|>";
    default: return "<|reserved_" + std::to_string(id) + "|>";
  }
}

namespace {

// Longest special-token string: "<|reserved_200000|>" (19 bytes).
constexpr size_t kMaxSpecialLength = 32;

class O200kHarmonyTokenizer final : public Tokenizer {
 public:
  explicit O200kHarmonyTokenizer(RankData data) : ranks_(std::move(data.arena), std::move(data.offsets)) {
    GOSSAMER_CHECK(ranks_.num_ranks() == static_cast<Rank>(kNumOrdinaryTokens), "tokenizer data has ",
                   ranks_.num_ranks(), " ranks, expected ", kNumOrdinaryTokens);
    special_strings_.reserve(kVocabSize - kFirstSpecialToken);
    for (TokenId id = kFirstSpecialToken; id < kVocabSize; ++id) {
      special_strings_.push_back(special_token_string(id));
      special_ids_.emplace(special_strings_.back(), id);
    }
    special_ids_.emplace(std::string(kEndOfPromptString), kEndOfPromptId);
  }

  std::vector<TokenId> encode_ordinary(std::string_view text) const override {
    check_utf8(text);
    std::vector<TokenId> out;
    out.reserve(text.size() / 4 + 4);
    encode_ordinary_valid(text, out);
    return out;
  }

  std::vector<TokenId> encode_ordinary_parallel(std::string_view text, unsigned max_threads) const override {
    check_utf8(text);
    if (max_threads == 0) max_threads = std::clamp(std::thread::hardware_concurrency(), 1u, 8u);
    return text::encode_ordinary_parallel(ranks_, text, max_threads);
  }

  std::vector<TokenId> encode(std::string_view text, const std::unordered_set<std::string>& allowed_special,
                              bool allow_all_special) const override {
    check_utf8(text);
    std::vector<TokenId> out;
    out.reserve(text.size() / 4 + 4);
    if (!allow_all_special && allowed_special.empty()) {
      encode_ordinary_valid(text, out);
      return out;
    }
    size_t start = 0;  // start of the text not yet encoded
    size_t search = 0;
    while (true) {
      const size_t open = text.find("<|", search);
      if (open == std::string_view::npos) break;
      const size_t close = text.find("|>", open + 2);
      if (close == std::string_view::npos) break;
      if (close + 2 - open > kMaxSpecialLength) {
        search = open + 1;
        continue;
      }
      const std::string_view candidate = text.substr(open, close + 2 - open);
      const auto found = special_ids_.find(candidate);
      if (found == special_ids_.end() ||
          (!allow_all_special && allowed_special.find(found->first) == allowed_special.end())) {
        search = open + 1;
        continue;
      }
      encode_ordinary_valid(text.substr(start, open - start), out);
      out.push_back(found->second);
      start = search = close + 2;
    }
    encode_ordinary_valid(text.substr(start), out);
    return out;
  }

  std::string decode_bytes(std::span<const TokenId> ids) const override {
    size_t size = 0;
    for (const TokenId id : ids) size += token_bytes(id).size();
    std::string out;
    out.reserve(size);
    for (const TokenId id : ids) out.append(token_bytes(id));
    return out;
  }

  std::string_view token_bytes(TokenId id) const override {
    GOSSAMER_CHECK(id >= 0 && id < kVocabSize, "Invalid token for decoding: ", id);
    if (id < kFirstSpecialToken) return ranks_.bytes(static_cast<Rank>(id));
    return special_strings_[id - kFirstSpecialToken];
  }

  std::optional<TokenId> special_token_id(std::string_view text) const override {
    const auto found = special_ids_.find(text);
    if (found == special_ids_.end()) return std::nullopt;
    return found->second;
  }

  bool is_special(TokenId id) const override { return id >= kFirstSpecialToken && id < kVocabSize; }
  TokenId vocab_size() const override { return kVocabSize; }

 private:
  // `text` must be valid UTF-8.
  void encode_ordinary_valid(std::string_view text, std::vector<TokenId>& out) const {
    encode_ordinary_span(ranks_, text, 0, text.size(), out);
  }

  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
  };

  RankTable ranks_;
  std::vector<std::string> special_strings_;  // [kVocabSize - kFirstSpecialToken]
  std::unordered_map<std::string, TokenId, StringHash, std::equal_to<>> special_ids_;
};

std::filesystem::path executable_dir() {
  std::error_code error;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", error);
  return error ? std::filesystem::path() : exe.parent_path();
}

}  // namespace

std::shared_ptr<const Tokenizer> Tokenizer::load_o200k_harmony(const std::string& o200k_base_json_path) {
  return std::make_shared<O200kHarmonyTokenizer>(load_o200k_base_json(o200k_base_json_path));
}

std::shared_ptr<const Tokenizer> Tokenizer::load_default() {
  if (const char* env = std::getenv("GOSSAMER_TIKTOKEN_JSON"); env != nullptr && *env != '\0') {
    return load_o200k_harmony(env);
  }
  const std::filesystem::path relative = "node_modules/tiktoken/encoders/o200k_base.json";
  std::vector<std::filesystem::path> searched;
  std::error_code error;
  for (std::filesystem::path dir : {std::filesystem::current_path(error), executable_dir()}) {
    for (; !dir.empty(); dir = dir.parent_path()) {
      const auto candidate = dir / relative;
      if (std::filesystem::is_regular_file(candidate, error)) return load_o200k_harmony(candidate.string());
      searched.push_back(dir);
      if (dir == dir.parent_path()) break;
    }
  }
  std::string where;
  for (const auto& dir : searched) where += "\n  " + (dir / relative).string();
  GOSSAMER_THROW(
      "tokenizer data not found: set GOSSAMER_TIKTOKEN_JSON to o200k_base.json, or run "
      "`bash scripts/setup.sh` in the repository (it installs the npm package tiktoken). Looked in:",
      where);
}

}  // namespace gossamer::text
