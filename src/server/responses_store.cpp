#include "server/responses_store.h"

namespace gossamer::server {

ResponsesStore::ResponsesStore(size_t max_entries, size_t max_bytes) : max_entries_(max_entries), max_bytes_(max_bytes) {}

void ResponsesStore::put(const std::string& id, StoredResponse value) {
  const size_t bytes = value.response.dump().size() + value.messages.dump().size();
  std::lock_guard<std::mutex> lock(mutex_);
  if (const auto found = entries_.find(id); found != entries_.end()) {
    bytes_ -= found->second.bytes;
    lru_.erase(found->second.position);
    entries_.erase(found);
  }
  lru_.push_front(id);
  entries_[id] = Entry{std::move(value), bytes, lru_.begin()};
  bytes_ += bytes;
  evict_locked();
}

std::optional<StoredResponse> ResponsesStore::get(const std::string& id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto found = entries_.find(id);
  if (found == entries_.end()) return std::nullopt;
  lru_.splice(lru_.begin(), lru_, found->second.position);
  return found->second.value;
}

bool ResponsesStore::erase(const std::string& id) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto found = entries_.find(id);
  if (found == entries_.end()) return false;
  bytes_ -= found->second.bytes;
  lru_.erase(found->second.position);
  entries_.erase(found);
  return true;
}

size_t ResponsesStore::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return entries_.size();
}

void ResponsesStore::evict_locked() {
  // NOTE: the newest entry stays even when it alone is over max_bytes (the caller just made it).
  while (entries_.size() > 1 && (entries_.size() > max_entries_ || bytes_ > max_bytes_)) {
    const std::string& oldest = lru_.back();
    const auto found = entries_.find(oldest);
    bytes_ -= found->second.bytes;
    entries_.erase(found);
    lru_.pop_back();
  }
}

}  // namespace gossamer::server
