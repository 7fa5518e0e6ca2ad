// StopStringMatcher: finds client stop strings in streamed text and holds back just enough text that a stop
// string split across deltas is still caught (the matched string itself is never emitted).
//
// Contract: push() returns the text that is safe to emit now (never a split UTF-8 character if the input
// was whole characters); after a match, stopped() is true and later pushes return "". flush() returns what
// is held back.
#pragma once

#include <string>
#include <vector>

namespace gossamer::server {

class StopStringMatcher {
 public:
  explicit StopStringMatcher(std::vector<std::string> stops);

  std::string push(const std::string& text);
  std::string flush();
  bool stopped() const { return stopped_; }

 private:
  std::vector<std::string> stops_;
  size_t hold_ = 0;  // longest stop - 1
  std::string held_;
  bool stopped_ = false;
};

}  // namespace gossamer::server
