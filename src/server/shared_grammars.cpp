#include "server/shared_grammars.h"

#include <list>
#include <mutex>
#include <nlohmann/json.hpp>
#include <unordered_map>
#include <utility>

#include "text/grammar/json_schema_compiler.h"

namespace gossamer::server {

namespace grammar = text::grammar;

std::shared_ptr<const grammar::Grammar> shared_schema_grammar(const std::string& schema_text) {
  using Entry = std::pair<std::string, std::shared_ptr<const grammar::Grammar>>;
  static std::mutex mutex;
  static std::list<Entry> entries;  // most recently used first
  static std::unordered_map<std::string, std::list<Entry>::iterator> index;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (const auto found = index.find(schema_text); found != index.end()) {
      entries.splice(entries.begin(), entries, found->second);
      return found->second->second;
    }
  }
  // NOTE: compiled outside the lock; two requests racing on a new schema may both compile it (one is kept).
  auto compiled = grammar::compile_json_schema(nlohmann::json::parse(schema_text));
  std::lock_guard<std::mutex> lock(mutex);
  if (const auto found = index.find(schema_text); found != index.end()) return found->second->second;
  entries.emplace_front(schema_text, compiled);
  index.emplace(schema_text, entries.begin());
  if (entries.size() > kMaxSharedGrammars) {
    index.erase(entries.back().first);
    entries.pop_back();
  }
  return compiled;
}

std::shared_ptr<const grammar::Grammar> shared_json_object_grammar() {
  static const std::shared_ptr<const grammar::Grammar> json_object = grammar::json_object_grammar();
  return json_object;
}

}  // namespace gossamer::server
