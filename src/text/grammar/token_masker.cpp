#include "text/grammar/token_masker.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <string_view>
#include <tuple>

#include "core/error.h"

namespace gossamer::text::grammar {

namespace {

// The code points a string in its normal state starts while taking `bytes` (an escape counts one), or -1
// when the string refuses them; decided by the matcher itself, on a string without bounds.
class BareString {
 public:
  BareString() {
    auto grammar = std::make_shared<Grammar>();
    grammar->nodes.resize(1);
    grammar->nodes[0].kind = NodeKind::kString;
    grammar->nodes[0].max_length = std::numeric_limits<int32_t>::max() / 2;
    matcher_.emplace(std::move(grammar));
    GOSSAMER_CHECK(matcher_->advance(uint8_t{'"'}), "BareString: the opening quote was refused");
  }
  int32_t code_points(std::string_view bytes) const {
    GrammarMatcher copy = *matcher_;
    if (!copy.advance(bytes)) return -1;
    GOSSAMER_ASSERT(copy.stacks().size() == 1 && copy.stacks()[0].size == 2, "BareString: the string ended");
    return copy.stacks()[0].back().count;
  }

 private:
  std::optional<GrammarMatcher> matcher_;
};

}  // namespace

TokenVocabulary::Trie TokenVocabulary::build_trie(std::vector<std::pair<std::string_view, int32_t>> tokens) {
  std::sort(tokens.begin(), tokens.end());
  Trie trie;
  const auto add_node = [&](uint8_t byte) {
    trie.byte.push_back(byte);
    trie.token.push_back(-1);
    trie.first_child.push_back(-1);
    trie.next_sibling.push_back(-1);
    return static_cast<int32_t>(trie.byte.size() - 1);
  };
  add_node(0);                             // the root
  std::vector<int32_t> path = {0};         // nodes on the previous token's path (path[d] at depth d)
  std::vector<int32_t> last_child = {-1};  // the latest child of path[d]
  std::string_view previous;
  for (const auto& [bytes, id] : tokens) {
    size_t common = 0;
    while (common < bytes.size() && common < previous.size() && bytes[common] == previous[common]) ++common;
    path.resize(common + 1);
    last_child.resize(common + 1);
    for (size_t d = common; d < bytes.size(); ++d) {
      const int32_t node = add_node(static_cast<uint8_t>(bytes[d]));
      const int32_t parent = path[d];
      if (last_child[d] < 0) {
        trie.first_child[static_cast<size_t>(parent)] = node;
      } else {
        trie.next_sibling[static_cast<size_t>(last_child[d])] = node;
      }
      last_child[d] = node;
      path.push_back(node);
      last_child.push_back(-1);
    }
    trie.token[static_cast<size_t>(path[bytes.size()])] = id;
    trie.max_depth = std::max(trie.max_depth, static_cast<int32_t>(bytes.size()));
    previous = bytes;
  }
  return trie;
}

std::shared_ptr<const TokenVocabulary> TokenVocabulary::build(const Tokenizer& tokenizer, int32_t vocab_size) {
  GOSSAMER_CHECK(vocab_size >= kNumOrdinaryTokens, "TokenVocabulary: vocab_size ", vocab_size,
                 " below the ordinary tokens");
  auto vocabulary = std::make_shared<TokenVocabulary>();
  vocabulary->vocab_size_ = vocab_size;
  std::vector<std::pair<std::string_view, int32_t>> all, quoted;
  std::vector<std::pair<int32_t, int32_t>> in_string;  // (code points, id)
  all.reserve(kNumOrdinaryTokens);
  const BareString bare_string;
  for (TokenId id = 0; id < kNumOrdinaryTokens; ++id) {
    const std::string_view bytes = tokenizer.token_bytes(id);
    if (bytes.empty()) continue;
    all.emplace_back(bytes, id);
    if (bytes.find('"') != std::string_view::npos) {
      quoted.emplace_back(bytes, id);
    } else if (const int32_t code_points = bare_string.code_points(bytes); code_points >= 0) {
      in_string.emplace_back(code_points, id);
    }
  }
  vocabulary->full_ = build_trie(std::move(all));
  vocabulary->quoted_ = build_trie(std::move(quoted));
  int32_t longest = 0;
  for (const auto& [code_points, id] : in_string) longest = std::max(longest, code_points);
  const auto words = static_cast<size_t>(vocabulary->num_words());
  vocabulary->in_string_up_to_.assign(static_cast<size_t>(longest) + 1, std::vector<uint32_t>(words, 0));
  for (const auto& [code_points, id] : in_string) {
    vocabulary->in_string_up_to_[static_cast<size_t>(code_points)][static_cast<size_t>(id) / 32] |= 1u << (id % 32);
  }
  for (size_t k = 1; k < vocabulary->in_string_up_to_.size(); ++k) {
    for (size_t w = 0; w < words; ++w) vocabulary->in_string_up_to_[k][w] |= vocabulary->in_string_up_to_[k - 1][w];
  }
  return vocabulary;
}

std::span<const uint32_t> TokenVocabulary::in_string_up_to(int32_t code_points) const {
  const auto k =
      static_cast<size_t>(std::clamp<int32_t>(code_points, 0, static_cast<int32_t>(in_string_up_to_.size()) - 1));
  return in_string_up_to_[k];
}

void TokenMasker::walk(const GrammarMatcher& matcher, const TokenVocabulary::Trie& trie, int32_t node, size_t level,
                       std::span<uint32_t> mask) {
  for (int32_t child = trie.first_child[static_cast<size_t>(node)]; child >= 0;
       child = trie.next_sibling[static_cast<size_t>(child)]) {
    std::vector<Stack>& next = levels_[level + 1];
    matcher.step(levels_[level], trie.byte[static_cast<size_t>(child)], next);
    if (next.empty()) continue;
    const int32_t token = trie.token[static_cast<size_t>(child)];
    if (token >= 0) {
      mask[static_cast<size_t>(token) / 32] |= 1u << (token % 32);
      if (collecting_) walked_.push_back(token);
    }
    if (trie.first_child[static_cast<size_t>(child)] >= 0) walk(matcher, trie, child, level + 1, mask);
  }
}

TokenMaskCache::RegexTokens TokenMasker::regex_tokens(TokenMaskCache& cache, const ByteRegex& regex, int32_t state) {
  if (auto cached = cache.find_regex(vocabulary_, &regex, state)) return cached;
  // Walk the full trie with the pattern's DFA alone (a `"` is never in the pattern's bytes).
  const TokenVocabulary::Trie& trie = vocabulary_->full();
  auto out = std::make_shared<std::vector<std::pair<int32_t, int32_t>>>();
  std::vector<std::tuple<int32_t, int32_t, int32_t>> stack = {{0, state, 0}};
  while (!stack.empty()) {
    const auto [node, at, depth] = stack.back();
    stack.pop_back();
    for (int32_t child = trie.first_child[static_cast<size_t>(node)]; child >= 0;
         child = trie.next_sibling[static_cast<size_t>(child)]) {
      const int32_t next = regex.step(at, trie.byte[static_cast<size_t>(child)]);
      if (next == ByteRegex::kDead) continue;
      const int32_t token = trie.token[static_cast<size_t>(child)];
      if (token >= 0) out->emplace_back(depth + 1 + regex.min_remaining(next), token);
      if (trie.first_child[static_cast<size_t>(child)] >= 0) stack.emplace_back(child, next, depth + 1);
    }
  }
  std::sort(out->begin(), out->end());  // by the room they need (bytes = code points: patterns are ASCII)
  return cache.insert_regex(vocabulary_, &regex, state, std::move(out));
}

void TokenMasker::fill_mask(const GrammarMatcher& matcher, std::span<uint32_t> mask) {
  const TokenVocabulary& v = *vocabulary_;
  GOSSAMER_CHECK(static_cast<int32_t>(mask.size()) == v.num_words(), "token mask of ", mask.size(), " words, expected ",
                 v.num_words());
  TokenMaskCache* cache = matcher.grammar().mask_cache.get();
  GOSSAMER_CHECK(cache != nullptr, "TokenMasker: a grammar without a mask cache");
  const GrammarMatcher::StringContext context = matcher.string_context();
  const TokenVocabulary::Trie* trie = &v.full();
  collecting_ = false;
  if (context.regex != nullptr) {
    std::fill(mask.begin(), mask.end(), 0u);
    // NOTE: held here, not iterated as a temporary: a range-for over *regex_tokens(...) destroys the returned
    // pointer before the loop, which freed the list mid-loop whenever the cache kept another thread's copy.
    const TokenMaskCache::RegexTokens tokens = regex_tokens(*cache, *context.regex, context.regex_state);
    for (const auto& [length, token] : *tokens) {
      if (length > context.room) break;
      mask[static_cast<size_t>(token) / 32] |= 1u << (token % 32);
    }
    trie = &v.quoted();
  } else if (context.room >= 0) {
    const std::span<const uint32_t> in_string = v.in_string_up_to(context.room);
    std::copy(in_string.begin(), in_string.end(), mask.begin());
    trie = &v.quoted();
  } else {  // the full walk: a state another matcher may have met already
    std::fill(mask.begin(), mask.end(), 0u);
    state_key_.clear();
    for (const Stack& stack : matcher.stacks()) {
      state_key_.append(reinterpret_cast<const char*>(&stack.size), sizeof(stack.size));
      state_key_.append(reinterpret_cast<const char*>(&stack.depth), sizeof(stack.depth));
      state_key_.append(reinterpret_cast<const char*>(stack.frames), static_cast<size_t>(stack.size) * sizeof(Frame));
    }
    if (const TokenMaskCache::Tokens tokens = cache->find(vocabulary_, state_key_)) {
      for (const int32_t token : *tokens) mask[static_cast<size_t>(token) / 32] |= 1u << (token % 32);
      return;
    }
    collecting_ = true;
    walked_.clear();
  }
  if (levels_.size() < static_cast<size_t>(v.full().max_depth) + 2)
    levels_.resize(static_cast<size_t>(v.full().max_depth) + 2);
  levels_[0] = matcher.stacks();
  walk(matcher, *trie, 0, 0, mask);
  if (collecting_) cache->insert(vocabulary_, state_key_, walked_);
}

}  // namespace gossamer::text::grammar
