// Pending-token feed (async scheduling, model/model.h SequenceInput::pending_from_row): the input ids of a
// step that the step before it drew on the device, copied into the step's ids before its embedding reads
// them, so that the step can be launched before those tokens are back on the host.
//
//   for each f < num_feeds: ids[feeds[2f]] = drawn[feeds[2f + 1]]
#pragma once

#include <cstdint>

#include "core/cuda/cuda_types.h"  // cudaStream_t

namespace gossamer::kernels {

struct FeedTokensParams {
  int32_t* ids = nullptr;          // [num_tokens] the step's input ids, written in place
  const int32_t* drawn = nullptr;  // [rows] the tokens the step before drew, one per logits row
  const int32_t* feeds = nullptr;  // [num_feeds, 2] (index into ids, row of drawn)
  int32_t num_feeds = 0;
};

// Asynchronous on `stream`, launched with PDL (starts with pdl_wait); graph capturable.
void launch_feed_tokens(const FeedTokensParams& p, cudaStream_t stream);
void feed_tokens_cpu(const FeedTokensParams& p);

}  // namespace gossamer::kernels
