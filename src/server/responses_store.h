// ResponsesStore: the bounded in-memory store behind `store: true`, previous_response_id and
// GET/DELETE /v1/responses/{id}.
//
// Output items are found by id too (for `item_reference` input items) while their response is stored.
// Eviction: least recently used first (a GET or a previous_response_id use counts as a use), whenever the
// store holds more than max_entries responses or more than max_bytes of stored JSON text. Nothing survives
// a restart.
//
// Contract: thread-safe; values are copies.
#pragma once

#include <cstddef>
#include <list>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <unordered_map>

namespace gossamer::server {

struct StoredResponse {
  nlohmann::json response;          // the response object as GET returns it
  nlohmann::ordered_json messages;  // the conversation in chat form, this response's output included
};

class ResponsesStore {
 public:
  explicit ResponsesStore(size_t max_entries = 1000, size_t max_bytes = size_t{64} << 20);

  void put(const std::string& id, StoredResponse value);
  std::optional<StoredResponse> get(const std::string& id) const;
  bool erase(const std::string& id);
  // An output item of a stored response by its id (what `item_reference` input items name).
  std::optional<nlohmann::json> find_item(const std::string& item_id) const;
  size_t size() const;

 private:
  struct Entry {
    StoredResponse value;
    size_t bytes = 0;
    std::list<std::string>::iterator position;
  };
  void evict_locked();
  void remove_locked(std::unordered_map<std::string, Entry>::iterator entry);

  size_t max_entries_;
  size_t max_bytes_;
  mutable std::mutex mutex_;
  mutable std::list<std::string> lru_;  // front = most recently used
  std::unordered_map<std::string, Entry> entries_;
  std::unordered_map<std::string, std::string> item_owner_;  // output item id → response id
  size_t bytes_ = 0;
};

}  // namespace gossamer::server
