#include "model/batch_check.h"

#include <algorithm>

#include "core/error.h"

namespace gossamer::model {

void check_forward_batch(const GptOssConfig& config, int32_t num_blocks, int32_t block_size, const ForwardBatch& batch,
                         int32_t num_sliding_blocks, bool feeds_pending_tokens) {
  GOSSAMER_CHECK(num_blocks > 0, "forward before allocate_kv_cache");
  for (size_t s = 0; s < batch.sequences.size(); ++s) {
    const SequenceInput& seq = batch.sequences[s];
    GOSSAMER_CHECK(seq.num_cached >= 0, "sequence ", s, ": negative num_cached");
    const int64_t end = int64_t{seq.num_cached} + static_cast<int64_t>(seq.tokens.size());
    GOSSAMER_CHECK(end <= config.max_position_embeddings, "sequence ", s, ": ", end,
                   " positions exceed the model's context of ", config.max_position_embeddings);
    GOSSAMER_CHECK(seq.pending_from_row < 0 || (feeds_pending_tokens && !seq.tokens.empty()), "sequence ", s,
                   ": a pending token on a backend that does not feed them");
    // A pending last token is read on the device: its placeholder is not an id.
    const size_t known = seq.tokens.size() - (seq.pending_from_row >= 0 ? 1 : 0);
    for (const int32_t token : seq.tokens.first(known)) {
      GOSSAMER_CHECK(token >= 0 && token < config.vocab_size, "sequence ", s, ": token id ", token,
                     " is outside the vocabulary [0, ", config.vocab_size, ")");
    }
    const int64_t blocks_needed = (end + block_size - 1) / block_size;
    GOSSAMER_CHECK(static_cast<int64_t>(seq.block_table.size()) >= blocks_needed, "sequence ", s, ": block table has ",
                   seq.block_table.size(), " blocks, ", blocks_needed, " needed");
    for (int64_t b = 0; b < blocks_needed; ++b) {
      const int32_t block = seq.block_table[static_cast<size_t>(b)];
      GOSSAMER_CHECK(block >= 0 && block < num_blocks, "sequence ", s, ": block id ", block, " out of range");
    }
    if (num_sliding_blocks > 0) {
      GOSSAMER_CHECK(static_cast<int64_t>(seq.sliding_block_table.size()) >= blocks_needed, "sequence ", s,
                     ": sliding block table has ", seq.sliding_block_table.size(), " blocks, ", blocks_needed,
                     " needed");
      const int64_t first =
          std::max<int64_t>(0, int64_t{seq.num_cached} - config.sliding_window + 1 - kSlidingKeepMargin);
      for (int64_t b = first / block_size; b < blocks_needed; ++b) {
        const int32_t block = seq.sliding_block_table[static_cast<size_t>(b)];
        GOSSAMER_CHECK(block >= 0 && block < num_sliding_blocks, "sequence ", s, ": sliding block id ", block,
                       " out of range");
      }
    }
  }
}

}  // namespace gossamer::model
