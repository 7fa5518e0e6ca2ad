#include "server/responses_store.h"

namespace gossamer::server {

ResponsesStore::ResponsesStore(size_t max_entries, size_t max_bytes)
    : max_entries_(max_entries), max_bytes_(max_bytes) {}

void ResponsesStore::put(const std::string& id, StoredResponse value) {
  const size_t bytes = value.response.dump().size() + value.messages.dump().size();
  std::lock_guard<std::mutex> lock(mutex_);
  if (const auto found = entries_.find(id); found != entries_.end()) remove_locked(found);
  if (const auto output = value.response.find("output"); output != value.response.end() && output->is_array()) {
    for (const auto& item : *output) {
      if (item.contains("id") && item["id"].is_string()) item_owner_[item["id"].get<std::string>()] = id;
    }
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
  remove_locked(found);
  return true;
}

std::optional<nlohmann::json> ResponsesStore::find_item(const std::string& item_id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto owner = item_owner_.find(item_id);
  if (owner == item_owner_.end()) return std::nullopt;
  const auto entry = entries_.find(owner->second);
  if (entry == entries_.end()) return std::nullopt;
  for (const auto& item : entry->second.value.response["output"]) {
    if (item.value("id", std::string()) == item_id) return item;
  }
  return std::nullopt;
}

void ResponsesStore::remove_locked(std::unordered_map<std::string, Entry>::iterator entry) {
  for (const auto& item : entry->second.value.response.value("output", nlohmann::json::array())) {
    if (item.contains("id") && item["id"].is_string()) item_owner_.erase(item["id"].get<std::string>());
  }
  bytes_ -= entry->second.bytes;
  lru_.erase(entry->second.position);
  entries_.erase(entry);
}

size_t ResponsesStore::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return entries_.size();
}

void ResponsesStore::evict_locked() {
  // NOTE: the newest entry stays even when it alone is over max_bytes (the caller just made it).
  while (entries_.size() > 1 && (entries_.size() > max_entries_ || bytes_ > max_bytes_)) {
    remove_locked(entries_.find(lru_.back()));
  }
}

}  // namespace gossamer::server
