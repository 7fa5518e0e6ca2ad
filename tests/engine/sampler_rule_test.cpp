// One sampling rule (issue #12 §2): the host sampler draws the same token as the CPU reference of the
// device sampler (kernels::sampling_cpu) for the same logits, settings, penalties and seed, on thousands of
// rows; penalties and raw logprobs do what kernels/sampling.h says.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <vector>

#include "engine/sampler.h"
#include "kernels/sampling.h"

namespace gossamer::engine {
namespace {

float round_to_bf16(float x) {
  uint32_t bits = 0;
  std::memcpy(&bits, &x, 4);
  bits = (bits + 0x7FFFu + ((bits >> 16) & 1u)) & 0xFFFF0000u;
  std::memcpy(&x, &bits, 4);
  return x;
}

struct Reference {
  TokenId token = 0;
  float logprob = 0.0f;
  std::vector<TokenLogprob> top;
};

// What the device sampler's reference draws for `request` from `logits`, given the row seed the engine
// derives (device_row_sampling) and the penalty list built here independently of the host sampler.
Reference reference_draw(const std::vector<float>& logits, const Request& request, uint64_t rng_state) {
  const SamplingParams& params = request.sampling;
  const model::RowSampling row = device_row_sampling(params, rng_state);
  std::map<TokenId, int32_t> counts;
  if (params.repetition_penalty != 1.0f) {
    for (const TokenId token : request.prompt) counts[token] += 0;
  }
  for (const TokenId token : request.output) counts[token] += 1;
  std::vector<int32_t> offsets = {0, 0}, tokens, entry_counts;
  if (params.has_penalties()) {
    for (const auto& [token, count] : counts) {
      tokens.push_back(token);
      entry_counts.push_back(count);
    }
    offsets[1] = static_cast<int32_t>(tokens.size());
  }
  const int vocab = static_cast<int>(logits.size());
  std::vector<float> penalized(logits.size());
  int32_t out = -1, num_top = std::max(params.logprobs, 0);
  std::vector<int32_t> top_tokens(kernels::kMaxTopLogprobs);
  std::vector<float> top_logprobs(kernels::kMaxTopLogprobs);
  float logprob = 0.0f;
  kernels::SamplingParams p;
  p.logits = logits.data();
  p.out_tokens = &out;
  p.temperature = &row.temperature;
  p.top_k = &row.top_k;
  p.top_p = &row.top_p;
  p.seeds = &row.seed;
  p.num_rows = 1;
  p.vocab = vocab;
  p.penalty_offsets = offsets.data();
  p.penalty_tokens = tokens.data();
  p.penalty_counts = entry_counts.data();
  p.presence = &params.presence_penalty;
  p.frequency = &params.frequency_penalty;
  p.repetition = &params.repetition_penalty;
  p.penalized = penalized.data();
  p.out_logprobs = &logprob;
  p.num_top = &num_top;
  p.out_top_tokens = top_tokens.data();
  p.out_top_logprobs = top_logprobs.data();
  kernels::sampling_cpu(p);
  Reference ref{out, logprob, {}};
  for (int j = 0; j < std::min(num_top, vocab); ++j)
    ref.top.push_back({top_tokens[static_cast<size_t>(j)], top_logprobs[static_cast<size_t>(j)]});
  return ref;
}

TEST(SamplerRule, HostMatchesTheDeviceReferenceTokenForToken) {
  std::mt19937_64 rng(2026);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  int rows = 0, sampled_rows = 0;
  for (int r = 0; r < 4000; ++r) {
    const bool full_vocab = r % 400 == 0;  // a few rows of the real vocabulary, the rest small
    const int vocab = full_vocab ? 201088 : 2 + static_cast<int>(rng() % 3000);
    const float scale = 0.5f + 6.0f * unit(rng);
    std::normal_distribution<float> normal(0.0f, scale);
    std::vector<float> logits(static_cast<size_t>(vocab));
    const bool bf16 = r % 2 == 0;  // bf16-rounded logits give real ties
    for (float& z : logits) z = bf16 ? round_to_bf16(normal(rng)) : normal(rng);
    if (r % 7 == 0) logits[rng() % logits.size()] = -std::numeric_limits<float>::infinity();
    if (r % 11 == 0) logits[rng() % logits.size()] = logits[rng() % logits.size()];  // an exact tie

    Request request;
    SamplingParams& params = request.sampling;
    const int kind = static_cast<int>(rng() % 8);
    params.temperature = kind == 0 ? 0.0f : 0.1f + 1.9f * unit(rng);
    if (kind == 1 || kind == 4 || kind == 6) params.top_k = 1 + static_cast<int32_t>(rng() % std::min(vocab, 300));
    if (kind == 2 || kind == 4 || kind == 7) params.top_p = 0.05f + 0.95f * unit(rng);
    if (kind == 3 || kind == 5 || kind == 6) {
      params.presence_penalty = 4.0f * unit(rng) - 2.0f;
      params.frequency_penalty = 4.0f * unit(rng) - 2.0f;
      params.repetition_penalty = rng() % 2 ? 1.0f : 0.5f + 1.5f * unit(rng);
    }
    params.logprobs = r % 3 == 0 ? static_cast<int32_t>(rng() % 21) : -1;
    for (int i = 0; i < static_cast<int>(rng() % 40); ++i)
      request.prompt.push_back(static_cast<TokenId>(rng() % vocab));
    for (int i = 0; i < static_cast<int>(rng() % 60); ++i) {
      request.output.push_back(static_cast<TokenId>(rng() % std::min(vocab, 50)));  // repeats
    }
    request.rng_state = rng();

    const uint64_t state_before = request.rng_state;
    const Reference ref = reference_draw(logits, request, state_before);
    const TokenId host = sample_request_token(logits, request);
    ASSERT_EQ(host, ref.token) << "row " << r << " vocab " << vocab << " temperature " << params.temperature
                               << " top_k " << params.top_k << " top_p " << params.top_p;
    uint64_t device_state = state_before;
    device_row_sampling(params, device_state);
    EXPECT_EQ(request.rng_state, device_state) << "the host and device streams advance alike";
    if (params.logprobs >= 0) {
      ASSERT_TRUE(request.last_logprobs.has_value());
      EXPECT_NEAR(request.last_logprobs->logprob, ref.logprob, 1e-5) << r;
      ASSERT_EQ(request.last_logprobs->top.size(), ref.top.size()) << r;
      for (size_t j = 0; j < ref.top.size(); ++j) {
        EXPECT_EQ(request.last_logprobs->top[j].token, ref.top[j].token) << r;
        const float got = request.last_logprobs->top[j].logprob, want = ref.top[j].logprob;
        if (std::isinf(want)) {
          EXPECT_EQ(got, want) << r;
        } else {
          EXPECT_NEAR(got, want, 1e-5) << r;
        }
      }
    }
    ++rows;
    sampled_rows += params.temperature > 0.0f;
  }
  EXPECT_EQ(rows, 4000);
  EXPECT_GT(sampled_rows, 3000);
}

std::vector<float> peaked_logits() {
  std::vector<float> logits(100, -5.0f);
  logits[10] = 3.0f;
  logits[20] = 2.0f;
  logits[30] = -1.0f;
  return logits;
}

TEST(SamplerRule, FrequencyAndPresencePenalisePastOutputTokens) {
  Request request;
  request.sampling.temperature = 0.0f;
  request.output = {10, 10};
  request.sampling.frequency_penalty = 0.6f;  // 3 − 1.2 = 1.8 < 2: token 20 wins
  EXPECT_EQ(sample_request_token(peaked_logits(), request), 20);
  Request presence;
  presence.sampling.temperature = 0.0f;
  presence.output = {10};
  presence.sampling.presence_penalty = 0.9f;  // 3 − 0.9 = 2.1 > 2: token 10 still wins
  EXPECT_EQ(sample_request_token(peaked_logits(), presence), 10);
  presence.sampling.presence_penalty = 1.1f;
  presence.penalty = {};
  EXPECT_EQ(sample_request_token(peaked_logits(), presence), 20);
  // The counts catch up with new output tokens.
  Request growing;
  growing.sampling.temperature = 0.0f;
  growing.sampling.frequency_penalty = 0.4f;
  EXPECT_EQ(sample_request_token(peaked_logits(), growing), 10);
  growing.output = {10, 10, 10};
  EXPECT_EQ(sample_request_token(peaked_logits(), growing), 20);  // 3 − 3 · 0.4 = 1.8 < 2
}

TEST(SamplerRule, RepetitionPenaltyCoversThePromptAndShrinksTowardsLessLikely) {
  Request request;
  request.sampling.temperature = 0.0f;
  request.sampling.repetition_penalty = 2.0f;
  request.prompt = {10};  // 3 / 2 = 1.5 < 2
  EXPECT_EQ(sample_request_token(peaked_logits(), request), 20);
  std::vector<float> negative(4, -10.0f);
  negative[1] = -1.0f;
  negative[2] = -1.5f;
  Request neg;
  neg.sampling.temperature = 0.0f;
  neg.sampling.repetition_penalty = 2.0f;
  neg.output = {1};  // −1 · 2 = −2 < −1.5
  EXPECT_EQ(sample_request_token(negative, neg), 2);
}

TEST(SamplerRule, RawLogprobsAreTheModelsLogSoftmax) {
  Request request;
  request.sampling.temperature = 0.0f;
  request.sampling.logprobs = 3;
  request.sampling.frequency_penalty = 2.0f;  // penalties change the draw, not the reported logprobs
  request.output = {10};
  const std::vector<float> logits = peaked_logits();
  EXPECT_EQ(sample_request_token(logits, request), 20);
  ASSERT_TRUE(request.last_logprobs.has_value());
  double sum = 0;
  for (const float z : logits) sum += std::exp(static_cast<double>(z));
  EXPECT_NEAR(request.last_logprobs->logprob, 2.0 - std::log(sum), 1e-5);
  ASSERT_EQ(request.last_logprobs->top.size(), 3u);
  EXPECT_EQ(request.last_logprobs->top[0].token, 10);
  EXPECT_EQ(request.last_logprobs->top[1].token, 20);
  EXPECT_EQ(request.last_logprobs->top[2].token, 30);
  EXPECT_NEAR(request.last_logprobs->top[0].logprob, 3.0 - std::log(sum), 1e-5);
}

}  // namespace
}  // namespace gossamer::engine
