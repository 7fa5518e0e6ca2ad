// BlockAllocator: hands out KV cache block ids from a free list, with reference counts, and (when
// constructed with a block size) keeps a prefix cache of full, computed blocks keyed by a hash chain.
//
// Contract: not thread-safe (the engine thread owns it). allocate() returns nullopt when no block is free
// (never throws for that). A block returns to the free pool when its reference count drops to 0.
// Freeing a block that is not allocated aborts (an engine bug).
//
// Free blocks are of two kinds. Uncached ones sit on a stack: blocks freed last are reused first (LIFO),
// which keeps recently touched memory warm. Cached ones (a block that was given a hash with cache())
// keep their hash and contents and sit on a least-recently-freed list; allocate() takes one of them,
// dropping its hash, only when no uncached block is left. num_free() counts both kinds: every free block
// can be allocated. A cached block is found with lookup() and taken with acquire() (which also works on
// a block in use: it is then shared).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

namespace gossamer::engine {

class BlockAllocator {
 public:
  // cache_block_size > 0 turns the prefix cache on for blocks of that many tokens.
  explicit BlockAllocator(int32_t num_blocks, int32_t cache_block_size = 0);

  std::optional<int32_t> allocate();
  // Allocates `count` blocks or none at all.
  bool allocate_many(int32_t count, std::vector<int32_t>& out);
  void add_ref(int32_t block);
  void free(int32_t block);
  // Frees in reverse order, so that a sequence's last blocks are the first cached ones to be evicted.
  void free_all(std::span<const int32_t> blocks);

  // ---- prefix cache (no-ops / nullopt when off) ----
  bool caching() const { return cache_block_size_ > 0; }
  // The cached block holding `tokens` ([cache_block_size] ids) under `hash`, or nullopt. No reference taken.
  std::optional<int32_t> lookup(uint64_t hash, std::span<const int32_t> tokens) const;
  // Takes a reference to a block returned by lookup() (free or in use).
  void acquire(int32_t block);
  // Records that in-use `block` holds `tokens` under `hash`. When another block already holds that hash
  // the call changes nothing (the block stays uncached); a block that already has a hash keeps it.
  void cache(int32_t block, uint64_t hash, std::span<const int32_t> tokens);
  // Drops every hash (blocks in use stay in use; cached free blocks become plain free blocks).
  void reset_cache();
  bool is_cached(int32_t block) const { return has_hash_.at(static_cast<size_t>(block)) != 0; }
  int32_t num_cached() const { return static_cast<int32_t>(hash_to_block_.size()); }

  int32_t num_blocks() const { return static_cast<int32_t>(ref_counts_.size()); }
  int32_t num_free() const { return static_cast<int32_t>(free_list_.size()) + num_cached_free_; }
  int32_t num_used() const { return num_blocks() - num_free(); }
  int32_t ref_count(int32_t block) const { return ref_counts_.at(block); }
  double usage() const { return num_blocks() == 0 ? 0.0 : static_cast<double>(num_used()) / num_blocks(); }

 private:
  void lru_push_back(int32_t block);
  void lru_unlink(int32_t block);
  void drop_hash(int32_t block);

  int32_t cache_block_size_ = 0;
  std::vector<int32_t> ref_counts_;  // [num_blocks]
  std::vector<int32_t> free_list_;   // stack of free uncached block ids

  // Prefix cache state, sized only when caching.
  std::unordered_map<uint64_t, int32_t> hash_to_block_;
  std::vector<uint64_t> hashes_;   // [num_blocks], valid where has_hash_
  std::vector<uint8_t> has_hash_;  // [num_blocks]
  std::vector<int32_t> tokens_;    // [num_blocks, cache_block_size] the cached blocks' token ids
  // Free cached blocks, least recently freed first: an intrusive list through prev_/next_, where
  // index num_blocks is the sentinel.
  std::vector<int32_t> prev_, next_;  // [num_blocks + 1]
  int32_t num_cached_free_ = 0;
};

}  // namespace gossamer::engine
