#include "engine/sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <vector>

namespace gossamer::engine {
namespace {

std::vector<float> peaked_logits() {
  std::vector<float> logits(100, -5.0f);
  logits[10] = 3.0f;
  logits[20] = 2.0f;
  logits[30] = 1.0f;
  return logits;
}

TEST(Sampler, GreedyIsArgmaxWithLowestIdOnTies) {
  SamplingParams params;
  params.temperature = 0.0f;
  uint64_t state = 1;
  std::vector<float> logits(8, 0.0f);
  logits[3] = 1.0f;
  logits[5] = 1.0f;
  EXPECT_EQ(sample_token(logits, params, state), 3);
  EXPECT_EQ(state, 1u);  // greedy draws nothing
}

TEST(Sampler, TopKOneIsGreedy) {
  SamplingParams params;
  params.top_k = 1;
  uint64_t state = 42;
  EXPECT_EQ(sample_token(peaked_logits(), params, state), 10);
}

TEST(Sampler, TopKRestrictsTheCandidates) {
  SamplingParams params;
  params.top_k = 2;
  params.temperature = 5.0f;
  uint64_t state = 9;
  for (int i = 0; i < 200; ++i) {
    const TokenId token = sample_token(peaked_logits(), params, state);
    EXPECT_TRUE(token == 10 || token == 20) << token;
  }
}

TEST(Sampler, TopPKeepsTheSmallestNucleus) {
  SamplingParams params;
  params.top_p = 0.5f;  // token 10 alone holds more than half the mass
  uint64_t state = 3;
  for (int i = 0; i < 100; ++i) EXPECT_EQ(sample_token(peaked_logits(), params, state), 10);
}

TEST(Sampler, SameSeedSameTokens) {
  SamplingParams params;
  params.temperature = 1.5f;
  params.seed = 1234;
  uint64_t a = initial_rng_state(params, 0, 1);
  uint64_t b = initial_rng_state(params, 0, 2);  // the seed wins over the request id
  for (int i = 0; i < 50; ++i)
    EXPECT_EQ(sample_token(peaked_logits(), params, a), sample_token(peaked_logits(), params, b));
}

TEST(Sampler, FollowsTheDistribution) {
  SamplingParams params;
  uint64_t state = initial_rng_state(params, 7, 1);
  std::vector<float> logits = {0.0f, std::log(3.0f)};  // probabilities 1/4, 3/4
  int ones = 0;
  const int n = 4000;
  for (int i = 0; i < n; ++i) ones += sample_token(logits, params, state) == 1;
  EXPECT_NEAR(static_cast<double>(ones) / n, 0.75, 0.03);
}

TEST(Sampler, NeverPicksMinusInfinity) {
  SamplingParams params;
  params.temperature = 2.0f;
  uint64_t state = 5;
  std::vector<float> logits(16, -std::numeric_limits<float>::infinity());
  logits[4] = 0.0f;
  logits[9] = 0.0f;
  for (int i = 0; i < 100; ++i) {
    const TokenId token = sample_token(logits, params, state);
    EXPECT_TRUE(token == 4 || token == 9);
  }
}

}  // namespace
}  // namespace gossamer::engine
