// Speculative decoding by prompt lookup (engine/speculative.h): the draft proposer, the acceptance count,
// the --speculative-config parser, and the engine with drafts on, whose outputs must equal the engine's
// without them (greedy and seeded sampling, device and host sampling, logprobs, stop tokens and max_tokens
// inside a draft, preemption, many requests at once) while it takes fewer steps.
#include "engine/speculative.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <random>
#include <tuple>
#include <vector>

#include "core/error.h"
#include "engine/engine.h"
#include "engine_test_requests.h"
#include "testing/fake_model.h"

namespace gossamer::engine {
namespace {

using namespace std::chrono_literals;

SpeculativeConfig ngram(int32_t k, int32_t max = 4, int32_t min = 2) {
  SpeculativeConfig config;
  config.num_speculative_tokens = k;
  config.prompt_lookup_max = max;
  config.prompt_lookup_min = min;
  return config;
}

std::vector<TokenId> draft_of(const std::vector<TokenId>& tokens, const SpeculativeConfig& config, int32_t max_tokens,
                              size_t split = 0) {
  std::vector<TokenId> draft;
  const std::span<const TokenId> all(tokens);
  NgramIndex index;
  index.propose(all.first(split), all.subspan(split), config, max_tokens, draft);
  return draft;
}

// The rule by brute force (speculative.h): for n from prompt_lookup_max down, the most recent occurrence of the
// n-token suffix (ending before the last token) followed by `wanted` tokens; else the occurrence of any such
// suffix with the longest continuation.
std::vector<TokenId> reference_draft(const std::vector<TokenId>& tokens, const SpeculativeConfig& config,
                                     int32_t max_tokens) {
  const int32_t wanted = std::min(max_tokens, config.num_speculative_tokens);
  const auto length = static_cast<int64_t>(tokens.size());
  int64_t partial_from = -1, partial_count = 0;
  for (int32_t n = config.prompt_lookup_max; n >= config.prompt_lookup_min && wanted > 0; --n) {
    for (int64_t start = length - n - 1; start >= 0; --start) {
      if (!std::equal(tokens.end() - n, tokens.end(), tokens.begin() + start)) continue;
      const int64_t count = std::min<int64_t>(wanted, length - (start + n));
      if (count == wanted) return {tokens.begin() + start + n, tokens.begin() + start + n + count};
      if (count > partial_count) {
        partial_from = start + n;
        partial_count = count;
      }
    }
  }
  if (partial_from < 0) return {};
  return {tokens.begin() + partial_from, tokens.begin() + partial_from + partial_count};
}

TEST(NgramDraft, TheLongestRecurringSuffixProposesWhatFollowedIt) {
  const std::vector<TokenId> tokens = {1, 2, 3, 4, 9, 9, 7, 2, 3, 4, 8, 1, 2, 3, 4};
  // n = 4: [1, 2, 3, 4] recurs at 0 (followed by 9, 9, 7); n = 3 would have found [2, 3, 4] at 7 (then 8).
  EXPECT_EQ(draft_of(tokens, ngram(3), 3), (std::vector<TokenId>{9, 9, 7}));
  // With suffixes of at most 3 the most recent occurrence of [2, 3, 4] wins.
  EXPECT_EQ(draft_of(tokens, ngram(3, 3, 2), 3), (std::vector<TokenId>{8, 1, 2}));
  // The prompt/output split does not matter.
  for (size_t split = 0; split <= tokens.size(); ++split)
    EXPECT_EQ(draft_of(tokens, ngram(3), 3, split), (std::vector<TokenId>{9, 9, 7})) << "split " << split;
}

TEST(NgramDraft, ClipsAtTheEndAndAtItsLimits) {
  // [1, 2] last occurred at 3, followed only by 6, 1, 2 (the suffix itself): five tokens follow it at 0.
  const std::vector<TokenId> tokens = {1, 2, 5, 1, 2, 6, 1, 2};
  EXPECT_EQ(draft_of(tokens, ngram(5), 5), (std::vector<TokenId>{5, 1, 2, 6, 1}));
  EXPECT_EQ(draft_of(tokens, ngram(5), 2), (std::vector<TokenId>{6, 1}));  // max_tokens: the most recent
  EXPECT_EQ(draft_of(tokens, ngram(1), 5), (std::vector<TokenId>{6}));     // num_speculative_tokens
  EXPECT_TRUE(draft_of(tokens, ngram(5), 0).empty());
  // No occurrence has a full continuation: the longest one, which may run into the suffix itself.
  EXPECT_EQ(draft_of({4, 1, 2, 3, 1, 2}, ngram(6, 2, 2), 6), (std::vector<TokenId>{3, 1, 2}));
}

TEST(NgramDraft, ARunOfOneTokenDraftsMoreOfIt) {
  // [3, 3, 3, 3] recurs only one position back (one token after it); [3, 3] has three after it.
  EXPECT_EQ(draft_of({9, 3, 3, 3, 3, 3}, ngram(3, 4, 1), 3), (std::vector<TokenId>{3, 3, 3}));
  EXPECT_EQ(draft_of({9, 3, 3, 3}, ngram(3, 4, 1), 3), (std::vector<TokenId>{3, 3}));
}

TEST(NgramDraft, OneIndexFollowingItsRequestAgreesWithTheBruteForceRule) {
  // Small vocabularies (many recurring suffixes) and the index caught up token by token, as a request's grows.
  std::mt19937 rng(7);
  for (const int vocab : {2, 3, 5, 12}) {
    for (const auto& [k, max, min] : {std::tuple{3, 4, 2}, {5, 3, 1}, {2, 2, 2}, {4, 6, 1}}) {
      const SpeculativeConfig config = ngram(k, max, min);
      std::vector<TokenId> tokens;
      NgramIndex index;
      std::vector<TokenId> draft;
      for (int i = 0; i < 300; ++i) {
        tokens.push_back(static_cast<TokenId>(rng() % vocab));
        const size_t split = std::min<size_t>(tokens.size(), 40);  // a 40-token prompt, then the output
        const int32_t max_tokens = static_cast<int32_t>(rng() % (k + 2));
        index.propose(std::span<const TokenId>(tokens).first(split), std::span<const TokenId>(tokens).subspan(split),
                      config, max_tokens, draft);
        ASSERT_EQ(draft, reference_draft(tokens, config, max_tokens))
            << "vocab " << vocab << ", k " << k << ", lookup " << min << "-" << max << ", " << tokens.size()
            << " tokens";
      }
    }
  }
}

TEST(NgramDraft, NothingBelowTheShortestSuffix) {
  const std::vector<TokenId> tokens = {7, 1, 2, 8, 2};  // only [2] recurs
  EXPECT_TRUE(draft_of(tokens, ngram(3, 4, 2), 3).empty());
  EXPECT_EQ(draft_of(tokens, ngram(3, 4, 1), 3), (std::vector<TokenId>{8, 2}));
  EXPECT_TRUE(draft_of({5}, ngram(3, 4, 1), 3).empty());
  EXPECT_TRUE(draft_of({}, ngram(3, 4, 1), 3).empty());
}

TEST(NgramDraft, AcceptedCountIsTheLeadingAgreement) {
  EXPECT_EQ(count_accepted_drafts(std::vector<TokenId>{4, 5, 6}, std::vector<TokenId>{4, 5, 6, 7}), 3);
  EXPECT_EQ(count_accepted_drafts(std::vector<TokenId>{4, 5, 6}, std::vector<TokenId>{4, 9, 6, 7}), 1);
  EXPECT_EQ(count_accepted_drafts(std::vector<TokenId>{4, 5, 6}, std::vector<TokenId>{1, 5, 6, 7}), 0);
  EXPECT_EQ(count_accepted_drafts(std::vector<TokenId>{}, std::vector<TokenId>{1}), 0);
}

TEST(SpeculativeConfigFlag, ParsesVllmsNgramKeysAndRefusesTheRest) {
  const SpeculativeConfig full = parse_speculative_config(
      R"({"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 5, "prompt_lookup_min": 2,
          "disable_by_batch_size": 8})");
  EXPECT_EQ(full.num_speculative_tokens, 3);
  EXPECT_EQ(full.prompt_lookup_max, 5);
  EXPECT_EQ(full.prompt_lookup_min, 2);
  EXPECT_EQ(full.disable_by_batch_size, 8);
  const SpeculativeConfig max_only =
      parse_speculative_config(R"({"method": "ngram", "num_speculative_tokens": 2, "prompt_lookup_max": 3})");
  EXPECT_EQ(max_only.prompt_lookup_min, 3);
  const SpeculativeConfig defaults = parse_speculative_config(R"({"method": "ngram", "num_speculative_tokens": 4})");
  EXPECT_EQ(defaults.prompt_lookup_max, 4);
  EXPECT_EQ(defaults.prompt_lookup_min, 2);
  for (const char* bad : {
           R"({"method": "eagle3", "num_speculative_tokens": 3})",
           R"({"method": "ngram", "model": "x", "num_speculative_tokens": 3})",
           R"({"method": "ngram"})",
           R"({"num_speculative_tokens": 3})",
           R"({"method": "ngram", "num_speculative_tokens": 0})",
           R"({"method": "ngram", "num_speculative_tokens": 17})",
           R"({"method": "ngram", "num_speculative_tokens": -1})",
           R"({"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 2, "prompt_lookup_min": 3})",
           R"({"method": "ngram", "num_speculative_tokens": "3"})",
           R"([1, 2])",
           R"({"method": )",
       }) {
    EXPECT_THROW(parse_speculative_config(bad), Error) << bad;
  }
}

TEST(SpeculativeConfigFlag, RefusedBesideAsyncScheduling) {
  EngineConfig config = test_config();
  config.speculative = ngram(3);
  config.async_scheduling = true;
  EXPECT_THROW(config.validate(), Error);
  config.async_scheduling = false;
  EXPECT_NO_THROW(config.validate());
}

// The pattern the prompt carries and the fake model's script plays back after it: from its second token on,
// its last two tokens occurred in the prompt, so the drafts are the script's next tokens.
constexpr TokenId kStop = 77;
std::vector<TokenId> script_tokens() {
  return {5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20};
}
std::vector<TokenId> prompt_with_pattern(int index) {
  std::vector<TokenId> prompt = {100, 101};
  for (const TokenId t : script_tokens()) prompt.push_back(t);
  prompt.push_back(50 + index);  // not in the script: the script starts over after it
  return prompt;
}

struct EngineRun {
  std::map<int, OutputCollector::Record> records;  // by request index
  EngineStats stats;
};

// Runs `n` requests (request i: prompt_with_pattern(i), `sampling` with seed i) to the end on a fresh engine.
EngineRun run(const SpeculativeConfig& speculative, bool device_sampling, const SamplingParams& sampling, int n,
              int32_t num_kv_blocks = 256) {
  FakeModelOptions options;
  options.device_sampling = device_sampling;
  std::vector<TokenId> script = script_tokens();
  script.insert(script.begin() + 12, 1234);  // a token the prompt never had: the draft there is refused
  options.scripts.push_back({{100, 101}, script});
  EngineConfig config = test_config();
  config.num_kv_blocks = num_kv_blocks;
  config.max_model_len = 128;
  config.device_sampling = device_sampling;
  config.speculative = speculative;
  Engine engine(std::make_unique<FakeModel>(options), config);
  OutputCollector collector;
  std::map<RequestId, int> index_of;
  for (int i = 0; i < n; ++i) {
    SubmitParams params;
    params.prompt = prompt_with_pattern(i);
    params.sampling = sampling;
    params.sampling.seed = static_cast<uint64_t>(i);
    params.on_output = collector.callback();
    index_of[engine.submit(std::move(params))] = i;
  }
  EXPECT_TRUE(collector.wait(n, 60s));
  EngineRun out;
  for (const auto& [id, i] : index_of) out.records[i] = collector.get(id);
  out.stats = engine.stats();
  EXPECT_EQ(out.stats.num_free_kv_blocks, num_kv_blocks);
  return out;
}

void expect_same_outputs(const EngineRun& with, const EngineRun& without) {
  ASSERT_EQ(with.records.size(), without.records.size());
  for (const auto& [i, record] : without.records) {
    const OutputCollector::Record& drafted = with.records.at(i);
    EXPECT_EQ(drafted.tokens, record.tokens) << "request " << i;
    EXPECT_EQ(drafted.reason, record.reason) << "request " << i;
    EXPECT_EQ(drafted.num_output_tokens, record.num_output_tokens) << "request " << i;
    EXPECT_TRUE(drafted.finished);
  }
}

TEST(SpeculativeEngine, GreedyOutputsAreUnchangedInFewerSteps) {
  for (const bool device_sampling : {true, false}) {
    SamplingParams greedy_sampling;
    greedy_sampling.temperature = 0.0f;
    greedy_sampling.max_tokens = 30;
    const EngineRun without = run({}, device_sampling, greedy_sampling, 1);
    const EngineRun with = run(ngram(3), device_sampling, greedy_sampling, 1);
    expect_same_outputs(with, without);
    EXPECT_EQ(without.records.at(0).tokens.size(), 30u);
    EXPECT_EQ(without.stats.num_spec_drafts_total, 0);
    EXPECT_GT(with.stats.num_spec_drafts_total, 0);
    EXPECT_GT(with.stats.num_spec_accepted_tokens_total, 0);
    EXPECT_LT(with.stats.num_spec_accepted_tokens_total, with.stats.num_spec_draft_tokens_total);  // 1234 refused
    EXPECT_EQ(with.stats.num_generation_tokens_total, 30);
    // Every accepted draft saved a step.
    EXPECT_EQ(with.stats.num_steps_total + with.stats.num_spec_accepted_tokens_total, without.stats.num_steps_total);
    EXPECT_LT(with.records.at(0).num_events, without.records.at(0).num_events);  // several tokens an event
  }
}

TEST(SpeculativeEngine, SeededSamplingDrawsTheSameTokens) {
  // Temperature 1: the fake model's unscripted tokens are drawn from four candidates, so the draws matter;
  // each output position must take the same draw of the request's RNG with and without drafts.
  for (const bool device_sampling : {true, false}) {
    SamplingParams sampling;
    sampling.temperature = 1.0f;
    sampling.max_tokens = 40;
    const EngineRun without = run({}, device_sampling, sampling, 6);
    const EngineRun with = run(ngram(4, 3, 1), device_sampling, sampling, 6);
    expect_same_outputs(with, without);
    EXPECT_GT(with.stats.num_spec_accepted_tokens_total, 0);
  }
}

TEST(SpeculativeEngine, AStopTokenOrMaxTokensInsideADraftEndsTheRequestThere) {
  SamplingParams sampling;
  sampling.temperature = 0.0f;
  sampling.stop_token_ids = {9};  // the script's fifth token: kept, and nothing after it
  const EngineRun stop_without = run({}, true, sampling, 1);
  const EngineRun stop_with = run(ngram(5), true, sampling, 1);
  expect_same_outputs(stop_with, stop_without);
  EXPECT_EQ(stop_with.records.at(0).tokens, (std::vector<TokenId>{5, 6, 7, 8, 9}));
  EXPECT_EQ(stop_with.records.at(0).reason, FinishReason::kStop);
  for (const int32_t max_tokens : {1, 2, 3, 4, 7, 11}) {
    SamplingParams capped;
    capped.temperature = 0.0f;
    capped.max_tokens = max_tokens;
    const EngineRun without = run({}, true, capped, 1);
    const EngineRun with = run(ngram(5), true, capped, 1);
    expect_same_outputs(with, without);
    EXPECT_EQ(with.records.at(0).tokens.size(), static_cast<size_t>(max_tokens));
    EXPECT_EQ(with.records.at(0).reason, FinishReason::kLength);
  }
}

// One request with logprobs on a fresh engine: every kept token's logprobs, in order (one per token, several per
// event with drafts).
struct TokensAndLogprobs {
  std::vector<TokenId> tokens;
  std::vector<SampledLogprobs> logprobs;
  EngineStats stats;
};
TokensAndLogprobs run_with_logprobs(const SpeculativeConfig& speculative, bool device_sampling) {
  FakeModelOptions options;
  options.device_sampling = device_sampling;
  options.scripts.push_back({{100, 101}, script_tokens()});
  EngineConfig config = test_config();
  config.max_model_len = 128;
  config.device_sampling = device_sampling;
  config.speculative = speculative;
  Engine engine(std::make_unique<FakeModel>(options), config);
  std::mutex mutex;
  std::condition_variable done;
  bool finished = false;
  TokensAndLogprobs out;
  SubmitParams params;
  params.prompt = prompt_with_pattern(0);
  params.sampling.temperature = 1.0f;
  params.sampling.seed = 3;
  params.sampling.max_tokens = 30;
  params.sampling.logprobs = 2;
  params.on_output = [&](const RequestOutput& output) {
    std::lock_guard<std::mutex> lock(mutex);
    EXPECT_EQ(output.logprobs.size(), output.new_tokens.size());
    out.tokens.insert(out.tokens.end(), output.new_tokens.begin(), output.new_tokens.end());
    out.logprobs.insert(out.logprobs.end(), output.logprobs.begin(), output.logprobs.end());
    if (output.finished) {
      finished = true;
      done.notify_all();
    }
  };
  engine.submit(std::move(params));
  std::unique_lock<std::mutex> lock(mutex);
  EXPECT_TRUE(done.wait_for(lock, 30s, [&] { return finished; }));
  out.stats = engine.stats();
  return out;
}

TEST(SpeculativeEngine, LogprobsOfEveryKeptTokenAsWithoutDrafts) {
  for (const bool device_sampling : {true, false}) {
    const TokensAndLogprobs without = run_with_logprobs({}, device_sampling);
    const TokensAndLogprobs with = run_with_logprobs(ngram(3), device_sampling);
    EXPECT_GT(with.stats.num_spec_accepted_tokens_total, 0);
    EXPECT_EQ(with.tokens, without.tokens);
    ASSERT_EQ(with.logprobs.size(), 30u);
    ASSERT_EQ(without.logprobs.size(), 30u);
    for (size_t i = 0; i < with.logprobs.size(); ++i) {
      EXPECT_FLOAT_EQ(with.logprobs[i].logprob, without.logprobs[i].logprob) << "token " << i;
      ASSERT_EQ(with.logprobs[i].top.size(), 2u);
      for (size_t j = 0; j < 2; ++j) {
        EXPECT_EQ(with.logprobs[i].top[j].token, without.logprobs[i].top[j].token) << "token " << i;
        EXPECT_FLOAT_EQ(with.logprobs[i].top[j].logprob, without.logprobs[i].top[j].logprob) << "token " << i;
      }
    }
  }
}

TEST(SpeculativeEngine, ManyRequestsAndPreemptionKeepTheOutputs) {
  SamplingParams sampling;
  sampling.temperature = 1.0f;
  sampling.max_tokens = 48;
  // 34 blocks of 4 positions for 12 requests of ~19 + 48: preemption by recompute, drafts short of blocks.
  const EngineRun without = run({}, true, sampling, 12, 34);
  const EngineRun with = run(ngram(3), true, sampling, 12, 34);
  expect_same_outputs(with, without);
  EXPECT_GT(with.stats.num_preemptions_total, 0);
  EXPECT_GT(with.stats.num_spec_accepted_tokens_total, 0);
  // disable_by_batch_size: no drafts while more requests than that run.
  SpeculativeConfig limited = ngram(3);
  limited.disable_by_batch_size = 1;
  const EngineRun capped = run(limited, true, sampling, 12, 34);
  expect_same_outputs(capped, without);
  EXPECT_LT(capped.stats.num_spec_drafts_total, with.stats.num_spec_drafts_total);
}

}  // namespace
}  // namespace gossamer::engine
