#include "text/tokenizer_encode.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <system_error>
#include <thread>

#include "core/error.h"
#include "text/pretokenizer_scan.h"

namespace gossamer::text {

namespace {

// Direct-mapped cache of one encode call: piece bytes (pointing into the text being encoded) -> their ids,
// for pieces that are not tokens themselves and merge into at most kMaxIds tokens. Frequent words of scripts
// that BPE splits (and long runs such as CJK clauses that repeat) then cost one hash and one compare.
class PieceCache {
 public:
  static constexpr size_t kMaxIds = 6;

  // Sized to the span: one entry per 64 bytes of text, 1,024 to 16,384 entries (48 KiB to 768 KiB).
  explicit PieceCache(size_t span_bytes) {
    while (mask_ + 1 < 16384 && (mask_ + 1) * 64 < span_bytes) mask_ = mask_ * 2 + 1;
    entries_.reset(new Entry[mask_ + 1]());
  }

  // The cached ids of `piece` (whose RankTable::hash is `hash`) appended to `out`; false on a miss.
  bool lookup(std::string_view piece, uint64_t hash, std::vector<int32_t>& out) const {
    const Entry& e = entries_[hash & mask_];
    if (e.hash != hash || e.length != piece.size() || std::memcmp(e.bytes, piece.data(), piece.size()) != 0) {
      return false;
    }
    out.insert(out.end(), e.ids, e.ids + e.count);
    return true;
  }
  void store(std::string_view piece, uint64_t hash, const int32_t* ids, size_t count) {
    if (count > kMaxIds) return;
    Entry& e = entries_[hash & mask_];
    e.hash = hash;
    e.bytes = piece.data();
    e.length = piece.size();
    e.count = static_cast<uint32_t>(count);
    std::copy(ids, ids + count, e.ids);
  }

 private:
  struct Entry {
    uint64_t hash;
    const char* bytes;  // into the text of this call
    size_t length;      // 0: empty (pieces are never empty)
    uint32_t count;
    int32_t ids[kMaxIds];
  };
  size_t mask_ = 1023;
  std::unique_ptr<Entry[]> entries_;
};

}  // namespace

void encode_ordinary_span(const RankTable& ranks, std::string_view text, size_t begin, size_t end,
                          std::vector<int32_t>& out) {
  std::unique_ptr<PieceCache> cache;
  if (end - begin >= kCacheMinBytes) cache = std::make_unique<PieceCache>(end - begin);
  PieceScanner scanner(text, begin);
  size_t piece_begin = 0, piece_end = 0;
  while (scanner.next(piece_begin, piece_end) && piece_begin < end) {
    GOSSAMER_ASSERT(piece_end <= end, "a piece spans a safe split");
    const std::string_view piece = text.substr(piece_begin, piece_end - piece_begin);
    if (piece.size() == 1) {
      out.push_back(static_cast<int32_t>(ranks.byte_rank(static_cast<uint8_t>(piece[0]))));
      continue;
    }
    if (piece.size() == 2) {
      const Rank rank = ranks.byte_pair_rank(static_cast<uint8_t>(piece[0]), static_cast<uint8_t>(piece[1]));
      if (rank != kNoRank) {
        out.push_back(static_cast<int32_t>(rank));
      } else {
        out.push_back(static_cast<int32_t>(ranks.byte_rank(static_cast<uint8_t>(piece[0]))));
        out.push_back(static_cast<int32_t>(ranks.byte_rank(static_cast<uint8_t>(piece[1]))));
      }
      continue;
    }
    const uint64_t hash = RankTable::hash(piece);
    const Rank whole = ranks.find(piece, hash);
    if (whole != kNoRank) {
      out.push_back(static_cast<int32_t>(whole));
      continue;
    }
    if (cache && cache->lookup(piece, hash, out)) continue;
    const size_t first = out.size();
    byte_pair_merge(ranks, piece, out);
    if (cache) cache->store(piece, hash, out.data() + first, out.size() - first);
  }
}

std::vector<int32_t> encode_ordinary_parallel(const RankTable& ranks, std::string_view text, unsigned threads) {
  std::vector<int32_t> out;
  if (threads <= 1 || text.size() < kParallelMinBytes) {
    out.reserve(text.size() / 4 + 4);
    encode_ordinary_span(ranks, text, 0, text.size(), out);
    return out;
  }
  // Chunk starts: 0, then the first safe split at or after each nominal cut.
  std::vector<size_t> cuts = {0};
  for (unsigned k = 1; k < threads; ++k) {
    size_t at = text.size() / threads * k;
    while (at > 0 && (static_cast<uint8_t>(text[at]) & 0xC0) == 0x80) --at;  // a character boundary
    at = std::max(at, cuts.back());
    const size_t cut = next_safe_split(text, at);
    if (cut >= text.size()) break;
    if (cut > cuts.back()) cuts.push_back(cut);
  }
  cuts.push_back(text.size());
  const size_t chunks = cuts.size() - 1;
  std::vector<std::vector<int32_t>> parts(chunks);
  std::vector<std::thread> workers;
  std::vector<std::exception_ptr> errors(chunks);
  const auto run = [&](size_t c) {
    try {
      parts[c].reserve((cuts[c + 1] - cuts[c]) / 4 + 4);
      encode_ordinary_span(ranks, text, cuts[c], cuts[c + 1], parts[c]);
    } catch (...) {
      errors[c] = std::current_exception();
    }
  };
  workers.reserve(chunks - 1);
  size_t spawned = 1;
  for (; spawned < chunks; ++spawned) {
    try {
      workers.emplace_back(run, spawned);
    } catch (const std::system_error&) {
      break;  // no more threads to be had: this one takes the remaining chunks
    }
  }
  for (size_t c = spawned; c < chunks; ++c) run(c);
  run(0);
  for (auto& worker : workers) worker.join();
  for (const auto& error : errors) {
    if (error) std::rethrow_exception(error);
  }
  size_t total = 0;
  for (const auto& part : parts) total += part.size();
  out.reserve(total);
  for (const auto& part : parts) out.insert(out.end(), part.begin(), part.end());
  return out;
}

}  // namespace gossamer::text
