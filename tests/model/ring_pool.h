// A stand-in for the engine's sliding-window pool in model tests (the model layer cannot use the engine):
// LIFO reuse, so a block one sequence gave back is the next one handed out, to any sequence, and whatever
// a backend still read from it would be overwritten. Trimming follows model.h's contract with a chosen
// margin (0 exercises exactly the window; the engine uses kSlidingKeepMargin).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/error.h"

namespace gossamer::model::testing {

class RingPool {
 public:
  struct Sequence {
    std::vector<int32_t> table;  // sliding_block_table: entries below `trimmed` are stale ids
    int32_t trimmed = 0;
  };

  explicit RingPool(int32_t num_blocks) {
    for (int32_t b = num_blocks - 1; b >= 0; --b) free_.push_back(b);
  }

  // Before a step that runs positions [num_cached, end): return what no query of the step reads, then
  // cover [0, end).
  void prepare(Sequence& seq, int64_t num_cached, int64_t end, int32_t window, int32_t margin, int32_t block_size) {
    const int64_t first_read = std::max<int64_t>(0, num_cached - window + 1 - margin);
    const int32_t keep_from =
        std::min(static_cast<int32_t>(first_read / block_size), static_cast<int32_t>(seq.table.size()));
    for (int32_t b = seq.trimmed; b < keep_from; ++b) free_.push_back(seq.table[static_cast<size_t>(b)]);
    seq.trimmed = std::max(seq.trimmed, keep_from);
    while (static_cast<int64_t>(seq.table.size()) * block_size < end) {
      GOSSAMER_CHECK(!free_.empty(), "test ring pool exhausted");
      seq.table.push_back(free_.back());
      free_.pop_back();
      ++handed_out_;
    }
  }
  int64_t handed_out() const { return handed_out_; }

 private:
  std::vector<int32_t> free_;
  int64_t handed_out_ = 0;
};

}  // namespace gossamer::model::testing
