// Vocab-parallel sampling (model/sharded_sampling.h) against a direct single-device statement of the
// rule of kernels/sampling.h, over uneven vocab shards, ties, and every filter combination; and rows with
// token masks, penalties and logprobs against the single-device reference (kernels::sampling_cpu).
#include "model/sharded_sampling.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <thread>

#include "comm/thread_communicator.h"
#include "core/random.h"
#include "kernels/token_mask.h"
#include "model/host_sampling_batch.h"

namespace gossamer::model {
namespace {

uint32_t key_of(float x) {
  const uint32_t u = std::bit_cast<uint32_t>(x);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

float uniform(uint64_t seed) {
  SplitMix64 rng(seed);
  return static_cast<float>(rng.next() >> 40) * (1.0f / 16777216.0f);
}

// Every rank of a `world`-rank TP layout samples its vocab slice of `logits` [num_rows, vocab] (padded to its
// shard rows with −∞) with sample_vocab_parallel, one thread per rank; [world] each rank's result.
std::vector<VocabParallelSample> sample_on_ranks(const std::vector<float>& logits, int64_t vocab_size,
                                                 const std::vector<RowSampling>& rows, int32_t world) {
  const int64_t num_rows = static_cast<int64_t>(rows.size());
  const ParallelLayout layout{world, false, 1};
  GptOssConfig config;
  config.vocab_size = static_cast<int32_t>(vocab_size);
  config.num_q_heads = config.num_kv_heads = 8;
  const int64_t stride = vocab_shard_rows(layout, config);
  comm::ThreadGroup group(world);
  std::vector<VocabParallelSample> drawn(static_cast<size_t>(world));
  std::vector<std::thread> threads;
  for (int32_t rank = 0; rank < world; ++rank) {
    threads.emplace_back([&, rank] {
      const IndexRange vocab = shard_for(layout, config, rank).vocab;
      std::vector<float> local(static_cast<size_t>(num_rows * stride), -INFINITY);
      for (int64_t r = 0; r < num_rows; ++r) {
        std::copy_n(logits.begin() + r * vocab_size + vocab.begin, vocab.size(), local.begin() + r * stride);
      }
      drawn[static_cast<size_t>(rank)] =
          sample_vocab_parallel(local.data(), num_rows, stride, vocab, vocab_size, rows, group.communicator(rank));
    });
  }
  for (auto& thread : threads) thread.join();
  return drawn;
}

// The rule on one whole row, written for clarity (sorts the row).
int32_t reference_sample(const std::vector<float>& logits, const RowSampling& s) {
  const int64_t n = static_cast<int64_t>(logits.size());
  if (s.temperature <= 0.0f)
    return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  const float inv_t = 1.0f / s.temperature;
  std::vector<float> v(logits.size());
  std::vector<uint32_t> keys(logits.size());
  for (int64_t i = 0; i < n; ++i)
    keys[static_cast<size_t>(i)] = key_of(v[static_cast<size_t>(i)] = logits[static_cast<size_t>(i)] * inv_t);
  const double max_v = *std::max_element(v.begin(), v.end());
  std::vector<uint32_t> sorted = keys;
  std::sort(sorted.begin(), sorted.end(), std::greater<>());
  uint32_t t = s.top_k > 0 && s.top_k < n ? sorted[static_cast<size_t>(s.top_k - 1)] : 0u;
  auto mass = [&](uint32_t limit) {
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i)
      sum += keys[static_cast<size_t>(i)] >= limit ? std::exp(v[static_cast<size_t>(i)] - max_v) : 0.0;
    return sum;
  };
  if (s.top_p < 1.0f) {
    const double target = s.top_p * mass(t);
    for (uint32_t candidate : sorted) {  // descending: the first key whose upper set reaches the target
      if (candidate >= t && mass(candidate) >= target) {
        t = candidate;
        break;
      }
    }
  }
  const double target = uniform(s.seed) * mass(t);
  double run = 0.0;
  int32_t last = -1;
  for (int64_t i = 0; i < n; ++i) {
    if (keys[static_cast<size_t>(i)] < t) continue;
    last = static_cast<int32_t>(i);
    run += std::exp(v[static_cast<size_t>(i)] - max_v);
    if (run > target) return last;
  }
  return last;
}

TEST(ShardedSamplingTest, EveryWorldSizeDrawsTheRulesToken) {
  constexpr int64_t kVocab = 1000;
  SplitMix64 rng(5);
  std::vector<RowSampling> rows;
  for (float temperature : {0.0f, 0.7f, 1.5f}) {
    for (int32_t top_k : {0, 1, 7, 50, 999, 1000}) {
      for (float top_p : {1.0f, 0.9f, 0.3f, 0.001f}) {
        for (uint64_t seed : {1ull, 99ull, 12345ull}) rows.push_back({temperature, top_k, top_p, seed});
      }
    }
  }
  const int64_t num_rows = static_cast<int64_t>(rows.size());
  std::vector<float> logits(static_cast<size_t>(num_rows * kVocab));
  for (float& x : logits)
    x = std::round(static_cast<float>(rng.next() % 4000) / 400.0f * 8.0f) / 8.0f - 5.0f;  // many ties
  std::vector<int32_t> expected(static_cast<size_t>(num_rows));
  for (int64_t r = 0; r < num_rows; ++r) {
    expected[static_cast<size_t>(r)] = reference_sample(
        {logits.begin() + r * kVocab, logits.begin() + (r + 1) * kVocab}, rows[static_cast<size_t>(r)]);
  }
  for (int32_t world : {1, 2, 3, 8}) {
    const std::vector<VocabParallelSample> drawn = sample_on_ranks(logits, kVocab, rows, world);
    for (int32_t rank = 0; rank < world; ++rank) {
      for (int64_t r = 0; r < num_rows; ++r) {
        const RowSampling& s = rows[static_cast<size_t>(r)];
        EXPECT_EQ(drawn[static_cast<size_t>(rank)].tokens[static_cast<size_t>(r)], expected[static_cast<size_t>(r)])
            << "world " << world << " rank " << rank << " T " << s.temperature << " k " << s.top_k << " p " << s.top_p
            << " seed " << s.seed;
      }
    }
  }
}

// [num_rows] (tokens, logprobs) of the single-device rule on whole rows: each row's mask, then sampling_cpu.
std::pair<std::vector<int32_t>, std::vector<RowLogprobs>> single_device(std::vector<float> logits, int32_t vocab,
                                                                        std::span<const RowSampling> rows) {
  for (size_t r = 0; r < rows.size(); ++r) {
    if (rows[r].token_mask == nullptr) continue;
    kernels::TokenMaskParams mask;
    mask.logits = logits.data() + r * static_cast<size_t>(vocab);
    mask.masks = rows[r].token_mask;
    mask.num_rows = 1;
    mask.vocab = vocab;
    mask.words = (vocab + 31) / 32;
    kernels::token_mask_cpu(mask);
  }
  HostSamplingBatch batch(rows, vocab);
  kernels::sampling_cpu(batch.params(logits.data()));
  std::vector<RowLogprobs> logprobs(rows.size());
  for (size_t r = 0; r < rows.size(); ++r) {
    if (rows[r].num_top_logprobs >= 0) logprobs[r] = batch.logprobs(static_cast<int32_t>(r));
  }
  return {batch.tokens, logprobs};
}

// Logprobs within 1e-5 relative (of max(|want|, 1)); refused tokens' are −inf on both sides.
void expect_close(float got, float want, const std::string& where) {
  if (std::isinf(want)) {
    EXPECT_EQ(got, want) << where;
  } else {
    EXPECT_NEAR(got, want, 1e-5 * std::max(1.0f, std::abs(want))) << where;
  }
}

// Rows with masks (whole slices refused, a handful of tokens allowed), penalties (on every slice) and
// logprobs (0, 5, 20 top entries) over ties and over distinct logits: every world size draws the
// single-device tokens, the same top tokens in the same order, and logprobs within float rounding.
TEST(ShardedSamplingTest, MasksPenaltiesAndLogprobsMatchTheSingleDeviceRule) {
  constexpr int32_t kVocab = 1000, kWords = (kVocab + 31) / 32;
  SplitMix64 rng(17);
  std::vector<std::vector<uint32_t>> masks(3, std::vector<uint32_t>(kWords, 0u));
  for (uint32_t& word : masks[0]) word = static_cast<uint32_t>(rng.next());                     // about half allowed
  for (int32_t t : {3, 517, 518, 999}) masks[1][t / 32] |= 1u << (t % 32);                      // four tokens
  for (int32_t t = 600; t < 700; ++t) masks[2][static_cast<size_t>(t / 32)] |= 1u << (t % 32);  // one slice's part
  std::vector<int32_t> penalty_tokens, penalty_counts;
  for (int32_t t = 0; t < kVocab; t += 7) {
    penalty_tokens.push_back(t);
    penalty_counts.push_back(t % 4);
  }
  std::vector<RowSampling> rows;
  for (float temperature : {0.0f, 0.9f}) {
    for (int32_t top_k : {0, 20}) {
      for (float top_p : {1.0f, 0.8f}) {
        for (int variant = 0; variant < 6; ++variant) {
          RowSampling row{temperature, top_k, top_p, static_cast<uint64_t>(31 + variant)};
          if (variant == 1 || variant == 4) {
            row.penalty_tokens = penalty_tokens;
            row.penalty_counts = penalty_counts;
            row.presence = 0.5f;
            row.frequency = 0.25f;
            row.repetition = 1.3f;
          }
          row.num_top_logprobs = variant == 0 ? -1 : variant == 2 ? 0 : variant == 3 ? 20 : 5;
          if (variant >= 3) row.token_mask = masks[static_cast<size_t>(variant - 3)].data();
          rows.push_back(row);
        }
      }
    }
  }
  const int64_t num_rows = static_cast<int64_t>(rows.size());
  for (const bool ties : {true, false}) {
    std::vector<float> logits(static_cast<size_t>(num_rows * kVocab));
    for (float& x : logits) {
      x = ties ? std::round(static_cast<float>(rng.next() % 4000) / 400.0f * 4.0f) / 4.0f - 5.0f
               : static_cast<float>(rng.next() % 1000000) * 1e-5f - 5.0f;
    }
    const auto [expected, expected_logprobs] = single_device(logits, kVocab, rows);
    for (int32_t world : {1, 2, 3, 8}) {
      const std::vector<VocabParallelSample> drawn = sample_on_ranks(logits, kVocab, rows, world);
      for (int32_t rank = 0; rank < world; ++rank) {
        const VocabParallelSample& ours = drawn[static_cast<size_t>(rank)];
        for (size_t r = 0; r < rows.size(); ++r) {
          const RowSampling& s = rows[r];
          const std::string where = "ties " + std::to_string(ties) + " world " + std::to_string(world) + " rank " +
                                    std::to_string(rank) + " row " + std::to_string(r);
          ASSERT_EQ(ours.tokens[r], expected[r]) << where;
          if (s.token_mask != nullptr) {
            EXPECT_TRUE((s.token_mask[ours.tokens[r] / 32] >> (ours.tokens[r] % 32)) & 1u) << where;
          }
          const RowLogprobs& want = expected_logprobs[r];
          const RowLogprobs& got = ours.logprobs[r];
          expect_close(got.logprob, want.logprob, where);
          ASSERT_EQ(got.top.size(), want.top.size()) << where;
          for (size_t j = 0; j < want.top.size(); ++j) {
            EXPECT_EQ(got.top[j].first, want.top[j].first) << where << " top " << j;
            expect_close(got.top[j].second, want.top[j].second, where + " top " + std::to_string(j));
          }
          // Every rank ends with the same bits.
          EXPECT_EQ(std::bit_cast<uint32_t>(got.logprob), std::bit_cast<uint32_t>(drawn[0].logprobs[r].logprob))
              << where;
        }
      }
    }
  }
}

}  // namespace
}  // namespace gossamer::model
