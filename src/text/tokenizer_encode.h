// Ordinary-text encoding (no special tokens): the hand-written pre-tokenizer (pretokenizer_scan.h), then BPE
// per piece (bpe.h), with a cache of the pieces that needed merges; and the same split over threads for long
// inputs. Used by the o200k_harmony Tokenizer (tokenizer.cpp).
//
// Contract: `text` must be valid UTF-8 (callers validate once). Both functions give exactly the ids of
// tiktoken's encode_ordinary, whatever the thread count. They allocate only the output (and, for spans of
// kCacheMinBytes or more, the cache; for the parallel one, one output per chunk).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "text/bpe.h"

namespace gossamer::text {

// Spans shorter than this are encoded without the piece cache (its set-up would cost more than it saves).
inline constexpr size_t kCacheMinBytes = 16 * 1024;
// Inputs shorter than this are encoded on the calling thread alone.
inline constexpr size_t kParallelMinBytes = 64 * 1024;

// Appends the ids of the pieces of `text` in [begin, end) to `out`. `begin` must be 0 or a next_safe_split
// position, and `end` text.size() or one (pieces are scanned in the whole text, so lookahead past `end` is
// exactly as in a scan of all of it).
void encode_ordinary_span(const RankTable& ranks, std::string_view text, size_t begin, size_t end,
                          std::vector<int32_t>& out);

// encode_ordinary_span over all of `text`, cut at safe splits into up to `threads` chunks encoded at once
// (the calling thread takes the first). threads <= 1 or a short text: serial.
std::vector<int32_t> encode_ordinary_parallel(const RankTable& ranks, std::string_view text, unsigned threads);

}  // namespace gossamer::text
