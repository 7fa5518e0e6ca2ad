// RankTable::build_char_tokens: which 2- and 3-byte characters BPE may start from as one token (bpe.h).
//
// Why it is exact. Take a character c with bytes B whose BPE alone merges into one token T, M the highest rank
// of those merges. While c is split, every pair joining one of its parts to a neighbour is a token ending in a
// proper prefix of B or starting with a proper suffix of B (condition A: all rank above M), and some pair
// inside c ranks at most M (the merges of B alone happen in the same order here). So the inside merges always
// win first, and all merges before c is whole rank at most M. Starting from T instead, the pairs next to T are
// tokens that end or start with B (condition C: above M), so none of them is taken while a merge of rank at
// most M is waiting elsewhere: both runs make the same merges elsewhere until c is whole, and are then in the
// same state. By induction, any set of such characters can start as their tokens.
#include <algorithm>

#include "core/error.h"
#include "text/bpe.h"
#include "text/utf8.h"

namespace gossamer::text {

namespace {

// The code point of a whole 2- or 3-byte character, or 0 if `bytes` is not exactly one.
char32_t whole_char(std::string_view bytes) {
  if (bytes.size() < 2 || bytes.size() > 3) return 0;
  const Utf8Step step = utf8_step(bytes);
  if (step.kind != Utf8Step::Kind::kChar || step.length != bytes.size()) return 0;
  const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
  return bytes.size() == 2 ? (char32_t(p[0] & 0x1F) << 6) | (p[1] & 0x3F)
                           : (char32_t(p[0] & 0x0F) << 12) | (char32_t(p[1] & 0x3F) << 6) | (p[2] & 0x3F);
}

}  // namespace

void RankTable::build_char_tokens() {
  // For each key, the lowest rank of a token longer than it that ends (end*) or starts (start*) with it,
  // split by the byte that comes before (after) the key in the token: [0] ASCII, [1] non-ASCII. Keys: one or
  // two bytes, or a whole 2-3 byte character by code point (left: the token ends with it; right: starts).
  std::vector<Rank> end1[2], start1[2], end2[2], start2[2], left[2], right[2];
  for (int h = 0; h < 2; ++h) {
    end1[h].assign(256, kNoRank);
    start1[h].assign(256, kNoRank);
    end2[h].assign(65536, kNoRank);
    start2[h].assign(65536, kNoRank);
    left[h].assign(65536, kNoRank);
    right[h].assign(65536, kNoRank);
  }
  const auto lower = [](Rank& slot, Rank rank) { slot = std::min(slot, rank); };
  for (Rank rank = 0; rank < num_ranks(); ++rank) {
    const std::string_view t = bytes(rank);
    const auto* p = reinterpret_cast<const uint8_t*>(t.data());
    const size_t n = t.size();
    const auto high = [&](size_t i) { return p[i] >= 0x80 ? 1 : 0; };
    if (n >= 2) {
      lower(end1[high(n - 2)][p[n - 1]], rank);
      lower(start1[high(1)][p[0]], rank);
    }
    if (n >= 3) {
      lower(end2[high(n - 3)][p[n - 2] << 8 | p[n - 1]], rank);
      lower(start2[high(2)][p[0] << 8 | p[1]], rank);
    }
    for (const size_t k : {size_t{2}, size_t{3}}) {
      if (n <= k) continue;
      if (const char32_t cp = whole_char(t.substr(n - k))) lower(left[high(n - k - 1)][cp], rank);
      if (const char32_t cp = whole_char(t.substr(0, k))) lower(right[high(k)][cp], rank);
    }
  }
  char_token_.assign(65536, 0);
  for (char32_t cp = 0x80; cp < 0x10000; ++cp) {
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;
    std::string b;
    append_utf8(b, cp);
    const auto* p = reinterpret_cast<const uint8_t*>(b.data());
    // BPE of the bytes alone, with the highest rank it merges at.
    std::vector<Rank> parts;
    for (const uint8_t byte : b) parts.push_back(byte_rank(byte));
    Rank highest = 0;
    while (parts.size() > 1) {
      Rank best = kNoRank;
      size_t at = 0;
      for (size_t i = 0; i + 1 < parts.size(); ++i) {
        const Rank rank = merged(parts[i], parts[i + 1]);
        if (rank < best) {
          best = rank;
          at = i;
        }
      }
      if (best == kNoRank) break;
      parts[at] = best;
      parts.erase(parts.begin() + static_cast<std::ptrdiff_t>(at) + 1);
      highest = std::max(highest, best);
    }
    if (parts.size() != 1) continue;
    const size_t k = b.size();
    uint32_t edges = 0;
    for (int h = 0; h < 2; ++h) {
      bool before = end1[h][p[0]] > highest && left[h][cp] > highest;
      bool after = start1[h][p[k - 1]] > highest && right[h][cp] > highest;
      if (k == 3) {
        before = before && end2[h][p[0] << 8 | p[1]] > highest;
        after = after && start2[h][p[1] << 8 | p[2]] > highest;
      }
      // bits: 1 non-ASCII before, 2 ASCII before, 4 non-ASCII after, 8 ASCII after
      if (before) edges |= h == 1 ? 1u : 2u;
      if (after) edges |= h == 1 ? 4u : 8u;
    }
    char_token_[cp] = parts[0] | edges << 24 | kCharValid;
  }
}

}  // namespace gossamer::text
