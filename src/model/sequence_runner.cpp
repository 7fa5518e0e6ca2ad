#include "model/sequence_runner.h"

#include <algorithm>
#include <numeric>

#include "core/error.h"

namespace gossamer::model {

namespace {
int32_t blocks_for(int64_t tokens) {
  return static_cast<int32_t>((tokens + kRunnerBlockSize - 1) / kRunnerBlockSize);
}
}  // namespace

std::vector<float> prefill_logits(Model& model, const std::vector<std::vector<int32_t>>& sequences) {
  int32_t total_blocks = 0;
  for (const auto& sequence : sequences) total_blocks += std::max(1, blocks_for(static_cast<int64_t>(sequence.size())));
  model.allocate_kv_cache(total_blocks, kRunnerBlockSize);
  std::vector<std::vector<int32_t>> tables;
  int32_t next_block = 0;
  for (const auto& sequence : sequences) {
    std::vector<int32_t> table(static_cast<size_t>(std::max(1, blocks_for(static_cast<int64_t>(sequence.size())))));
    std::iota(table.begin(), table.end(), next_block);
    next_block += static_cast<int32_t>(table.size());
    tables.push_back(std::move(table));
  }
  ForwardBatch batch;
  for (size_t s = 0; s < sequences.size(); ++s) {
    batch.sequences.push_back(SequenceInput{sequences[s], 0, tables[s], LogitsWanted::kAll});
  }
  std::vector<float> logits;
  model.forward(batch, logits);
  return logits;
}

std::vector<int32_t> greedy_generate(Model& model, const std::vector<int32_t>& prompt, int32_t max_new_tokens,
                                     const std::vector<int32_t>& stop_ids) {
  GOSSAMER_CHECK(!prompt.empty(), "the prompt must hold at least one token");
  GOSSAMER_CHECK(max_new_tokens >= 0, "max_new_tokens must be ≥ 0");
  const int64_t total = static_cast<int64_t>(prompt.size()) + max_new_tokens;
  GOSSAMER_CHECK(total <= model.config().max_position_embeddings, "prompt (", prompt.size(), ") + max tokens (",
                 max_new_tokens, ") exceed the context of ", model.config().max_position_embeddings);
  std::vector<int32_t> table(static_cast<size_t>(blocks_for(total)));
  std::iota(table.begin(), table.end(), 0);
  model.allocate_kv_cache(static_cast<int32_t>(table.size()), kRunnerBlockSize);
  const int64_t vocab = model.config().vocab_size;
  std::vector<int32_t> generated;
  std::vector<float> logits;
  std::vector<int32_t> step_tokens = prompt;
  int32_t cached = 0;
  while (static_cast<int32_t>(generated.size()) < max_new_tokens) {
    ForwardBatch batch;
    batch.sequences.push_back(SequenceInput{step_tokens, cached, table, LogitsWanted::kLast});
    model.forward(batch, logits);
    cached += static_cast<int32_t>(step_tokens.size());
    const int32_t next = argmax(logits.data(), vocab);
    generated.push_back(next);
    if (std::find(stop_ids.begin(), stop_ids.end(), next) != stop_ids.end()) break;
    step_tokens = {next};
  }
  return generated;
}

int32_t argmax(const float* values, int64_t n) {
  int64_t best = 0;
  for (int64_t i = 1; i < n; ++i) {
    if (values[i] > values[best]) best = i;
  }
  return static_cast<int32_t>(best);
}

}  // namespace gossamer::model
