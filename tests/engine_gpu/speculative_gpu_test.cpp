// Speculative decoding on the cuda backend (engine/speculative.h): a drafted decode row runs its last known
// token and its draft as one multi-token sequence with a logits row each (the mixed-step path, not the decode
// graphs), sampled on the device. Greedy outputs must be the ones of the engine without drafts: request by
// request, most of them exactly (the multi-token path may round differently from the one-token decode, which
// can flip a near tie; the count is printed), every one at its full length, every block freed, and drafts
// accepted. Skips visibly without a GPU.
#include <gtest/gtest.h>

#include <cstdio>
#include <vector>

#include "conditioned_tiny.h"
#include "engine/engine.h"
#include "engine/output_collector.h"  // tests/engine/
#include "gpu_test_util.h"

namespace gossamer::engine {
namespace {

struct SpeculativeRun {
  std::vector<OutputCollector::Record> records;
  EngineStats stats;
};

// Eight requests, each alone on a fresh engine's loop: a prompt that repeats a short pattern (so that the
// suffix of what the model writes has occurred before), greedy, 48 tokens.
SpeculativeRun run(int32_t num_speculative_tokens) {
  EngineConfig config = test::tiny_engine_config();
  config.speculative.num_speculative_tokens = num_speculative_tokens;
  config.speculative.prompt_lookup_min = 1;
  Engine engine(test::load_tiny(), config);
  OutputCollector outputs;
  SpeculativeRun out;
  for (int i = 0; i < 8; ++i) {
    std::vector<TokenId> prompt;
    for (int r = 0; r < 6; ++r)
      for (int j = 0; j < 5 + i % 3; ++j) prompt.push_back(20 + (i * 97 + j * 13) % 1000);  // tiny: 1,024 ids
    SubmitParams params;
    params.prompt = std::move(prompt);
    params.sampling.temperature = 0.0f;
    params.sampling.max_tokens = 48;
    params.on_output = outputs.callback();
    const RequestId id = engine.submit(std::move(params));
    EXPECT_TRUE(outputs.wait(i + 1, std::chrono::seconds(120)));
    out.records.push_back(outputs.get(id));
  }
  out.stats = engine.stats();
  EXPECT_EQ(out.stats.num_free_kv_blocks, out.stats.num_kv_blocks);
  return out;
}

TEST(SpeculativeGpu, GreedyOutputsEqualTheEngineWithoutDrafts) {
  if (!test::have_gpu()) GTEST_SKIP() << "no CUDA GPU: speculative decoding engine test not run";
  const SpeculativeRun plain = run(0);
  const SpeculativeRun drafted = run(3);
  int identical = 0;
  for (size_t i = 0; i < plain.records.size(); ++i) {
    EXPECT_EQ(drafted.records[i].tokens.size(), 48u) << "request " << i;
    EXPECT_EQ(drafted.records[i].reason, FinishReason::kLength) << "request " << i;
    identical += drafted.records[i].tokens == plain.records[i].tokens;
  }
  std::printf(
      "[speculative] %d of %zu requests identical; %lld drafts, %lld of %lld draft tokens accepted, %lld "
      "steps (without drafts: %lld)\n",
      identical, plain.records.size(), static_cast<long long>(drafted.stats.num_spec_drafts_total),
      static_cast<long long>(drafted.stats.num_spec_accepted_tokens_total),
      static_cast<long long>(drafted.stats.num_spec_draft_tokens_total),
      static_cast<long long>(drafted.stats.num_steps_total), static_cast<long long>(plain.stats.num_steps_total));
  EXPECT_GE(identical, static_cast<int>(plain.records.size() * 3 / 4));
  EXPECT_GT(drafted.stats.num_spec_drafts_total, 0);
  EXPECT_GT(drafted.stats.num_spec_accepted_tokens_total, 0);
  EXPECT_LT(drafted.stats.num_steps_total, plain.stats.num_steps_total);
}

}  // namespace
}  // namespace gossamer::engine
