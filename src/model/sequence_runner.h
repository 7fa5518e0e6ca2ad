// Whole-sequence helpers over a Model for commands and tests (the engine does real scheduling).
// Each helper (re)allocates the model's KV cache with a contiguous block table per sequence.
#pragma once

#include <cstdint>
#include <vector>

#include "model/model.h"

namespace gossamer::model {

inline constexpr int32_t kRunnerBlockSize = 16;

// Logits at every position of every sequence in one batched prefill: [Σ len, vocab] f32, sequence-major.
std::vector<float> prefill_logits(Model& model, const std::vector<std::vector<int32_t>>& sequences);

// Greedy decoding: prefill `prompt`, then one token per step until max_new_tokens or a stop id.
// Returns the generated ids (the stop id included when hit).
std::vector<int32_t> greedy_generate(Model& model, const std::vector<int32_t>& prompt, int32_t max_new_tokens,
                                     const std::vector<int32_t>& stop_ids = {});

// Index of the largest value (the lowest index on ties).
int32_t argmax(const float* values, int64_t n);

}  // namespace gossamer::model
