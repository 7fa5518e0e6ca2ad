// Test helper of the engine tests: records every request's output events (tokens, how it finished) and
// waits until a number of requests have finished.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <vector>

#include "engine/engine.h"

namespace gossamer::engine {

class OutputCollector {
 public:
  struct Record {
    std::vector<TokenId> tokens;  // every event's new tokens in order
    bool finished = false;
    FinishReason reason = FinishReason::kNone;
    int32_t num_output_tokens = 0;  // as the final event reports them
    int32_t num_cached_tokens = 0;  // likewise (prefix-cache hits)
    int num_events = 0;
  };

  // The request's on_output; an event after the final one fails the test.
  OutputCallback callback() {
    return [this](const RequestOutput& output) {
      std::lock_guard<std::mutex> lock(mutex_);
      Record& record = records_[output.id];
      EXPECT_FALSE(record.finished) << "event after the final one";
      record.tokens.insert(record.tokens.end(), output.new_tokens.begin(), output.new_tokens.end());
      ++record.num_events;
      if (output.finished) {
        record.finished = true;
        record.reason = output.finish_reason;
        record.num_output_tokens = output.num_output_tokens;
        record.num_cached_tokens = output.num_cached_tokens;
        ++num_finished_;
        done_.notify_all();
      }
    };
  }
  // True once `count` requests have finished, false after `timeout`.
  bool wait(int count, std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
    std::unique_lock<std::mutex> lock(mutex_);
    return done_.wait_for(lock, timeout, [&] { return num_finished_ >= count; });
  }
  Record get(RequestId id) {
    std::lock_guard<std::mutex> lock(mutex_);
    return records_[id];
  }

 private:
  std::mutex mutex_;
  std::condition_variable done_;
  std::map<RequestId, Record> records_;
  int num_finished_ = 0;
};

}  // namespace gossamer::engine
