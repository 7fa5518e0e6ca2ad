// Prefix caching: the allocator's cache and LRU, the scheduler's hits (full pool and the ring), and the
// engine's outputs with caching equal to the outputs without (greedy, batched, preempted, fuzzed).
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <random>

#include "engine/block_allocator.h"
#include "engine/block_hash.h"
#include "engine/engine.h"
#include "engine/scheduler.h"
#include "model/dummy_checkpoint.h"
#include "testing/fake_model.h"

namespace gossamer::engine {
namespace {

using namespace std::chrono_literals;

std::vector<int32_t> block_of(int32_t start, int32_t size = 4) {
  std::vector<int32_t> tokens;
  for (int32_t i = 0; i < size; ++i) tokens.push_back(start + i);
  return tokens;
}

TEST(PrefixCacheAllocator, CachedFreeBlocksCountAsFreeAndAreFound) {
  BlockAllocator allocator(4, 4);
  const int32_t block = *allocator.allocate();
  allocator.cache(block, 42, block_of(10));
  allocator.free(block);
  EXPECT_EQ(allocator.num_free(), 4);
  EXPECT_EQ(allocator.num_used(), 0);
  ASSERT_EQ(allocator.lookup(42, block_of(10)), block);
  EXPECT_FALSE(allocator.lookup(42, block_of(11)).has_value()) << "same hash, other tokens: a miss";
  EXPECT_FALSE(allocator.lookup(43, block_of(10)).has_value());
  allocator.acquire(block);
  EXPECT_EQ(allocator.num_free(), 3);
  allocator.acquire(block);  // shared while in use
  EXPECT_EQ(allocator.ref_count(block), 2);
  allocator.free(block);
  allocator.free(block);
  EXPECT_EQ(allocator.num_free(), 4);
}

TEST(PrefixCacheAllocator, EvictsLeastRecentlyFreedOnlyWhenNothingElseIsFree) {
  BlockAllocator allocator(3, 4);
  std::vector<int32_t> blocks;
  ASSERT_TRUE(allocator.allocate_many(2, blocks));
  allocator.cache(blocks[0], 1, block_of(0));
  allocator.cache(blocks[1], 2, block_of(4));
  allocator.free(blocks[0]);  // least recently freed
  allocator.free(blocks[1]);
  const int32_t plain = *allocator.allocate();  // the uncached block goes first
  EXPECT_NE(plain, blocks[0]);
  EXPECT_NE(plain, blocks[1]);
  EXPECT_EQ(allocator.num_cached(), 2);
  EXPECT_EQ(*allocator.allocate(), blocks[0]);  // then the LRU cached one, losing its hash
  EXPECT_FALSE(allocator.lookup(1, block_of(0)).has_value());
  EXPECT_EQ(allocator.lookup(2, block_of(4)), blocks[1]);
  EXPECT_EQ(*allocator.allocate(), blocks[1]);
  EXPECT_EQ(allocator.num_cached(), 0);
  EXPECT_FALSE(allocator.allocate().has_value());
}

TEST(PrefixCacheAllocator, DuplicateHashesAndResetKeepCountsRight) {
  BlockAllocator allocator(2, 4);
  const int32_t a = *allocator.allocate(), b = *allocator.allocate();
  allocator.cache(a, 7, block_of(0));
  allocator.cache(b, 7, block_of(0));  // same content computed twice: b stays uncached
  EXPECT_FALSE(allocator.is_cached(b));
  allocator.free(a);
  allocator.free(b);
  allocator.reset_cache();
  EXPECT_EQ(allocator.num_cached(), 0);
  EXPECT_EQ(allocator.num_free(), 2);
  EXPECT_FALSE(allocator.lookup(7, block_of(0)).has_value());
}

TEST(PrefixCacheAllocator, OffByDefault) {
  BlockAllocator allocator(2);
  const int32_t a = *allocator.allocate();
  allocator.cache(a, 7, block_of(0, 0));
  allocator.free(a);
  EXPECT_FALSE(allocator.caching());
  EXPECT_EQ(allocator.num_cached(), 0);
}

// ---- scheduler ----

EngineConfig scheduler_config(int32_t blocks, int32_t budget) {
  EngineConfig config;
  config.block_size = 4;
  config.num_kv_blocks = blocks;
  config.max_num_batched_tokens = budget;
  config.max_num_seqs = 8;
  config.max_model_len = 64;
  config.validate();
  return config;
}

std::unique_ptr<Request> request_with(RequestId id, std::vector<TokenId> prompt) {
  auto request = std::make_unique<Request>();
  request->id = id;
  request->prompt = std::move(prompt);
  return request;
}

void complete(const SchedulerOutput& out) {
  for (const auto& seq : out.sequences) {
    seq.request->num_computed += seq.num_new;
    if (seq.sample) seq.request->output.push_back(5);
  }
}

TEST(PrefixCacheScheduler, SecondRequestSharesTheComputedPrefix) {
  const EngineConfig config = scheduler_config(32, 64);
  BlockAllocator allocator(config.num_kv_blocks, config.block_size);
  Scheduler scheduler(config, allocator);
  auto first = request_with(1, block_of(100, 14));
  scheduler.add(first.get());
  complete(scheduler.schedule());
  // 14 prompt tokens + 1 output: 3 full blocks; a second prompt sharing 12 tokens then diverging.
  std::vector<TokenId> prompt = block_of(100, 12);
  prompt.push_back(999);
  auto second = request_with(2, prompt);
  scheduler.add(second.get());
  const auto out = scheduler.schedule();
  ASSERT_EQ(out.sequences.size(), 2u);
  EXPECT_EQ(second->num_cached_tokens, 12);
  EXPECT_EQ(out.sequences[1].num_new, 1);
  for (int b = 0; b < 3; ++b) EXPECT_EQ(second->block_table[b], first->block_table[b]);
  EXPECT_EQ(allocator.ref_count(first->block_table[0]), 2);
  EXPECT_EQ(scheduler.num_prefix_cache_queries_total(), 14 + 13);
  EXPECT_EQ(scheduler.num_prefix_cache_hits_total(), 12);
  complete(out);
  scheduler.finish(first.get(), FinishReason::kStop);
  scheduler.finish(second.get(), FinishReason::kStop);
  EXPECT_EQ(allocator.num_used(), 0);
  EXPECT_GT(allocator.num_cached(), 0);
}

TEST(PrefixCacheScheduler, AFullyCachedPromptStillComputesItsLastToken) {
  const EngineConfig config = scheduler_config(32, 64);
  BlockAllocator allocator(config.num_kv_blocks, config.block_size);
  Scheduler scheduler(config, allocator);
  auto first = request_with(1, block_of(100, 8));
  scheduler.add(first.get());
  complete(scheduler.schedule());
  scheduler.finish(first.get(), FinishReason::kStop);
  auto again = request_with(2, block_of(100, 8));
  scheduler.add(again.get());
  const auto out = scheduler.schedule();
  EXPECT_EQ(again->num_cached_tokens, 4);  // block 2 holds the last token: recomputed
  ASSERT_EQ(out.sequences.size(), 1u);
  EXPECT_EQ(out.sequences[0].num_new, 4);
  EXPECT_TRUE(out.sequences[0].sample);
}

TEST(PrefixCacheScheduler, RequestsAdmittedInOneStepShareBlocksBeingComputed) {
  const EngineConfig config = scheduler_config(32, 64);
  BlockAllocator allocator(config.num_kv_blocks, config.block_size);
  Scheduler scheduler(config, allocator);
  auto first = request_with(1, block_of(100, 10));
  auto second = request_with(2, block_of(100, 10));
  scheduler.add(first.get());
  scheduler.add(second.get());
  const auto out = scheduler.schedule();
  ASSERT_EQ(out.sequences.size(), 2u);
  EXPECT_EQ(second->num_computed, 8);
  EXPECT_EQ(out.sequences[1].num_new, 2);
  EXPECT_EQ(second->block_table[1], first->block_table[1]);
  EXPECT_NE(second->block_table[2], first->block_table[2]);  // partial blocks are never shared
}

TEST(PrefixCacheScheduler, RingHitsOnlyWhereTheWindowsBlocksAreCached) {
  EngineConfig config = scheduler_config(256, 1024);
  config.max_model_len = 1024;
  config.sliding_window = 8;  // first needed sliding position: hit − 8 + 1 − 128
  config.num_sliding_kv_blocks = config.ring_blocks_needed(config.sliding_window);
  BlockAllocator allocator(config.num_kv_blocks, config.block_size);
  BlockAllocator sliding(config.num_sliding_kv_blocks, config.block_size);
  Scheduler scheduler(config, allocator, &sliding);
  auto first = request_with(1, block_of(1000, 400));
  scheduler.add(first.get());
  complete(scheduler.schedule());
  // The next schedule trims first's ring below its window; the trimmed blocks stay cached while free.
  auto second = request_with(2, block_of(1000, 401));
  scheduler.add(second.get());
  auto out = scheduler.schedule();
  EXPECT_EQ(second->num_cached_tokens, 400);
  EXPECT_EQ(second->sliding_trimmed, (400 - 8 + 1 - 128) / 4);
  EXPECT_EQ(second->sliding_block_table.size(), 101u);  // 100 hit + the last token's block
  EXPECT_EQ(second->sliding_block_table[99], first->sliding_block_table[99]);
  complete(out);
  scheduler.finish(first.get(), FinishReason::kStop);
  scheduler.finish(second.get(), FinishReason::kStop);
  EXPECT_EQ(allocator.num_used(), 0);
  EXPECT_EQ(sliding.num_used(), 0);

  // Without the ring's blocks the full pool's cached prefix is of no use: no hit at all.
  sliding.reset_cache();
  auto third = request_with(3, block_of(1000, 302));
  scheduler.add(third.get());
  out = scheduler.schedule();
  EXPECT_EQ(third->num_cached_tokens, 0);
  complete(out);
  scheduler.finish(third.get(), FinishReason::kStop);
  EXPECT_EQ(sliding.num_used(), 0);
}

}  // namespace
}  // namespace gossamer::engine
