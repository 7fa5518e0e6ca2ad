// Rank-based byte-pair encoding (tiktoken's `byte_pair_encode`; tools/tiktoken_reference.mjs runs the original).
//
// Contract: a RankTable is immutable after construction and safe to share between threads. Ranks are the
// token ids 0..num_ranks()-1 (fewer than 2^18); every single byte must have a rank (checked at construction).
//
// The merge loop never looks at bytes: the parts of a piece are always tokens, so "the rank of two adjacent
// parts' bytes concatenated" is a function of their two ranks, kept in a table of every split of every token
// into two tokens (merged()). That is one probe of an 8 MiB table per candidate pair, without hashing bytes
// or comparing them against the arena.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "text/huge_page_allocator.h"

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
    return find_hashed(bytes, hash(bytes));
  }
  // The same for a key whose hash(bytes) the caller already has (e.g. for a cache keyed the same way).
  // NOTE: a quarter to a half of the pieces of non-Latin text are not tokens; the filter answers most of them.
  Rank find(std::string_view bytes, uint64_t bytes_hash) const {
    if (bytes.size() == 2) return pair_rank_[static_cast<uint8_t>(bytes[0]) << 8 | static_cast<uint8_t>(bytes[1])];
    if (!token_filter_.may_contain(bytes_hash)) return kNoRank;
    return find_hashed(bytes, bytes_hash);
  }
  static uint64_t hash(std::string_view bytes);

  // The rank of bytes(left) + bytes(right), or kNoRank.
  // NOTE: most candidate pairs of a piece are not tokens (about 60% in multilingual text, 70% in CJK), and
  // their keys are spread thinly over the 8 MiB table; a 512 KiB blocked Bloom filter, which stays in L2,
  // answers most of those without touching the table.
  Rank merged(Rank left, Rank right) const {
    const uint64_t key = left | (static_cast<uint64_t>(right) << kRankBits);
    const uint64_t h = key * 0x9E3779B97F4A7C15ull;
    if (!merge_filter_.may_contain(h ^ (h >> 32))) return kNoRank;  // low bits that depend on all of the key
    for (uint64_t slot = h >> merge_shift_;; slot = (slot + 1) & merge_mask_) {
      const uint64_t entry = merges_[slot];
      if ((entry & kKeyMask) == key) return static_cast<Rank>(entry >> (2 * kRankBits));
      if (entry == kEmptyMerge) return kNoRank;
    }
  }
  Rank byte_pair_rank(uint8_t first, uint8_t second) const { return pair_rank_[first << 8 | second]; }

  // The token a 2- or 3-byte character (U+0080..U+FFFF) may start BPE as instead of its bytes, or kNoRank.
  // `prev` and `next` are the piece's bytes just before and after the character, -1 at the piece's edges.
  // Set only where that is exact: the bytes alone merge into this one token, and every token that could join
  // a part of the character to its neighbours (one ending in a proper prefix of its bytes, starting with a
  // proper suffix, or starting or ending with all of them, given the neighbouring byte: non-ASCII, ASCII or
  // none) ranks above every merge inside the character. Then those merges always win before any merge across
  // the character's edges, and merges elsewhere cannot see the difference (bpe_char_tokens.cpp). Inside words
  // of most scripts this holds, which halves to thirds the merges of non-Latin text.
  Rank char_token(char32_t cp, int prev, int next) const {
    if (cp >= char_token_.size()) return kNoRank;
    const uint32_t entry = char_token_[cp];
    const uint32_t need = (prev < 0 ? 0u : prev >= 0x80 ? 1u : 2u) | (next < 0 ? 0u : next >= 0x80 ? 4u : 8u);
    return (entry & kCharValid) && ((entry >> 24) & need) == need ? (entry & 0xFFFFFF) : kNoRank;
  }
  std::string_view bytes(Rank rank) const {
    return std::string_view(arena_).substr(offsets_[rank], offsets_[rank + 1] - offsets_[rank]);
  }
  Rank num_ranks() const { return static_cast<Rank>(offsets_.size() - 1); }
  Rank byte_rank(uint8_t byte) const { return byte_rank_[byte]; }

 private:
  // NOTE: a slot holds the key's first 8 bytes inline, so a lookup of a token of up to 8 bytes (most of them)
  // touches one cache line; longer keys compare their tail against the arena.
  Rank find_hashed(std::string_view bytes, uint64_t bytes_hash) const;
  void build_merges();
  void build_char_tokens();
  static constexpr uint32_t kCharValid = uint32_t{1} << 28;

  // A blocked Bloom filter over 64-bit hashes: one 512-bit block per key (by the hash's top bits), three bits
  // in it (by its low bits), so a query reads one cache line.
  class Filter {
   public:
    // 2^block_bits blocks of 64 bytes (the members start tiny and are rebuilt in the constructor).
    explicit Filter(int block_bits = 4) : block_bits_(block_bits), words_((size_t{1} << block_bits) * 8, 0) {}
    void add(uint64_t h) {
      uint64_t* block = &words_[(h >> (64 - block_bits_)) * 8];
      for (int i = 0; i < 3; ++i) block[((h >> (9 * i)) & 511) / 64] |= uint64_t{1} << ((h >> (9 * i)) & 63);
    }
    bool may_contain(uint64_t h) const {
      const uint64_t* block = &words_[(h >> (64 - block_bits_)) * 8];
      for (int i = 0; i < 3; ++i) {
        if (!(block[((h >> (9 * i)) & 511) / 64] >> ((h >> (9 * i)) & 63) & 1)) return false;
      }
      return true;
    }

   private:
    int block_bits_;
    std::vector<uint64_t> words_;
  };

  static constexpr int kRankBits = 18;
  static constexpr uint64_t kKeyMask = (uint64_t{1} << (2 * kRankBits)) - 1;
  static constexpr uint64_t kEmptyMerge = ~uint64_t{0};

  struct Slot {
    uint64_t prefix;  // first min(8, size) bytes, zero padded
    uint32_t size;    // 0: empty
    Rank rank;
  };
  std::string arena_;
  std::vector<uint32_t> offsets_;                     // [num_ranks + 1]
  std::vector<Slot, HugePageAllocator<Slot>> slots_;  // open addressing, linear probing, power-of-two size
  uint64_t mask_ = 0;
  Rank byte_rank_[256];
  std::vector<Rank> pair_rank_;  // [65536]: rank of each 2-byte string (BPE's first lookups), L2-resident
  Filter token_filter_;          // 256 KiB: the hashes of every token's bytes (whole-piece lookups that miss)
  // Open addressing, linear probing: left | right << 18 | merged << 36 per slot, kEmptyMerge when empty.
  std::vector<uint64_t, HugePageAllocator<uint64_t>> merges_;
  Filter merge_filter_;  // 512 KiB: the keys of merges_
  // [65536] by code point: token | edges << 24 | kCharValid, where edge bits 1/2 allow a non-ASCII/ASCII byte
  // before it and 4/8 after it; 0 where the character's bytes do not merge into one token alone.
  std::vector<uint32_t> char_token_;
  uint64_t merge_mask_ = 0;
  int merge_shift_ = 0;
};

// Appends the ranks of one pre-tokenized piece (non-empty) to `out`, exactly as tiktoken: the whole piece if
// it is a token, else repeated leftmost-lowest-rank merges of adjacent parts.
void byte_pair_encode(const RankTable& table, std::string_view piece, std::vector<int32_t>& out);

// The merge step alone, for a piece of at least 2 bytes that the caller has found is not a token itself.
void byte_pair_merge(const RankTable& table, std::string_view piece, std::vector<int32_t>& out);

}  // namespace gossamer::text
