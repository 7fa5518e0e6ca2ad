#include "engine/engine.h"

#include <gtest/gtest.h>

#include <chrono>
#include <map>

#include "engine_test_requests.h"
#include "testing/fake_model.h"

namespace gossamer::engine {
namespace {

using namespace std::chrono_literals;

std::vector<TokenId> reference_greedy(const FakeModel& model, std::vector<TokenId> history, int32_t max_tokens) {
  std::vector<TokenId> out;
  for (int i = 0; i < max_tokens; ++i) {
    const TokenId token = model.next_token(history);
    out.push_back(token);
    history.push_back(token);
  }
  return out;
}

TEST(Engine, GreedyOutputMatchesTheModelRunAlone) {
  FakeModel reference;
  Engine engine(std::make_unique<FakeModel>(), test_config());
  OutputCollector collector;
  const RequestId id = engine.submit(greedy(prompt_of(0, 50), 20, collector));  // 50 > budget: chunked prefill
  ASSERT_TRUE(collector.wait(1));
  const auto record = collector.get(id);
  EXPECT_EQ(record.tokens, reference_greedy(reference, prompt_of(0, 50), 20));
  EXPECT_EQ(record.reason, FinishReason::kLength);
  EXPECT_EQ(record.num_output_tokens, 20);
  EXPECT_EQ(record.num_events, 20);  // one event per token, the last one finished
  EXPECT_EQ(engine.stats().num_free_kv_blocks, 256);
}

TEST(Engine, BatchingAndPreemptionDoNotChangeGreedyOutputs) {
  for (const bool decode_first : {true, false}) {  // the scheduling policy (scheduler.h) and the old one
    FakeModel reference;
    EngineConfig config = test_config();
    config.num_kv_blocks = 40;  // 160 positions for 24 requests of ~60: forces preemption
    config.max_model_len = 128;
    config.decode_first = decode_first;
    Engine engine(std::make_unique<FakeModel>(), config);
    OutputCollector collector;
    std::map<RequestId, int> index_of;
    const int n = 24;
    for (int i = 0; i < n; ++i) index_of[engine.submit(greedy(prompt_of(i, 10 + i), 40, collector))] = i;
    ASSERT_TRUE(collector.wait(n, 60s));
    for (const auto& [id, i] : index_of) {
      const auto record = collector.get(id);
      EXPECT_EQ(record.tokens, reference_greedy(reference, prompt_of(i, 10 + i), 40)) << "request " << i;
      EXPECT_EQ(record.reason, FinishReason::kLength);
    }
    const EngineStats stats = engine.stats();
    EXPECT_GT(stats.num_preemptions_total, 0);
    EXPECT_EQ(stats.num_free_kv_blocks, config.num_kv_blocks);
    EXPECT_EQ(stats.num_running, 0);
    EXPECT_EQ(stats.num_waiting, 0);
    // The loop's time by phase: the fake model runs its steps inside the wait; every phase ran.
    EXPECT_GT(stats.loop.wait, 0.0);
    EXPECT_GT(stats.loop.schedule, 0.0);
    EXPECT_GT(stats.loop.launch, 0.0);
    EXPECT_GT(stats.loop.collect, 0.0);
    EXPECT_GT(stats.loop.postprocess, 0.0);
  }
}

// The engine knows no chat format: the request names its stop tokens (here Harmony's <|return|> and
// <|call|>, as the server does), and the token that stopped it ends its output.
TEST(Engine, StopsOnTheRequestsStopTokens) {
  constexpr TokenId kReturn = 200002, kCall = 200012;
  FakeModelOptions options;
  options.scripts.push_back({{5, 5, 5}, {200005, 17, 18, kReturn, 99}});
  options.scripts.push_back({{6, 6, 6}, {200005, 19, kCall, 99}});
  Engine engine(std::make_unique<FakeModel>(options), test_config());
  OutputCollector collector;
  const auto with_stops = [&](std::vector<TokenId> prompt, int32_t max_tokens) {
    SubmitParams params = greedy(std::move(prompt), max_tokens, collector);
    params.sampling.stop_token_ids = {kReturn, kCall};
    return params;
  };
  const RequestId stop = engine.submit(with_stops({5, 5, 5}, 50));
  const RequestId call = engine.submit(with_stops({6, 6, 6}, 50));
  auto ignore = with_stops({5, 5, 5}, 6);
  ignore.sampling.ignore_eos = true;
  const RequestId ignored = engine.submit(std::move(ignore));
  const RequestId no_stops = engine.submit(greedy({6, 6, 6}, 5, collector));  // none named: runs to its length
  ASSERT_TRUE(collector.wait(4));
  EXPECT_EQ(collector.get(stop).tokens, (std::vector<TokenId>{200005, 17, 18, kReturn}));
  EXPECT_EQ(collector.get(stop).reason, FinishReason::kStop);
  EXPECT_EQ(collector.get(call).tokens, (std::vector<TokenId>{200005, 19, kCall}));
  EXPECT_EQ(collector.get(call).reason, FinishReason::kStop);
  EXPECT_EQ(collector.get(ignored).tokens.size(), 6u);
  EXPECT_EQ(collector.get(ignored).reason, FinishReason::kLength);
  EXPECT_EQ(collector.get(no_stops).tokens.size(), 5u);
  EXPECT_EQ(collector.get(no_stops).reason, FinishReason::kLength);
}

TEST(Engine, StopsAtTheContextLength) {
  EngineConfig config = test_config();
  config.max_model_len = 24;
  Engine engine(std::make_unique<FakeModel>(), config);
  OutputCollector collector;
  const RequestId id = engine.submit(greedy(prompt_of(1, 20), 0, collector));  // 0 = up to the context
  ASSERT_TRUE(collector.wait(1));
  EXPECT_EQ(collector.get(id).tokens.size(), 4u);
  EXPECT_EQ(collector.get(id).reason, FinishReason::kLength);
}

TEST(Engine, RejectsOversizedAndInvalidRequests) {
  EngineConfig config = test_config();
  config.max_model_len = 32;
  Engine engine(std::make_unique<FakeModel>(), config);
  OutputCollector collector;
  try {
    engine.submit(greedy(prompt_of(0, 30), 10, collector));
    FAIL() << "expected ContextLengthError";
  } catch (const ContextLengthError& error) {
    EXPECT_EQ(error.prompt_tokens, 30);
    EXPECT_EQ(error.max_model_len, 32);
    EXPECT_NE(std::string(error.what()).find("maximum context length is 32"), std::string::npos);
  }
  EXPECT_THROW(engine.submit(greedy({}, 1, collector)), Error);
  EXPECT_THROW(engine.submit(greedy({-1}, 1, collector)), Error);
  EXPECT_THROW(engine.submit(greedy({300000}, 1, collector)), Error);
}

TEST(Engine, CancelFreesBlocksAndReportsAbort) {
  FakeModelOptions options;
  options.step_delay_us = 2000;
  Engine engine(std::make_unique<FakeModel>(options), test_config());
  OutputCollector collector;
  const RequestId id = engine.submit(greedy(prompt_of(2, 40), 200, collector));
  while (engine.stats().num_running == 0) std::this_thread::sleep_for(1ms);
  EXPECT_LT(engine.stats().num_free_kv_blocks, 256);
  engine.cancel(id);
  ASSERT_TRUE(collector.wait(1));
  EXPECT_EQ(collector.get(id).reason, FinishReason::kAbort);
  for (int i = 0; i < 100 && engine.stats().num_free_kv_blocks != 256; ++i) std::this_thread::sleep_for(1ms);
  EXPECT_EQ(engine.stats().num_free_kv_blocks, 256);
  engine.cancel(id);  // unknown now: ignored
  engine.cancel(12345);
}

TEST(Engine, RefusesWhenTheQueueIsFull) {
  FakeModelOptions options;
  options.step_delay_us = 5000;
  EngineConfig config = test_config();
  config.max_num_seqs = 1;
  config.max_queued_requests = 2;
  Engine engine(std::make_unique<FakeModel>(options), config);
  OutputCollector collector;
  int accepted = 0;
  bool refused = false;
  for (int i = 0; i < 10 && !refused; ++i) {
    try {
      engine.submit(greedy(prompt_of(i, 4), 50, collector));
      ++accepted;
    } catch (const QueueFullError&) {
      refused = true;
    }
  }
  EXPECT_TRUE(refused);
  EXPECT_LE(accepted, 4);
}

TEST(Engine, ShutdownAbortsEveryRequest) {
  FakeModelOptions options;
  options.step_delay_us = 2000;
  OutputCollector collector;
  auto engine = std::make_unique<Engine>(std::make_unique<FakeModel>(options), test_config());
  for (int i = 0; i < 5; ++i) engine->submit(greedy(prompt_of(i, 8), 200, collector));
  engine.reset();
  ASSERT_TRUE(collector.wait(5, 1s));
}

TEST(Engine, SeededSamplingIsReproducible) {
  OutputCollector collector;
  Engine engine(std::make_unique<FakeModel>(), test_config());
  std::vector<RequestId> ids;
  for (int i = 0; i < 2; ++i) {
    SubmitParams params;
    params.prompt = prompt_of(3, 12);
    params.sampling.temperature = 1.0f;
    params.sampling.seed = 77;
    params.sampling.max_tokens = 16;
    params.on_output = collector.callback();
    ids.push_back(engine.submit(std::move(params)));
  }
  ASSERT_TRUE(collector.wait(2));
  EXPECT_EQ(collector.get(ids[0]).tokens, collector.get(ids[1]).tokens);
}

// A backend that samples on its device: the engine hands it each row's settings instead of sampling
// logits itself. Greedy rows give the model's own tokens; seeded rows are reproducible and draw from the
// request's RNG (two different seeds diverge); with device_sampling off the engine samples on the host.
TEST(Engine, DeviceSamplingPathIsUsedAndSeeded) {
  FakeModel reference;
  FakeModelOptions options;
  options.device_sampling = true;
  auto owned = std::make_unique<FakeModel>(options);
  FakeModel* model = owned.get();
  Engine engine(std::move(owned), test_config());
  OutputCollector collector;
  const RequestId greedy_id = engine.submit(greedy(prompt_of(1, 30), 12, collector));
  std::vector<RequestId> seeded;
  for (const uint64_t seed : {5u, 5u, 6u}) {
    SubmitParams params;
    params.prompt = prompt_of(2, 9);
    params.sampling.temperature = 3.0f;  // the fake's top token keeps ~60% (97% at 1): seeds diverge
    params.sampling.seed = seed;
    params.sampling.max_tokens = 24;
    params.on_output = collector.callback();
    seeded.push_back(engine.submit(std::move(params)));
  }
  ASSERT_TRUE(collector.wait(4));
  EXPECT_EQ(collector.get(greedy_id).tokens, reference_greedy(reference, prompt_of(1, 30), 12));
  EXPECT_EQ(collector.get(seeded[0]).tokens, collector.get(seeded[1]).tokens);
  EXPECT_NE(collector.get(seeded[0]).tokens, collector.get(seeded[2]).tokens);
  EXPECT_GT(model->num_forward_sample_calls(), 0);

  EngineConfig host = test_config();
  host.device_sampling = false;
  auto host_owned = std::make_unique<FakeModel>(options);
  FakeModel* host_model = host_owned.get();
  Engine host_engine(std::move(host_owned), host);
  OutputCollector host_collector;
  const RequestId id = host_engine.submit(greedy(prompt_of(1, 30), 12, host_collector));
  ASSERT_TRUE(host_collector.wait(1));
  EXPECT_EQ(host_collector.get(id).tokens, collector.get(greedy_id).tokens);
  EXPECT_EQ(host_model->num_forward_sample_calls(), 0);
}

}  // namespace
}  // namespace gossamer::engine
