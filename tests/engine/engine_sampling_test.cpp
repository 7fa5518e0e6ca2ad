// Penalties and logprobs through the engine: the device path (model::Model::forward_sample, here the fake
// model's) and the host path give the same tokens and logprobs, and the penalties change the output.
#include <gtest/gtest.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

#include "engine/engine.h"
#include "testing/fake_model.h"

namespace gossamer::engine {
namespace {

struct Result {
  std::vector<TokenId> tokens;
  std::vector<SampledLogprobs> logprobs;
};

// Runs one request to completion on a fresh engine.
Result run(bool device_sampling, const SamplingParams& sampling, bool async_scheduling = false) {
  FakeModelOptions options;
  options.device_sampling = device_sampling;
  options.feeds_pending_tokens = async_scheduling;
  options.scripts.push_back({{}, std::vector<int32_t>(40, 1234)});  // the same token, forced, 40 times
  EngineConfig config;
  config.block_size = 4;
  config.num_kv_blocks = 256;
  config.max_model_len = 256;
  config.device_sampling = device_sampling;
  config.async_scheduling = async_scheduling;
  Engine engine(std::make_unique<FakeModel>(options), config);
  std::mutex mutex;
  std::condition_variable done;
  bool finished = false;
  Result result;
  SubmitParams params;
  params.prompt = {1000, 1007, 1014, 1234};
  params.sampling = sampling;
  params.on_output = [&](const RequestOutput& output) {
    std::lock_guard<std::mutex> lock(mutex);
    result.tokens.insert(result.tokens.end(), output.new_tokens.begin(), output.new_tokens.end());
    result.logprobs.insert(result.logprobs.end(), output.logprobs.begin(), output.logprobs.end());
    if (output.finished) {
      finished = true;
      done.notify_all();
    }
  };
  engine.submit(std::move(params));
  std::unique_lock<std::mutex> lock(mutex);
  EXPECT_TRUE(done.wait_for(lock, std::chrono::seconds(30), [&] { return finished; }));
  return result;
}

TEST(EngineSampling, PenaltiesAndLogprobsAgreeOnTheDeviceAndHostPaths) {
  SamplingParams sampling;
  sampling.temperature = 0.0f;
  sampling.max_tokens = 30;
  sampling.ignore_eos = true;
  sampling.logprobs = 3;
  const Result plain = run(true, sampling);
  ASSERT_EQ(plain.tokens.size(), 30u);
  EXPECT_EQ(plain.tokens, std::vector<TokenId>(30, 1234));
  const Result plain_async = run(true, sampling, true);  // logprobs of steps launched ahead
  EXPECT_EQ(plain_async.tokens, plain.tokens);
  ASSERT_EQ(plain_async.logprobs.size(), plain.logprobs.size());
  for (size_t i = 0; i < plain.logprobs.size(); ++i)
    EXPECT_FLOAT_EQ(plain_async.logprobs[i].logprob, plain.logprobs[i].logprob) << i;
  sampling.frequency_penalty = 2.0f;  // 10 − 2·c falls below the fake's floor (−30) after 20 repeats
  sampling.repetition_penalty = 1.5f;
  const Result device = run(true, sampling);
  const Result host = run(false, sampling);
  const Result device_async = run(true, sampling, true);  // penalized steps keep their order
  EXPECT_NE(device.tokens, plain.tokens);
  EXPECT_EQ(device.tokens, host.tokens);
  EXPECT_EQ(device_async.tokens, device.tokens);
  ASSERT_EQ(device.logprobs.size(), device.tokens.size());
  ASSERT_EQ(host.logprobs.size(), host.tokens.size());
  for (size_t i = 0; i < device.logprobs.size(); ++i) {
    EXPECT_FLOAT_EQ(device.logprobs[i].logprob, host.logprobs[i].logprob) << i;
    ASSERT_EQ(device.logprobs[i].top.size(), 3u);
    ASSERT_EQ(host.logprobs[i].top.size(), 3u);
    for (size_t j = 0; j < 3; ++j) EXPECT_EQ(device.logprobs[i].top[j].token, host.logprobs[i].top[j].token) << i;
    // Raw logprobs: the forced token stays the most likely one even when the penalties pass it over.
    EXPECT_EQ(device.logprobs[i].top[0].token, 1234);
  }
}

}  // namespace
}  // namespace gossamer::engine
