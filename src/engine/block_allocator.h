// BlockAllocator: hands out KV cache block ids from a free list, with reference counts.
//
// Contract: not thread-safe (the engine thread owns it). allocate() returns nullopt when no block is free
// (never throws for that). A block returns to the free list when its reference count drops to 0.
// Freeing a block that is not allocated aborts (an engine bug). Blocks freed last are reused first
// (LIFO), which keeps recently touched memory warm.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace gossamer::engine {

class BlockAllocator {
 public:
  explicit BlockAllocator(int32_t num_blocks);

  std::optional<int32_t> allocate();
  // Allocates `count` blocks or none at all.
  bool allocate_many(int32_t count, std::vector<int32_t>& out);
  void add_ref(int32_t block);
  void free(int32_t block);
  void free_all(std::span<const int32_t> blocks);

  int32_t num_blocks() const { return static_cast<int32_t>(ref_counts_.size()); }
  int32_t num_free() const { return static_cast<int32_t>(free_list_.size()); }
  int32_t num_used() const { return num_blocks() - num_free(); }
  int32_t ref_count(int32_t block) const { return ref_counts_.at(block); }
  double usage() const { return num_blocks() == 0 ? 0.0 : static_cast<double>(num_used()) / num_blocks(); }

 private:
  std::vector<int32_t> ref_counts_;  // [num_blocks]
  std::vector<int32_t> free_list_;   // stack of free block ids
};

}  // namespace gossamer::engine
