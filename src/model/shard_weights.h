// One rank's weights as a smaller gpt-oss checkpoint: the host views (and the few slices that must be
// materialised) a backend uploads to hold rank `rank` of a tensor/expert-parallel layout
// (model/sharding.h). The cuda backend builds its per-rank CudaWeights from it with the unchanged
// uploader.
//
// The rank's config has its local query/KV heads and (TP-MoE) its local intermediate size; experts stay
// numbered globally (the router is replicated), the rank's experts are [shard.experts) (EP) or all.
// Views: q/k/v rows and biases, sinks, expert ranges and their biases (EP), norms, router, and the rows
// [shard.vocab) of the embedding and the unembedding (vocab-parallel: the ranks sum their embedding rows and
// gather their logits). Materialised:
// o_proj's column slice, TP-MoE's gate_up rows / down columns per expert (MXFP4, so the local intermediate must be a
// multiple of 32), and zero biases where only rank 0 adds the replicated bias (o_proj; down in TP-MoE).
//
// Contract: the views point into `weights` (and `storage`, which the result keeps alive). Throws
// gossamer::Error for a layout validate_layout refuses or a TP-MoE slice that is not a multiple of 32.
#pragma once

#include <cstdint>
#include <memory>

#include "model/config.h"
#include "model/sharding.h"
#include "model/weights.h"

namespace gossamer::model {

struct RankWeights {
  GptOssConfig config;                  // the rank's shapes (local heads, local intermediate)
  RankShard shard;                      // what it holds of the whole model
  GptOssWeights weights;                // views (see above)
  std::shared_ptr<const void> storage;  // owns the materialised slices and keeps the source alive
};

// The rank's config alone (local heads, local intermediate; experts numbered globally), e.g. for random
// weights made on the rank's device.
GptOssConfig shard_config(const GptOssConfig& config, const RankShard& shard);

RankWeights shard_weights(const GptOssConfig& config, const GptOssWeights& weights, std::shared_ptr<const void> storage,
                          const ParallelLayout& layout, int32_t rank);

}  // namespace gossamer::model
