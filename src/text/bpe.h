// Rank-based byte-pair encoding (tiktoken's `byte_pair_encode`; tools/tiktoken_reference.mjs runs the original).
//
// Contract: a RankTable is immutable after construction and safe to share between threads. Ranks are the
// token ids 0..num_ranks()-1; every single byte must have a rank (checked at construction).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gossamer::text {

using Rank = uint32_t;
inline constexpr Rank kNoRank = UINT32_MAX;

class RankTable {
 public:
  // `arena` holds the bytes of every rank back to back; rank r is arena[offsets[r], offsets[r + 1]).
  // Throws gossamer::Error on a duplicate byte string or a byte with no rank.
  RankTable(std::string arena, std::vector<uint32_t> offsets);

  // The rank of exactly these bytes, or kNoRank.
  Rank find(std::string_view bytes) const {
    if (bytes.size() == 2) return pair_rank_[static_cast<uint8_t>(bytes[0]) << 8 | static_cast<uint8_t>(bytes[1])];
    return find_hashed(bytes);
  }
  std::string_view bytes(Rank rank) const {
    return std::string_view(arena_).substr(offsets_[rank], offsets_[rank + 1] - offsets_[rank]);
  }
  Rank num_ranks() const { return static_cast<Rank>(offsets_.size() - 1); }
  Rank byte_rank(uint8_t byte) const { return byte_rank_[byte]; }

 private:
  // NOTE: a slot holds the key's first 8 bytes inline, so a lookup of a token of up to 8 bytes (most of them)
  // touches one cache line; longer keys compare their tail against the arena.
  Rank find_hashed(std::string_view bytes) const;

  struct Slot {
    uint64_t prefix;  // first min(8, size) bytes, zero padded
    uint32_t size;    // 0: empty
    Rank rank;
  };
  std::string arena_;
  std::vector<uint32_t> offsets_;  // [num_ranks + 1]
  std::vector<Slot> slots_;        // open addressing, linear probing, power-of-two size
  uint64_t mask_ = 0;
  Rank byte_rank_[256];
  std::vector<Rank> pair_rank_;  // [65536]: rank of each 2-byte string (BPE's first lookups), L2-resident
};

// Appends the ranks of one pre-tokenized piece (non-empty) to `out`, exactly as tiktoken: the whole piece if
// it is a token, else repeated leftmost-lowest-rank merges of adjacent parts.
void byte_pair_encode(const RankTable& table, std::string_view piece, std::vector<int32_t>& out);

}  // namespace gossamer::text
