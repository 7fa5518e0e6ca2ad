// Prefix-cache block hashes: a full KV block is named by a hash of its token ids and of the hash of the
// block before it, so equal hashes mean equal prefixes (up to 64-bit collisions, which the allocator
// turns into misses by also comparing the block's own tokens).
//
// Contract: pure functions; the same tokens give the same hashes in every process (no random seed).
#pragma once

#include <cstdint>
#include <span>

namespace gossamer::engine {

// The parent hash of a sequence's first block.
inline constexpr uint64_t kRootBlockHash = 0x6a09e667f3bcc908ULL;

// tokens: [block_size] the block's token ids.
uint64_t hash_block(uint64_t parent, std::span<const int32_t> tokens);

}  // namespace gossamer::engine
