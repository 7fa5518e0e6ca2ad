// TokenMasker: which of the vocabulary's tokens a GrammarMatcher allows next, as a bitmask.
//
// The ordinary tokens' bytes form a trie, walked depth first from the matcher's state: a subtree is
// skipped as soon as its prefix is refused, so only the allowed tokens and their refused one-byte
// extensions are visited. Context-independent sets cut the one expensive case, the inside of a string,
// where almost every token is allowed: a token without a `"` cannot leave the string, so from the
// string's normal state (no escape or UTF-8 sequence pending) whether it is allowed depends only on its
// bytes and on the room the string has left for the code points it starts (escapes count one, as
// characters do). Those tokens come from bitmasks precomputed by that count (with the matcher's own
// string rules, on a bare string); only the tokens with a `"` (a second, much smaller trie) are walked.
// Inside a pattern string the same holds with the pattern's state: those token lists are computed once
// per pattern state, and again only the tokens with a `"` are walked. Outside strings, a state's mask is
// looked up in its grammar's TokenMaskCache before the walk, and stored there after it (token_mask_cache.h):
// pattern token lists are kept there too, so both are computed once per grammar, not per request.
//
// Contract: a TokenVocabulary is built once per tokenizer and is immutable (shared by every request).
// fill_mask writes mask[vocab_words] (bit t of word t / 32 set = token t allowed), the same with or without
// cached states; special tokens (ids >= kNumOrdinaryTokens) are never set: callers decide when an end token
// is allowed (can_end()). The matcher's grammar must have a mask cache (compile_json_schema gives one). A
// TokenMasker is one request's (not thread-safe); the vocabulary and the grammars' caches are shared.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "text/grammar/grammar_matcher.h"
#include "text/grammar/token_mask_cache.h"
#include "text/tokenizer.h"

namespace gossamer::text::grammar {

class TokenVocabulary {
 public:
  static std::shared_ptr<const TokenVocabulary> build(const Tokenizer& tokenizer, int32_t vocab_size = kVocabSize);

  int32_t vocab_size() const { return vocab_size_; }
  int32_t num_words() const { return (vocab_size_ + 31) / 32; }

  struct Trie {
    std::vector<uint8_t> byte;          // [nodes] the edge into the node
    std::vector<int32_t> token;         // [nodes] token ending here, or -1
    std::vector<int32_t> first_child;   // [nodes] or -1
    std::vector<int32_t> next_sibling;  // [nodes] or -1
    int32_t max_depth = 0;
  };
  const Trie& full() const { return full_; }
  const Trie& quoted() const { return quoted_; }  // tokens with a `"`
  // Tokens without a `"` that a string in its normal state takes whole, starting at most `code_points`
  // code points ([num_words] words; any count past the longest token's is the longest's set).
  std::span<const uint32_t> in_string_up_to(int32_t code_points) const;

 private:
  static Trie build_trie(std::vector<std::pair<std::string_view, int32_t>> tokens);

  int32_t vocab_size_ = 0;
  Trie full_, quoted_;
  std::vector<std::vector<uint32_t>> in_string_up_to_;  // [max code points + 1][num_words]
};

class TokenMasker {
 public:
  explicit TokenMasker(std::shared_ptr<const TokenVocabulary> vocabulary) : vocabulary_(std::move(vocabulary)) {}

  // mask: [vocabulary.num_words()] words, overwritten.
  void fill_mask(const GrammarMatcher& matcher, std::span<uint32_t> mask);
  const TokenVocabulary& vocabulary() const { return *vocabulary_; }

 private:
  // Sets the allowed tokens of `trie` below `node` (and appends them to walked_ when collecting).
  void walk(const GrammarMatcher& matcher, const TokenVocabulary::Trie& trie, int32_t node, size_t level,
            std::span<uint32_t> mask);
  // Tokens that stay inside a pattern string from `state`, as (room needed: bytes + the pattern's
  // shortest completion, id), ascending; from the grammar's cache, else computed and stored there.
  TokenMaskCache::RegexTokens regex_tokens(TokenMaskCache& cache, const ByteRegex& regex, int32_t state);

  std::shared_ptr<const TokenVocabulary> vocabulary_;
  std::vector<std::vector<Stack>> levels_;  // per trie depth: the matcher's stacks after that prefix
  std::string state_key_;                   // the matcher's state as the cache's key
  bool collecting_ = false;
  std::vector<int32_t> walked_;  // the walk's allowed tokens, for the cache
};

}  // namespace gossamer::text::grammar
