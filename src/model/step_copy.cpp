#include "model/step_copy.h"

#include <algorithm>

#include "core/error.h"

namespace gossamer::model {

void StepCopy::assign(const ForwardBatch& from, std::optional<std::span<const RowSampling>> from_rows,
                      int32_t vocab_size) {
  // NOTE: ints_ and masks_ are sized before the copy, so that nothing moves under the spans into them.
  const size_t mask_words = (static_cast<size_t>(vocab_size) + 31) / 32;
  size_t num_ints = 0, num_words = 0;
  for (const SequenceInput& seq : from.sequences)
    num_ints += seq.tokens.size() + seq.block_table.size() + seq.sliding_block_table.size();
  if (from_rows) {
    for (const RowSampling& row : *from_rows) {
      num_ints += row.penalty_tokens.size() + row.penalty_counts.size();
      num_words += row.token_mask != nullptr ? mask_words : 0;
    }
  }
  ints_.resize(num_ints);
  masks_.resize(num_words);
  token_at_.clear();
  size_t at = 0, at_mask = 0;
  const auto copy = [&](std::span<const int32_t> span) {
    std::copy(span.begin(), span.end(), ints_.begin() + static_cast<std::ptrdiff_t>(at));
    const std::span<const int32_t> to(ints_.data() + at, span.size());
    at += span.size();
    return to;
  };
  batch.sequences.assign(from.sequences.begin(), from.sequences.end());
  for (SequenceInput& seq : batch.sequences) {
    token_at_.push_back(at);
    seq.tokens = copy(seq.tokens);
    seq.block_table = copy(seq.block_table);
    seq.sliding_block_table = copy(seq.sliding_block_table);
  }
  sampled = from_rows.has_value();
  rows.clear();
  if (from_rows) rows.assign(from_rows->begin(), from_rows->end());
  for (RowSampling& row : rows) {
    row.penalty_tokens = copy(row.penalty_tokens);
    row.penalty_counts = copy(row.penalty_counts);
    if (row.token_mask != nullptr) {
      std::copy_n(row.token_mask, mask_words, masks_.begin() + static_cast<std::ptrdiff_t>(at_mask));
      row.token_mask = masks_.data() + at_mask;
      at_mask += mask_words;
    }
  }
}

bool StepCopy::has_pending_tokens() const {
  return std::any_of(batch.sequences.begin(), batch.sequences.end(),
                     [](const SequenceInput& seq) { return seq.pending_from_row >= 0; });
}

void StepCopy::feed_pending_tokens(std::span<const int32_t> drawn) {
  for (size_t s = 0; s < batch.sequences.size(); ++s) {
    SequenceInput& seq = batch.sequences[s];
    if (seq.pending_from_row < 0) continue;
    GOSSAMER_CHECK(!seq.tokens.empty() && static_cast<size_t>(seq.pending_from_row) < drawn.size(), "sequence ", s,
                   ": pending row ", seq.pending_from_row, " of a step that drew ", drawn.size(), " tokens");
    ints_[token_at_[s] + seq.tokens.size() - 1] = drawn[static_cast<size_t>(seq.pending_from_row)];
    seq.pending_from_row = -1;
  }
}

}  // namespace gossamer::model
