// Validation of a ForwardBatch against a model's config and KV cache, shared by every backend.
#pragma once

#include "model/config.h"
#include "model/model.h"

namespace gossamer::model {

// Throws gossamer::Error (naming the sequence) for a token outside the vocabulary, positions past the
// context, a block table that does not cover the positions, or a block id outside the cache. With a
// sliding pool (num_sliding_blocks > 0) every sequence needs a sliding_block_table whose entries from the
// first position a sliding layer may touch (model.h) onwards lie in [0, num_sliding_blocks). A pending last
// token (SequenceInput::pending_from_row) is not checked where the backend feeds_pending_tokens (its id is
// read on the device) and refused elsewhere.
void check_forward_batch(const GptOssConfig& config, int32_t num_blocks, int32_t block_size, const ForwardBatch& batch,
                         int32_t num_sliding_blocks = 0, bool feeds_pending_tokens = false);

}  // namespace gossamer::model
