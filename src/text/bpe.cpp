#include "text/bpe.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <queue>
#include <utility>

#include "core/error.h"
#include "text/utf8.h"

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

// The parts BPE starts from: one per byte, except that a 2- or 3-byte character with a char_token starts as
// that token. Fills token[0, m) and returns m; `single[i]` says whether part i is one byte (whose pairs the
// direct 2-byte table answers).
size_t initial_parts(const RankTable& table, std::string_view piece, Rank* token, uint8_t* single) {
  const auto* bytes = reinterpret_cast<const uint8_t*>(piece.data());
  const size_t n = piece.size();
  size_t m = 0;
  for (size_t i = 0; i < n;) {
    const uint8_t b = bytes[i];
    if (b >= 0xC2 && b < 0xF0) {  // a 2- or 3-byte lead; the piece may be any bytes, so check the character
      const Utf8Step step = utf8_step(piece.substr(i, 3));
      if (step.kind == Utf8Step::Kind::kChar) {
        const char32_t cp = step.length == 2 ? (char32_t(b & 0x1F) << 6) | (bytes[i + 1] & 0x3F)
                                             : (char32_t(b & 0x0F) << 12) | (char32_t(bytes[i + 1] & 0x3F) << 6) |
                                                   (bytes[i + 2] & 0x3F);
        const int prev = i > 0 ? bytes[i - 1] : -1;
        const int next = i + step.length < n ? bytes[i + step.length] : -1;
        const Rank whole = table.char_token(cp, prev, next);
        if (whole != kNoRank) {
          token[m] = whole;
          single[m++] = 0;
          i += step.length;
          continue;
        }
      }
    }
    token[m] = table.byte_rank(b);
    single[m++] = 1;
    ++i;
  }
  return m;
}

// The rank of merging parts i and i + 1.
inline Rank pair_rank_of(const RankTable& table, std::string_view piece, const Rank* token, const uint8_t* single,
                         const uint32_t* start, size_t i) {
  if (single[i] && single[i + 1]) {
    return table.byte_pair_rank(static_cast<uint8_t>(piece[start[i]]), static_cast<uint8_t>(piece[start[i + 1]]));
  }
  return table.merged(token[i], token[i + 1]);
}

// tiktoken's `_byte_pair_merge` over ranks: part i is token[i], and pair[i] the rank of merging it with part
// i+1; repeatedly merge the lowest such rank, leftmost on ties. No allocation: the parts live on the stack.
// NOTE: the minimum is taken over keys pair << 7 | index (31 bits), so that one min-reduction (which the
// compiler vectorises) finds both the lowest rank and, on ties, the leftmost part.
void merge_small(const RankTable& table, std::string_view piece, std::vector<int32_t>& out) {
  static_assert(kLargePiece <= 128, "part indices must fit the key's 7 low bits");
  constexpr int32_t kNone = (1 << 24) - 1;  // above every rank (ranks < 2^18)
  Rank token[kLargePiece];
  int32_t pair[kLargePiece];
  uint8_t single[kLargePiece];
  uint32_t start[kLargePiece];
  const size_t n = initial_parts(table, piece, token, single);
  for (size_t i = 0, at = 0; i < n; at += single[i] ? 1 : table.bytes(token[i]).size(), ++i) {
    start[i] = static_cast<uint32_t>(at);
  }
  const auto to_pair = [](Rank rank) { return rank == kNoRank ? kNone : static_cast<int32_t>(rank); };
  for (size_t i = 0; i + 1 < n; ++i) pair[i] = to_pair(pair_rank_of(table, piece, token, single, start, i));
  pair[n - 1] = kNone;
  size_t num_parts = n;
  while (num_parts > 1) {
    int32_t key = INT32_MAX;
    for (size_t j = 0; j + 1 < num_parts; ++j) key = std::min(key, pair[j] << 7 | static_cast<int32_t>(j));
    const int32_t rank = key >> 7;
    if (rank == kNone) break;
    const size_t i = static_cast<size_t>(key & 127);
    token[i] = static_cast<Rank>(rank);
    const size_t tail = num_parts - i - 2;
    std::memmove(&token[i + 1], &token[i + 2], tail * sizeof(Rank));
    std::memmove(&pair[i + 1], &pair[i + 2], tail * sizeof(int32_t));
    --num_parts;
    pair[i] = i + 1 < num_parts ? to_pair(table.merged(token[i], token[i + 1])) : kNone;
    if (i > 0) pair[i - 1] = to_pair(table.merged(token[i - 1], token[i]));
  }
  for (size_t i = 0; i < num_parts; ++i) out.push_back(static_cast<int32_t>(token[i]));
}

// Same merges as merge_small, ordered by a min-heap of (rank, part index) with lazy deletion.
void merge_large(const RankTable& table, std::string_view piece, std::vector<int32_t>& out) {
  std::vector<Rank> token(piece.size());
  std::vector<uint8_t> single(piece.size());
  const uint32_t n = static_cast<uint32_t>(initial_parts(table, piece, token.data(), single.data()));
  std::vector<uint32_t> start(n), next(n), prev(n);
  std::vector<Rank> pair_rank(n, kNoRank);
  std::vector<uint8_t> alive(n, 1);
  using Entry = std::pair<Rank, uint32_t>;
  std::vector<Entry> heap_storage;
  heap_storage.reserve(n);
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap(std::greater<Entry>(),
                                                                           std::move(heap_storage));
  for (uint32_t i = 0, at = 0; i < n; at += single[i] ? 1 : static_cast<uint32_t>(table.bytes(token[i]).size()), ++i) {
    start[i] = at;
    next[i] = i + 1;
    prev[i] = i == 0 ? 0 : i - 1;
  }
  for (uint32_t i = 0; i + 1 < n; ++i) {
    pair_rank[i] = pair_rank_of(table, piece, token.data(), single.data(), start.data(), i);
    if (pair_rank[i] != kNoRank) heap.push({pair_rank[i], i});
  }
  const auto pair_rank_at = [&](uint32_t i) { return next[i] < n ? table.merged(token[i], token[next[i]]) : kNoRank; };
  while (!heap.empty()) {
    const auto [rank, i] = heap.top();
    heap.pop();
    if (!alive[i] || pair_rank[i] != rank) continue;
    // merge node i with its successor
    const uint32_t j = next[i];
    alive[j] = 0;
    token[i] = rank;
    next[i] = next[j];
    if (next[j] < n) prev[next[j]] = i;
    pair_rank[i] = pair_rank_at(i);
    if (pair_rank[i] != kNoRank) heap.push({pair_rank[i], i});
    if (i > 0) {
      const uint32_t p = prev[i];
      pair_rank[p] = pair_rank_at(p);
      if (pair_rank[p] != kNoRank) heap.push({pair_rank[p], p});
    }
  }
  for (uint32_t i = 0; i < n; i = next[i]) out.push_back(static_cast<int32_t>(token[i]));
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
  token_filter_ = Filter(12);
  pair_rank_.assign(65536, kNoRank);
  for (Rank rank = 0; rank < num; ++rank) {
    const std::string_view token = bytes(rank);
    GOSSAMER_CHECK(!token.empty(), "rank table: rank ", rank, " has no bytes");
    GOSSAMER_CHECK(find(token) == kNoRank, "rank table: duplicate token bytes at rank ", rank);
    const uint64_t prefix = load_prefix(token);
    const uint64_t h = hash_bytes(token, prefix);
    token_filter_.add(h);
    uint64_t slot = h & mask_;
    while (slots_[slot].size != 0) slot = (slot + 1) & mask_;
    slots_[slot] = Slot{prefix, static_cast<uint32_t>(token.size()), rank};
    if (token.size() == 1) byte_rank_[static_cast<uint8_t>(token[0])] = rank;
    if (token.size() == 2) pair_rank_[static_cast<uint8_t>(token[0]) << 8 | static_cast<uint8_t>(token[1])] = rank;
  }
  for (int byte = 0; byte < 256; ++byte) {
    GOSSAMER_CHECK(byte_rank_[byte] != kNoRank, "rank table: byte ", byte, " has no rank");
  }
  build_merges();
  build_char_tokens();
}

void RankTable::build_merges() {
  const Rank num = num_ranks();
  GOSSAMER_CHECK(num < (Rank{1} << kRankBits), "rank table: ", num, " ranks do not fit ", kRankBits, " bits");
  // Every way to cut every token into two tokens.
  // NOTE: that is 2.4 million lookups, most of them cache misses; hashing all cuts of a token first and
  // prefetching their slots lets the misses overlap (about 3x faster loading).
  std::vector<uint64_t> entries;
  entries.reserve(num * 3);
  std::vector<uint64_t> prefix_hash, suffix_hash;
  for (Rank rank = 0; rank < num; ++rank) {
    const std::string_view token = bytes(rank);
    prefix_hash.resize(token.size());
    suffix_hash.resize(token.size());
    for (size_t cut = 1; cut < token.size(); ++cut) {
      prefix_hash[cut] = hash(token.substr(0, cut));
      suffix_hash[cut] = hash(token.substr(cut));
      __builtin_prefetch(&slots_[prefix_hash[cut] & mask_]);
      __builtin_prefetch(&slots_[suffix_hash[cut] & mask_]);
    }
    for (size_t cut = 1; cut < token.size(); ++cut) {
      const Rank left = find(token.substr(0, cut), prefix_hash[cut]);
      if (left == kNoRank) continue;
      const Rank right = find(token.substr(cut), suffix_hash[cut]);
      if (right == kNoRank) continue;
      entries.push_back(left | static_cast<uint64_t>(right) << kRankBits |
                        static_cast<uint64_t>(rank) << (2 * kRankBits));
    }
  }
  int bits = 4;
  while ((uint64_t{1} << bits) < entries.size() * 2) ++bits;
  merges_.assign(uint64_t{1} << bits, kEmptyMerge);
  merge_mask_ = (uint64_t{1} << bits) - 1;
  merge_shift_ = 64 - bits;
  merge_filter_ = Filter(13);
  for (const uint64_t entry : entries) {
    const uint64_t key = entry & kKeyMask;
    const uint64_t h = key * 0x9E3779B97F4A7C15ull;
    merge_filter_.add(h ^ (h >> 32));
    uint64_t slot = h >> merge_shift_;
    while (merges_[slot] != kEmptyMerge) slot = (slot + 1) & merge_mask_;
    merges_[slot] = entry;
  }
}

uint64_t RankTable::hash(std::string_view bytes) {
  return hash_bytes(bytes, load_prefix(bytes));
}

Rank RankTable::find_hashed(std::string_view key, uint64_t key_hash) const {
  const uint64_t prefix = load_prefix(key);
  const auto size = static_cast<uint32_t>(key.size());
  for (uint64_t slot = key_hash & mask_;; slot = (slot + 1) & mask_) {
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
  byte_pair_merge(table, piece, out);
}

void byte_pair_merge(const RankTable& table, std::string_view piece, std::vector<int32_t>& out) {
  GOSSAMER_ASSERT(piece.size() >= 2);
  if (piece.size() < kLargePiece) {
    merge_small(table, piece, out);
  } else {
    merge_large(table, piece, out);
  }
}

}  // namespace gossamer::text
