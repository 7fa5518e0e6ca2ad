#include "engine/block_allocator.h"

#include <gtest/gtest.h>

#include <set>

namespace gossamer::engine {
namespace {

TEST(BlockAllocator, AllocatesEveryBlockOnceThenRunsOut) {
  BlockAllocator allocator(4);
  std::set<int32_t> seen;
  for (int i = 0; i < 4; ++i) {
    const auto block = allocator.allocate();
    ASSERT_TRUE(block.has_value());
    EXPECT_TRUE(seen.insert(*block).second);
  }
  EXPECT_FALSE(allocator.allocate().has_value());
  EXPECT_EQ(allocator.num_free(), 0);
  EXPECT_DOUBLE_EQ(allocator.usage(), 1.0);
}

TEST(BlockAllocator, RefCountsKeepSharedBlocksAlive) {
  BlockAllocator allocator(2);
  const int32_t block = *allocator.allocate();
  allocator.add_ref(block);
  EXPECT_EQ(allocator.ref_count(block), 2);
  allocator.free(block);
  EXPECT_EQ(allocator.num_free(), 1);
  allocator.free(block);
  EXPECT_EQ(allocator.num_free(), 2);
}

TEST(BlockAllocator, AllocateManyIsAllOrNothing) {
  BlockAllocator allocator(3);
  std::vector<int32_t> blocks;
  EXPECT_FALSE(allocator.allocate_many(4, blocks));
  EXPECT_TRUE(blocks.empty());
  EXPECT_EQ(allocator.num_free(), 3);
  EXPECT_TRUE(allocator.allocate_many(3, blocks));
  EXPECT_EQ(blocks.size(), 3u);
  allocator.free_all(blocks);
  EXPECT_EQ(allocator.num_free(), 3);
}

TEST(BlockAllocator, ReusesTheLastFreedBlockFirst) {
  BlockAllocator allocator(3);
  const int32_t a = *allocator.allocate();
  const int32_t b = *allocator.allocate();
  allocator.free(a);
  allocator.free(b);
  EXPECT_EQ(*allocator.allocate(), b);
}

TEST(BlockAllocatorDeathTest, DoubleFreeAborts) {
  BlockAllocator allocator(1);
  const int32_t block = *allocator.allocate();
  allocator.free(block);
  EXPECT_DEATH(allocator.free(block), "double free");
}

}  // namespace
}  // namespace gossamer::engine
