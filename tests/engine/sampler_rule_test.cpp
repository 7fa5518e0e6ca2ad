// One sampling rule (issue #12 §2): the host sampler draws the same token as the CPU reference of the
// device sampler (kernels::sampling_cpu) for the same logits, settings, penalties and seed, on thousands of
// rows (tests/engine/sampler_rows.h; tests/engine_gpu runs the same rows through the device kernel);
// penalties and raw logprobs do what kernels/sampling.h says.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/sampler.h"
#include "kernels/sampling.h"
#include "kernels/sampling_boundaries.h"  // tests/kernels/
#include "model/host_sampling_batch.h"
#include "sampler_rows.h"

namespace gossamer::engine {
namespace {

// The device sampler's draw as its CPU reference makes it (kernels::sampling_cpu over the engine's device
// row settings, with the penalty list built independently of the host sampler).
struct Reference {
  TokenId token = 0;
  model::RowLogprobs logprobs;
  std::vector<float> x;  // the row the draw saw: the logits with the penalties applied
};

Reference reference_draw(const testing::SamplerRow& row, uint64_t rng_state) {
  const Request& request = row.request;
  model::RowSampling sampling = device_row_sampling(request.sampling, rng_state);
  std::vector<int32_t> penalty_tokens, penalty_counts;
  testing::reference_penalties(request, penalty_tokens, penalty_counts);
  sampling.penalty_tokens = penalty_tokens;
  sampling.penalty_counts = penalty_counts;
  sampling.presence = request.sampling.presence_penalty;
  sampling.frequency = request.sampling.frequency_penalty;
  sampling.repetition = request.sampling.repetition_penalty;
  sampling.num_top_logprobs = request.sampling.logprobs;
  model::HostSamplingBatch batch({&sampling, 1}, static_cast<int32_t>(row.logits.size()));
  kernels::sampling_cpu(batch.params(row.logits.data()));
  Reference ref{batch.tokens[0], batch.logprobs(0), row.logits};
  if (!penalty_tokens.empty()) ref.x = batch.penalized;
  return ref;
}

TEST(SamplerRule, HostMatchesTheDeviceReferenceTokenForToken) {
  const std::vector<testing::SamplerRow> rows = testing::sampler_rows(4000);
  int sampled_rows = 0;
  int ambiguous_rows = 0;  // rows where sums off by 1e-4 (the device's tolerance) could draw another token
  for (size_t r = 0; r < rows.size(); ++r) {
    Request request = rows[r].request;
    const SamplingParams& params = request.sampling;
    const std::vector<float>& logits = rows[r].logits;
    const int vocab = static_cast<int>(logits.size());
    const uint64_t state_before = request.rng_state;
    const Reference ref = reference_draw(rows[r], state_before);
    const TokenId host = sample_request_token(logits, request);
    ASSERT_EQ(host, ref.token) << "row " << r << " vocab " << vocab << " temperature " << params.temperature
                               << " top_k " << params.top_k << " top_p " << params.top_p;
    uint64_t device_state = state_before;
    const model::RowSampling device = device_row_sampling(params, device_state);
    EXPECT_EQ(request.rng_state, device_state) << "the host and device streams advance alike";
    // The GPU test's tolerance (tests/engine_gpu): exact sums give exactly the draw, and 1e-4 little more.
    EXPECT_EQ(
        kernels::test::draws_within_rounding(ref.x, device.temperature, device.top_k, device.top_p, device.seed, 0.0),
        std::vector<int32_t>{host})
        << "row " << r;
    const std::vector<int32_t> near =
        kernels::test::draws_within_rounding(ref.x, device.temperature, device.top_k, device.top_p, device.seed, 1e-4);
    EXPECT_TRUE(std::find(near.begin(), near.end(), host) != near.end()) << "row " << r;
    ambiguous_rows += near.size() > 1;
    if (params.logprobs >= 0) {
      ASSERT_TRUE(!request.pending_logprobs.empty());
      EXPECT_NEAR(request.pending_logprobs.back().logprob, ref.logprobs.logprob, 1e-5) << r;
      ASSERT_EQ(request.pending_logprobs.back().top.size(), ref.logprobs.top.size()) << r;
      for (size_t j = 0; j < ref.logprobs.top.size(); ++j) {
        EXPECT_EQ(request.pending_logprobs.back().top[j].token, ref.logprobs.top[j].first) << r;
        const float got = request.pending_logprobs.back().top[j].logprob, want = ref.logprobs.top[j].second;
        if (std::isinf(want)) {
          EXPECT_EQ(got, want) << r;
        } else {
          EXPECT_NEAR(got, want, 1e-5) << r;
        }
      }
    }
    sampled_rows += params.temperature > 0.0f;
  }
  EXPECT_GT(sampled_rows, 3000);
  EXPECT_LT(ambiguous_rows, static_cast<int>(rows.size()) / 20)
      << "the rounding tolerance admits more than the draw itself on more than 5% of rows";
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
  ASSERT_TRUE(!request.pending_logprobs.empty());
  double sum = 0;
  for (const float z : logits) sum += std::exp(static_cast<double>(z));
  EXPECT_NEAR(request.pending_logprobs.back().logprob, 2.0 - std::log(sum), 1e-5);
  ASSERT_EQ(request.pending_logprobs.back().top.size(), 3u);
  EXPECT_EQ(request.pending_logprobs.back().top[0].token, 10);
  EXPECT_EQ(request.pending_logprobs.back().top[1].token, 20);
  EXPECT_EQ(request.pending_logprobs.back().top[2].token, 30);
  EXPECT_NEAR(request.pending_logprobs.back().top[0].logprob, 3.0 - std::log(sum), 1e-5);
}

}  // namespace
}  // namespace gossamer::engine
