#include "engine/block_allocator.h"

#include <algorithm>

#include "core/error.h"

namespace gossamer::engine {

BlockAllocator::BlockAllocator(int32_t num_blocks, int32_t cache_block_size) : cache_block_size_(cache_block_size) {
  GOSSAMER_CHECK(num_blocks >= 0, "BlockAllocator: negative block count ", num_blocks);
  GOSSAMER_CHECK(cache_block_size >= 0, "BlockAllocator: negative cache block size ", cache_block_size);
  ref_counts_.assign(num_blocks, 0);
  free_list_.reserve(num_blocks);
  // NOTE: pushed in reverse so that the first allocations get ids 0, 1, 2, ...
  for (int32_t block = num_blocks - 1; block >= 0; --block) free_list_.push_back(block);
  if (caching()) {
    hashes_.assign(num_blocks, 0);
    has_hash_.assign(num_blocks, 0);
    tokens_.assign(static_cast<size_t>(num_blocks) * cache_block_size_, 0);
    prev_.assign(num_blocks + 1, num_blocks);
    next_.assign(num_blocks + 1, num_blocks);
  }
}

void BlockAllocator::lru_push_back(int32_t block) {
  const int32_t sentinel = num_blocks(), last = prev_[sentinel];
  prev_[block] = last;
  next_[block] = sentinel;
  next_[last] = block;
  prev_[sentinel] = block;
  ++num_cached_free_;
}

void BlockAllocator::lru_unlink(int32_t block) {
  next_[prev_[block]] = next_[block];
  prev_[next_[block]] = prev_[block];
  prev_[block] = next_[block] = num_blocks();
  --num_cached_free_;
}

void BlockAllocator::drop_hash(int32_t block) {
  hash_to_block_.erase(hashes_[block]);
  has_hash_[block] = 0;
}

std::optional<int32_t> BlockAllocator::allocate() {
  int32_t block = -1;
  if (!free_list_.empty()) {
    block = free_list_.back();
    free_list_.pop_back();
  } else if (num_cached_free_ > 0) {  // evict the least recently freed cached block
    block = next_[num_blocks()];
    lru_unlink(block);
    drop_hash(block);
  } else {
    return std::nullopt;
  }
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
  if (--ref_counts_[block] > 0) return;
  if (caching() && has_hash_[block]) {
    lru_push_back(block);
  } else {
    free_list_.push_back(block);
  }
}

void BlockAllocator::free_all(std::span<const int32_t> blocks) {
  for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) free(*it);
}

std::optional<int32_t> BlockAllocator::lookup(uint64_t hash, std::span<const int32_t> tokens) const {
  if (!caching()) return std::nullopt;
  GOSSAMER_ASSERT(static_cast<int32_t>(tokens.size()) == cache_block_size_, "lookup of a partial block");
  const auto found = hash_to_block_.find(hash);
  if (found == hash_to_block_.end()) return std::nullopt;
  // NOTE: the tokens are compared too, so a 64-bit hash collision within one block costs a miss, not a
  // wrong answer.
  const auto stored = tokens_.begin() + static_cast<ptrdiff_t>(found->second) * cache_block_size_;
  if (!std::equal(tokens.begin(), tokens.end(), stored)) return std::nullopt;
  return found->second;
}

void BlockAllocator::acquire(int32_t block) {
  GOSSAMER_ASSERT(caching() && block >= 0 && block < num_blocks() && has_hash_[block], "acquire of an uncached block ",
                  block);
  if (ref_counts_[block]++ == 0) lru_unlink(block);
}

void BlockAllocator::cache(int32_t block, uint64_t hash, std::span<const int32_t> tokens) {
  if (!caching()) return;
  GOSSAMER_ASSERT(block >= 0 && block < num_blocks() && ref_counts_[block] > 0, "cache() of a free block ", block);
  GOSSAMER_ASSERT(static_cast<int32_t>(tokens.size()) == cache_block_size_, "cache() of a partial block");
  if (has_hash_[block] || hash_to_block_.count(hash) != 0) return;
  hash_to_block_.emplace(hash, block);
  hashes_[block] = hash;
  has_hash_[block] = 1;
  std::copy(tokens.begin(), tokens.end(), tokens_.begin() + static_cast<ptrdiff_t>(block) * cache_block_size_);
}

void BlockAllocator::reset_cache() {
  if (!caching()) return;
  while (num_cached_free_ > 0) {
    const int32_t block = next_[num_blocks()];
    lru_unlink(block);
    free_list_.push_back(block);
  }
  hash_to_block_.clear();
  std::fill(has_hash_.begin(), has_hash_.end(), 0);
}

}  // namespace gossamer::engine
