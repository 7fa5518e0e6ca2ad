#include "server/output_queue.h"

namespace gossamer::server {

engine::OutputCallback OutputQueue::callback(Consumer consume) {
  auto consumer = std::make_shared<const Consumer>(std::move(consume));
  return [queue = shared_from_this(), consumer](engine::RequestOutput output) {
    queue->push(consumer, std::move(output));
  };
}

void OutputQueue::push(std::shared_ptr<const Consumer> consumer, engine::RequestOutput output) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    entries_.push_back({std::move(consumer), std::move(output)});
    if (drain_posted_) return;
    drain_posted_ = true;
  }
  channel_->post([queue = shared_from_this()] { queue->drain(); });
}

void OutputQueue::drain() {
  std::vector<Entry> taken;
  while (true) {
    taken.clear();  // NOTE: outside the lock: the last entry may hold the last reference to its consumer's owner
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (entries_.empty()) {
        drain_posted_ = false;
        return;
      }
      taken.swap(entries_);
    }
    for (const Entry& entry : taken) (*entry.consumer)(entry.output);
  }
}

}  // namespace gossamer::server
