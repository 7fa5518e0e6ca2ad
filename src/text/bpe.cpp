#include "text/bpe.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <queue>
#include <utility>

#include "core/error.h"

namespace gossamer::text {

namespace {

// The first min(8, size) bytes of `bytes`, zero padded.
inline uint64_t load_prefix(std::string_view bytes) {
  uint64_t word = 0;
  std::memcpy(&word, bytes.data(), bytes.size() < 8 ? bytes.size() : 8);
  return word;
}

// 64-bit hash of a byte string whose prefix word is `prefix`: 8-byte words folded with a multiply-xorshift.
inline uint64_t hash_bytes(std::string_view bytes, uint64_t prefix) {
  constexpr uint64_t kMul = 0x9E3779B97F4A7C15ull;
  uint64_t h = (bytes.size() * kMul) ^ prefix;
  for (size_t i = 8; i < bytes.size(); i += 8) {
    uint64_t word = 0;
    std::memcpy(&word, bytes.data() + i, bytes.size() - i < 8 ? bytes.size() - i : 8);
    h = (h * kMul) ^ word;
    h ^= h >> 29;
  }
  h *= 0xBF58476D1CE4E5B9ull;
  return h ^ (h >> 31);
}

// Pieces at least this long use the heap variant (O(n log n)); shorter ones the reference quadratic loop.
constexpr size_t kLargePiece = 128;

void merge_small(const RankTable& table, std::string_view piece, std::vector<int32_t>& out) {
  // parts[i] = (start of part i, rank of part i merged with part i+1); two sentinels at the end.
  struct Part {
    uint32_t start;
    Rank rank;
  };
  Part parts[kLargePiece + 1];
  size_t num_parts = 0;
  const size_t n = piece.size();
  Rank min_rank = kNoRank;
  size_t min_index = 0;
  for (size_t i = 0; i + 1 < n; ++i) {
    const Rank rank = table.find(piece.substr(i, 2));
    if (rank < min_rank) {
      min_rank = rank;
      min_index = i;
    }
    parts[num_parts++] = {static_cast<uint32_t>(i), rank};
  }
  parts[num_parts++] = {static_cast<uint32_t>(n - 1), kNoRank};
  parts[num_parts++] = {static_cast<uint32_t>(n), kNoRank};

  const auto rank_after_merge = [&](size_t i) {
    if (i + 3 >= num_parts) return kNoRank;
    return table.find(piece.substr(parts[i].start, parts[i + 3].start - parts[i].start));
  };
  while (min_rank != kNoRank) {
    const size_t i = min_index;
    if (i > 0) parts[i - 1].rank = rank_after_merge(i - 1);
    parts[i].rank = rank_after_merge(i);
    std::memmove(&parts[i + 1], &parts[i + 2], (num_parts - i - 2) * sizeof(Part));
    --num_parts;
    min_rank = kNoRank;
    for (size_t j = 0; j + 1 < num_parts; ++j) {
      if (parts[j].rank < min_rank) {
        min_rank = parts[j].rank;
        min_index = j;
      }
    }
  }
  for (size_t i = 0; i + 1 < num_parts; ++i) {
    const Rank rank = table.find(piece.substr(parts[i].start, parts[i + 1].start - parts[i].start));
    GOSSAMER_ASSERT(rank != kNoRank, "BPE produced a part that is not a token");
    out.push_back(static_cast<int32_t>(rank));
  }
}

// Same merges as merge_small, ordered by a min-heap of (rank, start) with lazy deletion, as tiktoken's
// `_byte_pair_merge_large`. Nodes are indexed by their start byte; node n is the end sentinel.
void merge_large(const RankTable& table, std::string_view piece, std::vector<int32_t>& out) {
  const uint32_t n = static_cast<uint32_t>(piece.size());
  std::vector<uint32_t> next(n + 1), prev(n + 1);
  std::vector<Rank> pair_rank(n + 1, kNoRank);
  std::vector<uint8_t> alive(n + 1, 1);
  using Entry = std::pair<Rank, uint32_t>;
  std::vector<Entry> heap_storage;
  heap_storage.reserve(n);
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap(std::greater<Entry>(),
                                                                           std::move(heap_storage));
  for (uint32_t i = 0; i <= n; ++i) {
    next[i] = i + 1;
    prev[i] = i == 0 ? 0 : i - 1;
  }
  const auto pair_rank_at = [&](uint32_t i) {
    if (i >= n || next[i] >= n) return kNoRank;
    const uint32_t end = next[next[i]];
    return table.find(piece.substr(i, end - i));
  };
  for (uint32_t i = 0; i + 1 < n; ++i) {
    pair_rank[i] = table.find(piece.substr(i, 2));
    if (pair_rank[i] != kNoRank) heap.push({pair_rank[i], i});
  }
  while (!heap.empty()) {
    const auto [rank, i] = heap.top();
    heap.pop();
    if (!alive[i] || pair_rank[i] != rank) continue;
    // merge node i with its successor
    const uint32_t j = next[i];
    alive[j] = 0;
    next[i] = next[j];
    prev[next[j]] = i;
    pair_rank[i] = pair_rank_at(i);
    if (pair_rank[i] != kNoRank) heap.push({pair_rank[i], i});
    if (i > 0) {
      const uint32_t p = prev[i];
      pair_rank[p] = pair_rank_at(p);
      if (pair_rank[p] != kNoRank) heap.push({pair_rank[p], p});
    }
  }
  for (uint32_t i = 0; i < n; i = next[i]) {
    const Rank rank = table.find(piece.substr(i, next[i] - i));
    GOSSAMER_ASSERT(rank != kNoRank, "BPE produced a part that is not a token");
    out.push_back(static_cast<int32_t>(rank));
  }
}

}  // namespace

RankTable::RankTable(std::string arena, std::vector<uint32_t> offsets)
    : arena_(std::move(arena)), offsets_(std::move(offsets)) {
  GOSSAMER_CHECK(offsets_.size() >= 2 && offsets_.back() == arena_.size(), "rank table: bad offsets");
  const size_t num = offsets_.size() - 1;
  size_t capacity = 16;
  while (capacity < num * 2 + 2) capacity *= 2;
  slots_.assign(capacity, Slot{0, 0, kNoRank});
  mask_ = capacity - 1;
  std::fill(std::begin(byte_rank_), std::end(byte_rank_), kNoRank);
  pair_rank_.assign(65536, kNoRank);
  for (Rank rank = 0; rank < num; ++rank) {
    const std::string_view token = bytes(rank);
    GOSSAMER_CHECK(!token.empty(), "rank table: rank ", rank, " has no bytes");
    GOSSAMER_CHECK(find_hashed(token) == kNoRank, "rank table: duplicate token bytes at rank ", rank);
    const uint64_t prefix = load_prefix(token);
    uint64_t slot = hash_bytes(token, prefix) & mask_;
    while (slots_[slot].size != 0) slot = (slot + 1) & mask_;
    slots_[slot] = Slot{prefix, static_cast<uint32_t>(token.size()), rank};
    if (token.size() == 1) byte_rank_[static_cast<uint8_t>(token[0])] = rank;
    if (token.size() == 2) pair_rank_[static_cast<uint8_t>(token[0]) << 8 | static_cast<uint8_t>(token[1])] = rank;
  }
  for (int byte = 0; byte < 256; ++byte) {
    GOSSAMER_CHECK(byte_rank_[byte] != kNoRank, "rank table: byte ", byte, " has no rank");
  }
}

Rank RankTable::find_hashed(std::string_view key) const {
  const uint64_t prefix = load_prefix(key);
  const auto size = static_cast<uint32_t>(key.size());
  for (uint64_t slot = hash_bytes(key, prefix) & mask_;; slot = (slot + 1) & mask_) {
    const Slot& s = slots_[slot];
    if (s.size == 0) return kNoRank;
    if (s.size == size && s.prefix == prefix &&
        (size <= 8 || std::memcmp(arena_.data() + offsets_[s.rank] + 8, key.data() + 8, size - 8) == 0)) {
      return s.rank;
    }
  }
}

void byte_pair_encode(const RankTable& table, std::string_view piece, std::vector<int32_t>& out) {
  GOSSAMER_ASSERT(!piece.empty());
  if (piece.size() == 1) {
    out.push_back(static_cast<int32_t>(table.byte_rank(static_cast<uint8_t>(piece[0]))));
    return;
  }
  const Rank whole = table.find(piece);
  if (whole != kNoRank) {
    out.push_back(static_cast<int32_t>(whole));
    return;
  }
  if (piece.size() < kLargePiece) {
    merge_small(table, piece, out);
  } else {
    merge_large(table, piece, out);
  }
}

}  // namespace gossamer::text
