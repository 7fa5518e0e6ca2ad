// TokenMaskCache: the token masks already computed for one grammar's matcher states, for the next matcher
// found in the same state (another request's, or a later step's). A grammar compiled once and shared by
// requests (server/shared_grammars.h) owns one (Grammar::mask_cache), so 64 rows that reach the same
// structural position (after `{`, between properties, at an array's next item) walk the trie once.
//
// A state is its stacks' bytes (frames compare with memcmp, grammar_matcher.h): equal bytes, equal mask.
// Kept: the states whose mask needs the full trie walk (outside strings; inside one the masker's
// precomputed sets are cheaper than a lookup), as their allowed ordinary tokens, least recently used
// out past max_tokens ids in all; and the pattern strings' token lists by DFA state (token_masker.h),
// which are few and kept for the grammar's life.
//
// Contract: thread-safe (one mutex; values are immutable and shared, so readers copy no mask under the
// lock). A cache serves one vocabulary: the first that uses it; calls with another find nothing and store
// nothing. Pattern pointers are the grammar's own (they live as long as the cache).
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace gossamer::text::grammar {

class ByteRegex;
class TokenVocabulary;

class TokenMaskCache {
 public:
  static constexpr size_t kDefaultMaxTokens = size_t{1} << 19;  // 2 MiB of token ids per grammar

  using Tokens = std::shared_ptr<const std::vector<int32_t>>;
  // (room needed, token id), ascending: the tokens that stay inside a pattern string from one DFA state.
  using RegexTokens = std::shared_ptr<const std::vector<std::pair<int32_t, int32_t>>>;

  explicit TokenMaskCache(size_t max_tokens = kDefaultMaxTokens) : max_tokens_(max_tokens) {}

  // The allowed ordinary tokens of the state `key`, or null.
  Tokens find(const std::shared_ptr<const TokenVocabulary>& vocabulary, std::string_view key);
  void insert(const std::shared_ptr<const TokenVocabulary>& vocabulary, std::string_view key,
              std::vector<int32_t> tokens);
  RegexTokens find_regex(const std::shared_ptr<const TokenVocabulary>& vocabulary, const ByteRegex* regex,
                         int32_t state);
  // Stores `tokens` unless another thread stored this state's first; returns the list kept (or `tokens` where
  // the cache serves another vocabulary), so every caller shares one.
  RegexTokens insert_regex(const std::shared_ptr<const TokenVocabulary>& vocabulary, const ByteRegex* regex,
                           int32_t state, RegexTokens tokens);

  struct Stats {
    uint64_t hits = 0, misses = 0;
    size_t states = 0, tokens = 0;  // kept now
  };
  Stats stats() const;

 private:
  // Under mutex_: true when `vocabulary` is the one this cache serves (binding the first).
  bool serves(const std::shared_ptr<const TokenVocabulary>& vocabulary);

  struct Entry {
    std::string key;
    Tokens tokens;
  };

  const size_t max_tokens_;
  mutable std::mutex mutex_;
  std::weak_ptr<const TokenVocabulary> vocabulary_;
  bool bound_ = false;
  std::list<Entry> entries_;                                                // most recently used first
  std::unordered_map<std::string_view, std::list<Entry>::iterator> index_;  // views of the entries' keys
  size_t num_tokens_ = 0;
  uint64_t hits_ = 0, misses_ = 0;
  std::map<std::pair<const ByteRegex*, int32_t>, RegexTokens> regex_tokens_;
};

}  // namespace gossamer::text::grammar
