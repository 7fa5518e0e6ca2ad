#include "text/grammar/token_mask_cache.h"

namespace gossamer::text::grammar {

bool TokenMaskCache::serves(const std::shared_ptr<const TokenVocabulary>& vocabulary) {
  if (!bound_) {
    vocabulary_ = vocabulary;
    bound_ = true;
    return true;
  }
  // NOTE: the same control block (not the same address: a freed vocabulary's could be reused).
  return !vocabulary_.owner_before(vocabulary) && !vocabulary.owner_before(vocabulary_);
}

TokenMaskCache::Tokens TokenMaskCache::find(const std::shared_ptr<const TokenVocabulary>& vocabulary,
                                            std::string_view key) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!serves(vocabulary)) return nullptr;
  const auto found = index_.find(key);
  if (found == index_.end()) {
    ++misses_;
    return nullptr;
  }
  ++hits_;
  entries_.splice(entries_.begin(), entries_, found->second);
  return found->second->tokens;
}

void TokenMaskCache::insert(const std::shared_ptr<const TokenVocabulary>& vocabulary, std::string_view key,
                            std::vector<int32_t> tokens) {
  auto shared = std::make_shared<const std::vector<int32_t>>(std::move(tokens));
  std::lock_guard<std::mutex> lock(mutex_);
  if (!serves(vocabulary) || index_.count(key) > 0) return;  // another thread stored it meanwhile
  entries_.push_front({std::string(key), std::move(shared)});
  index_.emplace(entries_.front().key, entries_.begin());
  num_tokens_ += entries_.front().tokens->size();
  while (num_tokens_ > max_tokens_ && !entries_.empty()) {
    num_tokens_ -= entries_.back().tokens->size();
    index_.erase(entries_.back().key);
    entries_.pop_back();
  }
}

TokenMaskCache::RegexTokens TokenMaskCache::find_regex(const std::shared_ptr<const TokenVocabulary>& vocabulary,
                                                       const ByteRegex* regex, int32_t state) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!serves(vocabulary)) return nullptr;
  const auto found = regex_tokens_.find({regex, state});
  return found == regex_tokens_.end() ? nullptr : found->second;
}

TokenMaskCache::RegexTokens TokenMaskCache::insert_regex(const std::shared_ptr<const TokenVocabulary>& vocabulary,
                                                         const ByteRegex* regex, int32_t state, RegexTokens tokens) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!serves(vocabulary)) return tokens;
  return regex_tokens_.try_emplace({regex, state}, std::move(tokens)).first->second;
}

TokenMaskCache::Stats TokenMaskCache::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return {hits_, misses_, entries_.size(), num_tokens_};
}

}  // namespace gossamer::text::grammar
