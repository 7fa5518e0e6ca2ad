#include "server/replica_router.h"

#include "core/error.h"

namespace gossamer::server {

ReplicaLoad replica_load(const engine::EngineStats& stats) {
  return {stats.num_waiting + stats.num_running, stats.kv_usage()};
}

size_t least_loaded_replica(const std::vector<ReplicaLoad>& loads) {
  GOSSAMER_CHECK(!loads.empty(), "no replica to route to");
  size_t best = 0;
  for (size_t i = 1; i < loads.size(); ++i) {
    const ReplicaLoad& candidate = loads[i];
    const ReplicaLoad& chosen = loads[best];
    // NOTE: strict comparisons keep the lower index on a full tie.
    if (candidate.num_requests < chosen.num_requests ||
        (candidate.num_requests == chosen.num_requests && candidate.kv_usage < chosen.kv_usage)) {
      best = i;
    }
  }
  return best;
}

ReplicaRouter::ReplicaRouter(std::vector<std::unique_ptr<engine::Engine>> engines) : engines_(std::move(engines)) {
  GOSSAMER_CHECK(!engines_.empty(), "a server needs at least one replica");
}

engine::Engine& ReplicaRouter::route(const std::function<void(engine::Engine&)>& submit) {
  if (engines_.size() == 1) {  // no choice to make: no stats read, no lock on every request
    submit(*engines_.front());
    return *engines_.front();
  }
  std::lock_guard<std::mutex> lock(route_mutex_);
  std::vector<ReplicaLoad> loads;
  loads.reserve(engines_.size());
  for (const auto& engine : engines_) loads.push_back(replica_load(engine->stats()));
  engine::Engine& chosen = *engines_[least_loaded_replica(loads)];
  submit(chosen);
  return chosen;
}

std::vector<engine::EngineStats> ReplicaRouter::stats() const {
  std::vector<engine::EngineStats> out;
  out.reserve(engines_.size());
  for (const auto& engine : engines_) out.push_back(engine->stats());
  return out;
}

void ReplicaRouter::shutdown() {
  for (const auto& engine : engines_) engine->shutdown();
}

}  // namespace gossamer::server
