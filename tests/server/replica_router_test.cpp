// The data-parallel router's choice (server/replica_router.h) on synthetic engine stats: the fewest
// requests waiting + running, ties by the lower KV cache usage, then the lowest index.
#include "server/replica_router.h"

#include <gtest/gtest.h>

namespace gossamer::server {
namespace {

engine::EngineStats stats(int32_t running, int32_t waiting, int32_t free_blocks, int32_t blocks = 100) {
  engine::EngineStats out;
  out.num_running = running;
  out.num_waiting = waiting;
  out.num_kv_blocks = blocks;
  out.num_free_kv_blocks = free_blocks;
  return out;
}

size_t pick(const std::vector<engine::EngineStats>& replicas) {
  std::vector<ReplicaLoad> loads;
  for (const auto& replica : replicas) loads.push_back(replica_load(replica));
  return least_loaded_replica(loads);
}

TEST(ReplicaRouter, LoadCountsWaitingAndRunningAndKvUsage) {
  const ReplicaLoad load = replica_load(stats(3, 2, 25));
  EXPECT_EQ(load.num_requests, 5);
  EXPECT_DOUBLE_EQ(load.kv_usage, 0.75);
}

TEST(ReplicaRouter, FewestRequestsWinWhateverTheKvUsage) {
  EXPECT_EQ(pick({stats(4, 0, 90), stats(1, 1, 10), stats(2, 1, 100)}), 1u);
  EXPECT_EQ(pick({stats(0, 3, 100), stats(2, 0, 0)}), 1u);  // waiting requests count as much as running ones
}

TEST(ReplicaRouter, TiesGoToTheLowerKvUsageThenTheLowerIndex) {
  EXPECT_EQ(pick({stats(2, 0, 40), stats(1, 1, 60), stats(0, 2, 50)}), 1u);
  EXPECT_EQ(pick({stats(1, 0, 50), stats(1, 0, 50), stats(1, 0, 50)}), 0u);
  EXPECT_EQ(pick({stats(3, 0, 10), stats(1, 0, 50), stats(1, 0, 50)}), 1u);
  EXPECT_EQ(pick({stats(0, 0, 100)}), 0u);
}

TEST(ReplicaRouter, NoReplicaIsAnError) {
  EXPECT_ANY_THROW(least_loaded_replica({}));
}

}  // namespace
}  // namespace gossamer::server
