#include "engine/block_allocator.h"

#include "core/error.h"

namespace gossamer::engine {

BlockAllocator::BlockAllocator(int32_t num_blocks) {
  GOSSAMER_CHECK(num_blocks >= 0, "BlockAllocator: negative block count ", num_blocks);
  ref_counts_.assign(num_blocks, 0);
  free_list_.reserve(num_blocks);
  // NOTE: pushed in reverse so that the first allocations get ids 0, 1, 2, ...
  for (int32_t block = num_blocks - 1; block >= 0; --block) free_list_.push_back(block);
}

std::optional<int32_t> BlockAllocator::allocate() {
  if (free_list_.empty()) return std::nullopt;
  const int32_t block = free_list_.back();
  free_list_.pop_back();
  ref_counts_[block] = 1;
  return block;
}

bool BlockAllocator::allocate_many(int32_t count, std::vector<int32_t>& out) {
  if (count > num_free()) return false;
  for (int32_t i = 0; i < count; ++i) out.push_back(*allocate());
  return true;
}

void BlockAllocator::add_ref(int32_t block) {
  GOSSAMER_ASSERT(block >= 0 && block < num_blocks() && ref_counts_[block] > 0, "add_ref on a free block ", block);
  ++ref_counts_[block];
}

void BlockAllocator::free(int32_t block) {
  GOSSAMER_ASSERT(block >= 0 && block < num_blocks() && ref_counts_[block] > 0, "double free of block ", block);
  if (--ref_counts_[block] == 0) free_list_.push_back(block);
}

void BlockAllocator::free_all(std::span<const int32_t> blocks) {
  for (const int32_t block : blocks) free(block);
}

}  // namespace gossamer::engine
