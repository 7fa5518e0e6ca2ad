// OutputQueue: one HTTP request's engine events on their way from the engine thread to an HTTP I/O thread,
// so that none of the server's work (Harmony parsing, detokenizing, stop strings, JSON, SSE writes) runs on
// the engine thread (issue #14 §5).
//
// An engine request's callback (callback()) only appends its event under a mutex and, when no drain is
// pending, posts one through the request's ResponseChannel (ResponseChannel::post: the connection's strand
// on the I/O threads); the drain hands every queued event to its consumer, in arrival order, and drains
// again when more arrived meanwhile.
//
// Contract: thread-safe. Consumers run on the channel's post() thread(s), one drain at a time, never on the
// caller of the callback; each engine request's events reach its consumer in the engine's order. Events
// queued after the channel can no longer run work (the HTTP server stopped) are dropped with it.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "engine/request.h"
#include "server/http_types.h"

namespace gossamer::server {

class OutputQueue : public std::enable_shared_from_this<OutputQueue> {
 public:
  using Consumer = std::function<void(const engine::RequestOutput&)>;

  explicit OutputQueue(std::shared_ptr<ResponseChannel> channel) : channel_(std::move(channel)) {}

  // The engine::OutputCallback of one engine request: its events go to `consume` through this queue.
  engine::OutputCallback callback(Consumer consume);

 private:
  struct Entry {
    std::shared_ptr<const Consumer> consumer;
    engine::RequestOutput output;
  };
  void push(std::shared_ptr<const Consumer> consumer, engine::RequestOutput output);
  void drain();

  std::shared_ptr<ResponseChannel> channel_;
  std::mutex mutex_;
  std::vector<Entry> entries_;  // guarded by mutex_
  bool drain_posted_ = false;   // guarded by mutex_: a drain is posted or running
};

}  // namespace gossamer::server
