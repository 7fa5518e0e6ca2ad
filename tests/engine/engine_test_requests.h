// Test helper of the engine tests: the small engine configuration and the greedy requests they submit.
#pragma once

#include <utility>
#include <vector>

#include "engine/engine.h"
#include "output_collector.h"

namespace gossamer::engine {

// Small blocks and budgets, so that batching, chunking and preemption all happen with short prompts.
inline EngineConfig test_config() {
  EngineConfig config;
  config.block_size = 4;
  config.num_kv_blocks = 256;
  config.max_num_batched_tokens = 32;
  config.max_num_seqs = 16;
  config.max_model_len = 256;
  return config;
}

// A greedy request whose events go to `collector` (no stop tokens: the caller adds any).
inline SubmitParams greedy(std::vector<TokenId> prompt, int32_t max_tokens, OutputCollector& collector) {
  SubmitParams params;
  params.prompt = std::move(prompt);
  params.sampling.temperature = 0.0f;
  params.sampling.max_tokens = max_tokens;
  params.on_output = collector.callback();
  return params;
}

// A distinct prompt per index.
inline std::vector<TokenId> prompt_of(int index, int length) {
  std::vector<TokenId> prompt;
  for (int i = 0; i < length; ++i) prompt.push_back(1000 + index * 31 + i * 7);
  return prompt;
}

}  // namespace gossamer::engine
