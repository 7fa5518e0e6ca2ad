// Prefix caching through the engine: the same greedy outputs with the cache as without (batched, chunked,
// preempted, cancelled, fuzzed; on the FakeModel, whose "KV" is the token history, and on the CPU model
// with its sliding-window ring), block counts back to zero, and the hit counters.
#include <gtest/gtest.h>

#include <chrono>
#include <random>

#include "engine/engine.h"
#include "engine_test_requests.h"
#include "model/dummy_checkpoint.h"
#include "testing/fake_model.h"

namespace gossamer::engine {
namespace {

using namespace std::chrono_literals;

// A greedy request that runs to max_tokens.
SubmitParams greedy_ignoring_eos(std::vector<TokenId> prompt, int32_t max_tokens, OutputCollector& outputs) {
  SubmitParams params = greedy(std::move(prompt), max_tokens, outputs);
  params.sampling.ignore_eos = true;
  return params;
}

// Prompts with a few shared system prefixes and private suffixes (some prompts equal, some prefixes of
// others), the mix that prefix caching must get right.
std::vector<std::vector<TokenId>> shared_prompts(int count, uint32_t seed, int32_t vocab) {
  std::mt19937 rng(seed);
  std::vector<std::vector<TokenId>> systems;
  for (int s = 0; s < 3; ++s) {
    std::vector<TokenId> system;
    const int length = 5 + static_cast<int>(rng() % 40);
    for (int i = 0; i < length; ++i) system.push_back(static_cast<TokenId>(rng() % vocab));
    systems.push_back(system);
  }
  std::vector<std::vector<TokenId>> prompts;
  for (int r = 0; r < count; ++r) {
    std::vector<TokenId> prompt;
    if (rng() % 5 != 0) prompt = systems[rng() % systems.size()];  // one in five shares nothing
    const int suffix = static_cast<int>(rng() % 20) + (prompt.empty() ? 1 : 0);
    for (int i = 0; i < suffix; ++i) prompt.push_back(static_cast<TokenId>(rng() % vocab));
    if (r > 0 && rng() % 6 == 0) prompt = prompts[rng() % prompts.size()];  // an exact repeat
    prompts.push_back(prompt);
  }
  return prompts;
}

struct RunResult {
  std::vector<OutputCollector::Record> finished;
  EngineStats stats;
};

RunResult run_all(std::unique_ptr<model::Model> model, EngineConfig config,
                  const std::vector<std::vector<TokenId>>& prompts, int32_t max_tokens, bool staggered) {
  OutputCollector outputs;
  Engine engine(std::move(model), config);
  std::vector<RequestId> ids;
  for (size_t i = 0; i < prompts.size(); ++i) {
    ids.push_back(engine.submit(greedy_ignoring_eos(prompts[i], max_tokens, outputs)));
    if (staggered && i % 3 == 2) std::this_thread::sleep_for(2ms);
  }
  EXPECT_TRUE(outputs.wait(static_cast<int>(prompts.size()), 60s));
  RunResult result;
  for (const RequestId id : ids) result.finished.push_back(outputs.get(id));
  // NOTE: events are delivered after the step's stats are published, so the blocks are freed by now.
  result.stats = engine.stats();
  return result;
}

EngineConfig fake_config(bool caching, int32_t blocks, int32_t budget) {
  EngineConfig config;
  config.block_size = 4;
  config.num_kv_blocks = blocks;
  config.max_num_batched_tokens = budget;
  config.max_num_seqs = 16;
  config.max_model_len = 128;
  config.enable_prefix_caching = caching;
  return config;
}

void expect_same_outputs(const RunResult& with, const RunResult& without) {
  ASSERT_EQ(with.finished.size(), without.finished.size());
  for (size_t i = 0; i < with.finished.size(); ++i) {
    EXPECT_EQ(with.finished[i].tokens, without.finished[i].tokens) << "request " << i;
    EXPECT_EQ(with.finished[i].reason, without.finished[i].reason) << "request " << i;
  }
  EXPECT_EQ(with.stats.num_free_kv_blocks, with.stats.num_kv_blocks) << "blocks leaked with caching";
  EXPECT_EQ(without.stats.num_free_kv_blocks, without.stats.num_kv_blocks);
  EXPECT_EQ(without.stats.num_prefix_cache_hits_total, 0);
}

TEST(PrefixCacheEngine, GreedyOutputsEqualWithoutCachingWhenBatchedAndChunked) {
  const auto prompts = shared_prompts(24, 1, 50000);
  const auto with = run_all(std::make_unique<FakeModel>(), fake_config(true, 256, 24), prompts, 12, true);
  const auto without = run_all(std::make_unique<FakeModel>(), fake_config(false, 256, 24), prompts, 12, true);
  expect_same_outputs(with, without);
  EXPECT_GT(with.stats.num_prefix_cache_hits_total, 0);
  EXPECT_LE(with.stats.num_prefix_cache_hits_total, with.stats.num_prefix_cache_queries_total);
  int32_t cached = 0;
  for (const OutputCollector::Record& f : with.finished) cached += f.num_cached_tokens;
  EXPECT_GT(cached, 0);
}

TEST(PrefixCacheEngine, GreedyOutputsEqualWithoutCachingUnderPreemption) {
  const auto prompts = shared_prompts(16, 2, 50000);
  // 40 blocks of 4 for 16 requests of up to ~75 tokens: preemption by recompute is certain.
  const auto with = run_all(std::make_unique<FakeModel>(), fake_config(true, 40, 64), prompts, 30, false);
  const auto without = run_all(std::make_unique<FakeModel>(), fake_config(false, 40, 64), prompts, 30, false);
  expect_same_outputs(with, without);
  EXPECT_GT(with.stats.num_preemptions_total, 0);
  EXPECT_GT(without.stats.num_preemptions_total, 0);
}

TEST(PrefixCacheEngine, FuzzedSharedPromptsWithCancellationMatchAFreshModel) {
  FakeModel reference;
  for (uint32_t seed = 10; seed < 14; ++seed) {
    const auto prompts = shared_prompts(20, seed, 50000);
    OutputCollector outputs;
    EngineConfig config =
        fake_config(true, 48 + static_cast<int32_t>(seed % 3) * 40, 8 + static_cast<int32_t>(seed) * 3);
    Engine engine(std::make_unique<FakeModel>(), config);
    std::mt19937 rng(seed);
    std::vector<std::pair<RequestId, int32_t>> submitted;  // id, prompt index
    for (size_t i = 0; i < prompts.size(); ++i) {
      const int32_t max_tokens = 1 + static_cast<int32_t>(rng() % 20);
      const RequestId id = engine.submit(greedy_ignoring_eos(prompts[i], max_tokens, outputs));
      submitted.emplace_back(id, static_cast<int32_t>(i));
      if (rng() % 4 == 0) engine.cancel(submitted[rng() % submitted.size()].first);
      if (rng() % 3 == 0) std::this_thread::sleep_for(1ms);
    }
    ASSERT_TRUE(outputs.wait(static_cast<int>(prompts.size()), 60s));
    for (const auto& [id, index] : submitted) {
      const OutputCollector::Record f = outputs.get(id);
      std::vector<TokenId> history = prompts[static_cast<size_t>(index)];
      for (const TokenId token : f.tokens) {  // every token the request got is the model's next token
        ASSERT_EQ(token, reference.next_token(history)) << "seed " << seed << " request " << id;
        history.push_back(token);
      }
      if (f.reason != FinishReason::kAbort) {
        EXPECT_EQ(f.reason, FinishReason::kLength);
      }
    }
    const EngineStats stats = engine.stats();
    EXPECT_EQ(stats.num_free_kv_blocks, stats.num_kv_blocks) << "seed " << seed;
    EXPECT_EQ(stats.num_running, 0);
  }
}

// Async scheduling (the fake model feeding the pending tokens from the step before, as the cuda backend
// does on its device): a sequence that a stop ends has one more token computed, into blocks that are freed
// and may be cached; outputs, hits and block counts must not notice.
std::unique_ptr<FakeModel> feeding_fake(int32_t stop_one_in) {
  FakeModelOptions options;
  options.device_sampling = true;
  options.feeds_pending_tokens = true;
  options.stop_one_in = stop_one_in;
  return std::make_unique<FakeModel>(options);
}

TEST(PrefixCacheEngine, AsyncSchedulingGivesTheSameGreedyOutputsUnderPreemption) {
  const auto prompts = shared_prompts(16, 2, 50000);
  EngineConfig async_config = fake_config(true, 40, 64);
  async_config.async_scheduling = true;
  const auto with = run_all(feeding_fake(0), async_config, prompts, 30, false);
  const auto without = run_all(std::make_unique<FakeModel>(), fake_config(false, 40, 64), prompts, 30, false);
  expect_same_outputs(with, without);
  EXPECT_GT(with.stats.num_preemptions_total, 0);
  EXPECT_GT(with.stats.num_prefix_cache_hits_total, 0);
}

TEST(PrefixCacheEngine, AsyncSchedulingStopsExactlyWhereTheModelStops) {
  FakeModelOptions reference_options;
  reference_options.stop_one_in = 9;  // many requests stop on <|return|> early
  const FakeModel reference(reference_options);
  for (uint32_t seed = 20; seed < 23; ++seed) {
    const auto prompts = shared_prompts(20, seed, 50000);
    OutputCollector outputs;
    EngineConfig config = fake_config(true, 48 + static_cast<int32_t>(seed % 3) * 40, 24);
    config.async_scheduling = true;
    Engine engine(feeding_fake(9), config);
    std::mt19937 rng(seed);
    std::vector<std::pair<RequestId, int32_t>> submitted;  // id, prompt index
    for (size_t i = 0; i < prompts.size(); ++i) {
      SubmitParams params = greedy(prompts[i], 1 + static_cast<int32_t>(rng() % 20), outputs);
      params.sampling.stop_token_ids = {200002};
      const RequestId id = engine.submit(std::move(params));
      submitted.emplace_back(id, static_cast<int32_t>(i));
      if (rng() % 5 == 0) engine.cancel(submitted[rng() % submitted.size()].first);
      if (rng() % 3 == 0) std::this_thread::sleep_for(1ms);
    }
    ASSERT_TRUE(outputs.wait(static_cast<int>(prompts.size()), 60s));
    int stopped = 0;
    for (const auto& [id, index] : submitted) {
      const OutputCollector::Record f = outputs.get(id);
      std::vector<TokenId> history = prompts[static_cast<size_t>(index)];
      for (size_t t = 0; t < f.tokens.size(); ++t) {  // the model's tokens, none past a stop
        ASSERT_EQ(f.tokens[t], reference.next_token(history)) << "seed " << seed << " request " << id;
        history.push_back(f.tokens[t]);
        if (f.tokens[t] == 200002) {
          ASSERT_EQ(t + 1, f.tokens.size());
        }
      }
      EXPECT_EQ(f.num_output_tokens, static_cast<int32_t>(f.tokens.size()));
      stopped += f.reason == FinishReason::kStop;
    }
    EXPECT_GT(stopped, 0) << "seed " << seed;
    const EngineStats stats = engine.stats();
    EXPECT_EQ(stats.num_free_kv_blocks, stats.num_kv_blocks) << "seed " << seed;
    EXPECT_EQ(stats.num_running, 0);
  }
}

TEST(PrefixCacheEngine, MultiTurnHistoryIsServedFromTheCache) {
  OutputCollector outputs;
  Engine engine(std::make_unique<FakeModel>(), fake_config(true, 256, 64));
  std::vector<TokenId> history;
  for (int turn = 0; turn < 4; ++turn) {
    for (int i = 0; i < 9; ++i) history.push_back(3000 + turn * 100 + i);
    const RequestId id = engine.submit(greedy_ignoring_eos(history, 6, outputs));
    ASSERT_TRUE(outputs.wait(turn + 1, 60s));
    const OutputCollector::Record f = outputs.get(id);
    if (turn > 0) {
      EXPECT_GE(f.num_cached_tokens, (static_cast<int32_t>(history.size()) - 9 - 6) / 4 * 4) << "turn " << turn;
    }
    history.insert(history.end(), f.tokens.begin(), f.tokens.end());
  }
}

// The CPU model with the sliding-window ring (the tiny preset: window 128, vocabulary 1,024): prompts
// past the window share a long prefix; greedy tokens must not change with the cache, also when a small
// cache preempts.
TEST(PrefixCacheEngine, CpuModelWithTheRingGivesTheSameGreedyTokens) {
  std::mt19937 rng(7);
  std::vector<TokenId> shared;
  for (int i = 0; i < 300; ++i) shared.push_back(static_cast<TokenId>(rng() % 1000));
  std::vector<std::vector<TokenId>> prompts;
  for (int r = 0; r < 4; ++r) {
    std::vector<TokenId> prompt = shared;
    for (int i = 0; i < 5 + r * 7; ++i) prompt.push_back(static_cast<TokenId>(rng() % 1000));
    prompts.push_back(prompt);
  }
  const auto make = [] { return model::make_dummy_cpu_model(model::preset_config("tiny"), 3); };
  EngineConfig config;
  config.block_size = 16;
  config.num_kv_blocks = 256;
  config.max_num_batched_tokens = 128;  // chunked prefill
  config.max_num_seqs = 4;
  config.max_model_len = 336;
  config.enable_prefix_caching = true;
  // NOTE: decode-first admission keeps the blocks of running prefills, so only the old policy (which admits
  // on the first chunk's blocks) preempts here; both must give the same tokens.
  for (const bool decode_first : {false, true}) {
    config.decode_first = decode_first;
    for (const int32_t blocks : {256, 23}) {  // 23 blocks of 16: even shared, the 4 sequences do not fit
      config.num_kv_blocks = blocks;
      config.enable_prefix_caching = true;
      const auto with = run_all(make(), config, prompts, 4, true);
      config.enable_prefix_caching = false;
      const auto without = run_all(make(), config, prompts, 4, true);
      ASSERT_GT(with.stats.num_prefix_cache_hits_total, 0) << "the ring's window blocks were expected to be cached";
      expect_same_outputs(with, without);
      if (blocks == 23 && !decode_first) {
        EXPECT_GT(with.stats.num_preemptions_total, 0);
      }
    }
  }
}

}  // namespace
}  // namespace gossamer::engine
