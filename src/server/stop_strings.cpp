#include "server/stop_strings.h"

#include <algorithm>

namespace gossamer::server {

StopStringMatcher::StopStringMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {
  for (const auto& stop : stops_) hold_ = std::max(hold_, stop.empty() ? 0 : stop.size() - 1);
}

std::string StopStringMatcher::push(const std::string& text) {
  if (stopped_) return {};
  if (stops_.empty()) return text;
  held_ += text;
  size_t first = std::string::npos;
  for (const auto& stop : stops_) {
    if (!stop.empty()) first = std::min(first, held_.find(stop));
  }
  if (first != std::string::npos) {
    stopped_ = true;
    std::string out = held_.substr(0, first);
    held_.clear();
    return out;
  }
  if (held_.size() <= hold_) return {};
  size_t cut = held_.size() - hold_;
  // NOTE: never cut inside a UTF-8 character (continuation bytes are 10xxxxxx).
  while (cut > 0 && (static_cast<unsigned char>(held_[cut]) & 0xC0) == 0x80) --cut;
  std::string out = held_.substr(0, cut);
  held_.erase(0, cut);
  return out;
}

std::string StopStringMatcher::flush() {
  std::string out;
  out.swap(held_);
  return stopped_ ? std::string() : out;
}

}  // namespace gossamer::server
