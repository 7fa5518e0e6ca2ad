// ReplicaRouter: the data-parallel replicas of one server (-dp N: N engines, each with its own model and KV
// cache) and the choice of the replica for each new request, as vLLM's DP load balancing: the fewest
// requests waiting + running, ties by the lower KV cache usage, then the lowest index.
//
// Contract: thread-safe. A request and all of its engine requests (n > 1 choices, cancellation, its
// stream) stay on the replica route() gave it; the caller keeps that engine. route() submits under one
// lock, so requests arriving together see each other's load (one replica: submitted directly, no lock).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "engine/engine.h"

namespace gossamer::server {

// What the choice reads of one replica.
struct ReplicaLoad {
  int32_t num_requests = 0;  // waiting + running
  double kv_usage = 0.0;     // 0..1
};

ReplicaLoad replica_load(const engine::EngineStats& stats);

// Index of the least loaded replica by the rule above; `loads` is not empty.
size_t least_loaded_replica(const std::vector<ReplicaLoad>& loads);

class ReplicaRouter {
 public:
  // `engines` is not empty; replica i is engines[i].
  explicit ReplicaRouter(std::vector<std::unique_ptr<engine::Engine>> engines);

  size_t num_replicas() const { return engines_.size(); }
  engine::Engine& replica(size_t index) { return *engines_[index]; }
  const engine::Engine& replica(size_t index) const { return *engines_[index]; }

  // Picks the least loaded replica and calls submit(engine) on it (which submits the request's engine
  // requests); returns that engine. Exceptions of submit propagate.
  engine::Engine& route(const std::function<void(engine::Engine&)>& submit);

  // Each replica's stats, by index.
  std::vector<engine::EngineStats> stats() const;
  // Aborts every replica's requests and stops their loops; idempotent.
  void shutdown();

 private:
  std::vector<std::unique_ptr<engine::Engine>> engines_;
  std::mutex route_mutex_;  // one choice + submission at a time
};

}  // namespace gossamer::server
