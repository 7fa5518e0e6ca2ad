// The CPU reference of kernels/vocab_sampling.h run as a group of simulated ranks (the sums between the
// launches taken here, in rank order, as the communicator does): greedy tokens equal the single-device
// rule's exactly (ties across a slice boundary → the lowest id), the top-k threshold equals the k-th
// largest key exactly, every rank ends with the same tokens, and seeded draws equal sampling_cpu's except
// within rounding of a boundary (tests/kernels/sampling_boundaries.h), rows under token masks and rows with
// penalties (step 0 on each slice's f32 copy) included. The logprob records (kernels/vocab_logprobs.h),
// merged, give sampling_cpu's top ids exactly and its logprobs within f32 rounding.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "../kernels/sampling_boundaries.h"
#include "core/dtype.h"
#include "kernels/sampling.h"
#include "kernels/token_mask.h"
#include "kernels/vocab_logprobs.h"
#include "kernels/vocab_sampling.h"

namespace gossamer::kernels {
namespace {

struct Settings {
  std::vector<float> temperature, top_p;
  std::vector<int32_t> top_k;
  std::vector<uint64_t> seeds;
  // Penalties (offsets empty: none), as SamplingParams has them.
  std::vector<int32_t> offsets, tokens, counts;
  std::vector<float> presence, frequency, repetition;
};

// Σ over ranks of each rank's buffer, in rank order; every rank receives the result.
void sum_over_ranks(std::vector<std::vector<float>>& per_rank) {
  std::vector<float> total(per_rank[0].size(), 0.f);
  for (const auto& mine : per_rank) {
    for (size_t i = 0; i < total.size(); ++i) total[i] += mine[i];
  }
  for (auto& mine : per_rank) mine = total;
}

// The whole distributed rule over `world` slices of logits [rows, vocab] (bf16 bits); returns every
// rank's tokens.
std::vector<std::vector<int32_t>> sample_on_slices(const std::vector<uint16_t>& logits, int rows, int vocab, int world,
                                                   const Settings& s) {
  const int shard = (vocab + world - 1) / world;
  std::vector<std::vector<uint16_t>> slices(world);
  std::vector<VocabSliceParams> params(world);
  std::vector<int32_t> penalized_rows(rows, -1);
  int num_penalized = 0;
  for (int r = 0; r < rows && !s.offsets.empty(); ++r)
    if (s.offsets[r + 1] > s.offsets[r]) penalized_rows[r] = num_penalized++;
  std::vector<std::vector<float>> penalized(world);
  for (int q = 0; q < world; ++q) {
    const int begin = q * shard, cols = std::min(vocab, begin + shard) - begin;
    for (int r = 0; r < rows; ++r)
      slices[q].insert(slices[q].end(), logits.begin() + int64_t{r} * vocab + begin,
                       logits.begin() + int64_t{r} * vocab + begin + cols);
    params[q] =
        VocabSliceParams{slices[q].data(), cols, cols, begin, q, world, rows, s.temperature.data(), nullptr, nullptr};
    if (num_penalized == 0) continue;
    // 0. penalties: each rank's f32 copies of its slice of the penalized rows
    penalized[q].assign(size_t(num_penalized) * cols, 0.f);
    params[q].penalized = penalized[q].data();
    params[q].penalized_rows = penalized_rows.data();
    VocabPenaltyParams pen{s.offsets.data(),   s.tokens.data(),     s.counts.data(),    s.presence.data(),
                           s.frequency.data(), s.repetition.data(), penalized[q].data()};
    vocab_penalize_cpu(params[q], pen);
  }
  std::vector<int32_t> sampled, k_rows, p_rows;
  for (int r = 0; r < rows; ++r) {
    if (s.temperature[r] <= 0.f) continue;
    sampled.push_back(r);
    if (s.top_k[r] > 0 && s.top_k[r] < vocab) k_rows.push_back(r);
    if (s.top_p[r] < 1.f) p_rows.push_back(r);
  }
  std::vector<std::vector<int32_t>> tokens(world, std::vector<int32_t>(rows, -1));
  std::vector<std::vector<VocabRowState>> state(world, std::vector<VocabRowState>(rows));
  std::vector<std::vector<float>> buffer(world);
  auto each = [&](const std::function<void(int)>& f) {
    for (int q = 0; q < world; ++q) f(q);
  };
  // 1. argmax
  each([&](int q) {
    buffer[q].assign(size_t(world) * rows * kVocabMaxRecord, -1.f);
    vocab_local_max_cpu(params[q], buffer[q].data());
  });
  sum_over_ranks(buffer);
  each([&](int q) { vocab_merge_max_cpu(buffer[q].data(), world, rows, tokens[q].data(), state[q].data()); });
  // 2./3. selections
  std::vector<std::vector<float>> masses(world);
  auto select = [&](VocabSelect what, const std::vector<int32_t>& which) {
    const int n = static_cast<int>(which.size());
    for (int shift = 24; shift >= -8; shift -= 8) {
      each([&](int q) {
        buffer[q].resize(size_t(n) * kVocabSelectBins);
        VocabSelectParams sp{what,
                             which.data(),
                             n,
                             shift,
                             s.top_k.data(),
                             s.top_p.data(),
                             masses[q].data(),
                             state[q].data(),
                             buffer[q].data()};
        vocab_select_round_cpu(params[q], sp);
      });
      if (shift >= 0) sum_over_ranks(buffer);
    }
  };
  if (!k_rows.empty()) select(VocabSelect::kTopK, k_rows);
  if (!p_rows.empty()) {
    each([&](int q) {
      masses[q].resize(size_t(world) * p_rows.size());
      vocab_local_mass_cpu(params[q], p_rows.data(), static_cast<int>(p_rows.size()), state[q].data(),
                           masses[q].data());
    });
    sum_over_ranks(masses);
    select(VocabSelect::kTopP, p_rows);
  }
  // 4. the draw
  if (sampled.empty()) return tokens;
  const int n = static_cast<int>(sampled.size());
  each([&](int q) {
    masses[q].resize(size_t(world) * n);
    vocab_local_mass_cpu(params[q], sampled.data(), n, state[q].data(), masses[q].data());
  });
  sum_over_ranks(masses);
  each([&](int q) {
    buffer[q].resize(size_t(world) * n * 2);
    vocab_local_draw_cpu(params[q], sampled.data(), n, state[q].data(), masses[q].data(), s.seeds.data(),
                         buffer[q].data());
  });
  sum_over_ranks(buffer);
  each([&](int q) { vocab_merge_draw_cpu(buffer[q].data(), world, sampled.data(), n, tokens[q].data()); });
  return tokens;
}

TEST(VocabSamplingRef, MatchesTheSingleDeviceRule) {
  std::mt19937 rng(19);
  const int vocab = 5003;  // not a multiple of the world: the last slice is shorter
  struct Row {
    float temp;
    int top_k;
    float top_p;
  };
  const Row rows[] = {{0.f, 0, 1.f},     {0.f, 0, 1.f},   {1.f, 0, 1.f},  {0.7f, 50, 1.f},    {1.f, 0, 0.9f},
                      {0.8f, 40, 0.95f}, {1.3f, 1, 1.f},  {1.f, 0, 0.5f}, {0.6f, 1000, 0.8f}, {2.f, 5, 1.f},
                      {1.f, 4999, 1.f},  {0.5f, 2, 0.3f}, {0.f, 0, 1.f}};
  const int n = static_cast<int>(std::size(rows));
  std::vector<uint16_t> logits(size_t(n) * vocab);
  std::normal_distribution<float> d(0.f, 3.f);
  for (auto& x : logits) x = float_to_bf16(d(rng));  // bf16 logits produce real ties
  // Row 1: the maximum tied across every slice boundary (the lowest id wins); row 12: all equal.
  for (int id : {1000, 2600, 4000, 4800}) logits[size_t(1) * vocab + id] = float_to_bf16(40.f);
  for (int i = 0; i < vocab; ++i) logits[size_t(12) * vocab + i] = float_to_bf16(-1.5f);
  Settings s;
  for (int i = 0; i < n; ++i) {
    s.temperature.push_back(rows[i].temp);
    s.top_k.push_back(rows[i].top_k);
    s.top_p.push_back(rows[i].top_p);
    s.seeds.push_back(987654321ull * (i + 3));
  }
  std::vector<float> widened(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) widened[i] = bf16_to_float(logits[i]);
  std::vector<int32_t> ref(n);
  sampling_cpu(
      {widened.data(), ref.data(), s.temperature.data(), s.top_k.data(), s.top_p.data(), s.seeds.data(), n, vocab});
  EXPECT_EQ(ref[1], 1000);
  EXPECT_EQ(ref[12], 0);
  for (int world : {1, 2, 3, 4, 8}) {
    const auto tokens = sample_on_slices(logits, n, vocab, world, s);
    for (int q = 1; q < world; ++q) EXPECT_EQ(tokens[q], tokens[0]) << "rank " << q << " of " << world;
    int same = 0;
    for (int r = 0; r < n; ++r) same += tokens[0][r] == ref[r];
    EXPECT_GE(same, n - 1) << "world " << world << ": f32 sums may move at most a draw at a boundary";
    for (int r = 0; r < n; ++r) {
      if (rows[r].temp <= 0.f) {
        EXPECT_EQ(tokens[0][r], ref[r]) << "greedy row " << r << ", world " << world;
        continue;
      }
      const auto allowed = test::draws_within_rounding(std::span(widened).subspan(size_t(r) * vocab, vocab),
                                                       rows[r].temp, rows[r].top_k, rows[r].top_p, s.seeds[r], 1e-4);
      EXPECT_TRUE(std::find(allowed.begin(), allowed.end(), tokens[0][r]) != allowed.end())
          << "row " << r << ", world " << world << ": drew " << tokens[0][r] << ", the single-device rule " << ref[r];
    }
  }
}

// Rows under token masks (structured output: refused tokens are bf16 −inf before the pieces run, whole
// slices of them at the larger worlds): greedy tokens equal the single-device rule's exactly, draws are
// allowed tokens within rounding of it, and every rank agrees.
TEST(VocabSamplingRef, MaskedRowsMatchTheSingleDeviceRule) {
  std::mt19937 rng(23);
  const int vocab = 5003, words = (vocab + 31) / 32;
  const float temps[] = {0.f, 1.f, 0.8f, 0.f, 1.2f, 0.7f};
  const int top_ks[] = {0, 0, 40, 0, 0, 3};
  const float top_ps[] = {1.f, 1.f, 0.9f, 1.f, 0.5f, 1.f};
  const int n = static_cast<int>(std::size(temps));
  std::vector<uint16_t> logits(size_t(n) * vocab);
  std::normal_distribution<float> d(0.f, 3.f);
  for (auto& x : logits) x = float_to_bf16(d(rng));
  // Rows 0-2: about a third of the tokens allowed; rows 3-5: only ids [600, 700) (one or two slices).
  std::vector<uint32_t> masks(size_t(2) * words, 0u);
  for (int w = 0; w < words; ++w) masks[w] = rng() & rng();
  for (int t = 600; t < 700; ++t) masks[size_t(words) + t / 32] |= 1u << (t % 32);
  const std::vector<int32_t> mask_rows = {0, 0, 0, 1, 1, 1};
  TokenMaskParams mask;
  mask.logits_bf16 = logits.data();
  mask.masks = masks.data();
  mask.mask_rows = mask_rows.data();
  mask.num_rows = n;
  mask.vocab = vocab;
  mask.words = words;
  token_mask_cpu(mask);
  Settings s;
  for (int i = 0; i < n; ++i) {
    s.temperature.push_back(temps[i]);
    s.top_k.push_back(top_ks[i]);
    s.top_p.push_back(top_ps[i]);
    s.seeds.push_back(123456789ull * (i + 5));
  }
  std::vector<float> widened(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) widened[i] = bf16_to_float(logits[i]);
  std::vector<int32_t> ref(n);
  sampling_cpu(
      {widened.data(), ref.data(), s.temperature.data(), s.top_k.data(), s.top_p.data(), s.seeds.data(), n, vocab});
  for (int world : {1, 2, 3, 8}) {
    const auto tokens = sample_on_slices(logits, n, vocab, world, s);
    for (int q = 1; q < world; ++q) EXPECT_EQ(tokens[q], tokens[0]) << "rank " << q << " of " << world;
    for (int r = 0; r < n; ++r) {
      const int32_t t = tokens[0][r];
      ASSERT_TRUE(t >= 0 && t < vocab) << "row " << r << ", world " << world;
      EXPECT_TRUE((masks[size_t(mask_rows[r]) * words + t / 32] >> (t % 32)) & 1u)
          << "row " << r << ", world " << world << ": drew refused token " << t;
      if (temps[r] <= 0.f) {
        EXPECT_EQ(t, ref[r]) << "greedy row " << r << ", world " << world;
        continue;
      }
      const auto allowed = test::draws_within_rounding(std::span(widened).subspan(size_t(r) * vocab, vocab), temps[r],
                                                       top_ks[r], top_ps[r], s.seeds[r], 1e-4);
      EXPECT_TRUE(std::find(allowed.begin(), allowed.end(), t) != allowed.end())
          << "row " << r << ", world " << world << ": drew " << t << ", the single-device rule " << ref[r];
    }
  }
}

// Rows with penalties (repetition, frequency, presence; entries in every slice, one pushing the row's
// maximum below another token): each rank penalizes its slice's f32 copy, and the tokens equal the
// single-device rule's on the penalized rows (greedy exactly, draws within rounding); unpenalized rows in
// the same step read the bf16 slice as before.
TEST(VocabSamplingRef, PenalizedRowsMatchTheSingleDeviceRule) {
  std::mt19937 rng(29);
  const int vocab = 5003;
  const float temps[] = {0.f, 0.f, 1.f, 0.8f, 0.f, 0.9f};
  const int top_ks[] = {0, 0, 0, 30, 0, 0};
  const float top_ps[] = {1.f, 1.f, 1.f, 1.f, 1.f, 0.7f};
  const int n = static_cast<int>(std::size(temps));
  std::vector<uint16_t> logits(size_t(n) * vocab);
  std::normal_distribution<float> d(0.f, 3.f);
  for (auto& x : logits) x = float_to_bf16(d(rng));
  logits[size_t(0) * vocab + 4321] = float_to_bf16(30.f);  // row 0's maximum, penalized below row 0's 2nd
  logits[size_t(0) * vocab + 17] = float_to_bf16(29.f);
  Settings s;
  s.offsets.push_back(0);
  for (int r = 0; r < n; ++r) {
    s.temperature.push_back(temps[r]);
    s.top_k.push_back(top_ks[r]);
    s.top_p.push_back(top_ps[r]);
    s.seeds.push_back(55555ull * (r + 1));
    s.presence.push_back(r == 4 ? 0.f : 0.5f);
    s.frequency.push_back(r == 2 ? 0.f : 0.25f);
    s.repetition.push_back(r == 3 ? 1.f : 1.3f);
    if (r != 1) {  // row 1: no entries (reads the bf16 slice)
      std::vector<int32_t> ids = {4321, 17};
      for (int i = 0; i < 60; ++i) ids.push_back(static_cast<int32_t>(rng() % vocab));
      std::sort(ids.begin(), ids.end());
      ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
      for (int32_t t : ids) {
        s.tokens.push_back(t);
        s.counts.push_back(t == 4321 ? 8 : static_cast<int32_t>(rng() % 4));
      }
    }
    s.offsets.push_back(static_cast<int32_t>(s.tokens.size()));
  }
  std::vector<float> widened(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) widened[i] = bf16_to_float(logits[i]);
  std::vector<int32_t> ref(n);
  SamplingParams sp{widened.data(), ref.data(), s.temperature.data(), s.top_k.data(), s.top_p.data(), s.seeds.data(), n,
                    vocab};
  sp.penalty_offsets = s.offsets.data();
  sp.penalty_tokens = s.tokens.data();
  sp.penalty_counts = s.counts.data();
  sp.presence = s.presence.data();
  sp.frequency = s.frequency.data();
  sp.repetition = s.repetition.data();
  sampling_cpu(sp);
  EXPECT_EQ(ref[0], 17) << "the penalty moves row 0's argmax";
  std::vector<float> penalized = widened;  // the rule's step 0 on whole rows, for the draws' bounds
  for (int r = 0; r < n; ++r) {
    for (int e = s.offsets[r]; e < s.offsets[r + 1]; ++e) {
      float& z = penalized[size_t(r) * vocab + s.tokens[e]];
      z = penalized_logit(z, s.counts[e], s.presence[r], s.frequency[r], s.repetition[r]);
    }
  }
  for (int world : {1, 2, 3, 8}) {
    const auto tokens = sample_on_slices(logits, n, vocab, world, s);
    for (int q = 1; q < world; ++q) EXPECT_EQ(tokens[q], tokens[0]) << "rank " << q << " of " << world;
    for (int r = 0; r < n; ++r) {
      if (temps[r] <= 0.f) {
        EXPECT_EQ(tokens[0][r], ref[r]) << "greedy row " << r << ", world " << world;
        continue;
      }
      const auto allowed = test::draws_within_rounding(std::span(penalized).subspan(size_t(r) * vocab, vocab), temps[r],
                                                       top_ks[r], top_ps[r], s.seeds[r], 1e-4);
      EXPECT_TRUE(std::find(allowed.begin(), allowed.end(), tokens[0][r]) != allowed.end())
          << "row " << r << ", world " << world << ": drew " << tokens[0][r] << ", the single-device rule " << ref[r];
    }
  }
}

// The logprob records of every slice, summed in rank order and merged: the drawn token's raw logprob and
// the top lists equal sampling_cpu's (ids exactly, ties across slice boundaries → the lower id; logprobs
// within f32 rounding), rows without a top list, with fewer columns than asked in a slice, and with
// whole slices of −inf (token masks) included; every rank merges the same outputs.
TEST(VocabSamplingRef, LogprobRecordsMatchTheSingleDeviceRule) {
  std::mt19937 rng(31);
  const int vocab = 5003;
  const int32_t num_top[] = {-1, 0, 1, 5, 20, 20, 3};
  const int n = static_cast<int>(std::size(num_top));
  std::vector<uint16_t> logits(size_t(n) * vocab);
  std::normal_distribution<float> d(0.f, 3.f);
  for (auto& x : logits) x = float_to_bf16(d(rng));
  for (int id : {10, 1700, 2600, 4990}) logits[size_t(4) * vocab + id] = float_to_bf16(25.f);  // ties in the top
  const uint16_t minus_inf = float_to_bf16(-INFINITY);
  for (int i = 0; i < vocab; ++i) {  // row 5: only ids [600, 700) allowed; row 6: only 3 ids
    if (i < 600 || i >= 700) logits[size_t(5) * vocab + i] = minus_inf;
    if (i != 5 && i != 2502 && i != 5002) logits[size_t(6) * vocab + i] = minus_inf;
  }
  std::vector<float> widened(logits.size()), temperature(n, 0.f), top_p(n, 1.f);
  for (size_t i = 0; i < logits.size(); ++i) widened[i] = bf16_to_float(logits[i]);
  std::vector<int32_t> tokens(n), top_k(n, 0), ref_top(size_t(n) * kMaxTopLogprobs, -1);
  std::vector<uint64_t> seeds(n, 1);
  std::vector<float> ref_logprob(n), ref_top_logprob(size_t(n) * kMaxTopLogprobs);
  SamplingParams sp{widened.data(), tokens.data(), temperature.data(), top_k.data(), top_p.data(), seeds.data(), n,
                    vocab};
  sp.out_logprobs = ref_logprob.data();
  sp.num_top = num_top;
  sp.out_top_tokens = ref_top.data();
  sp.out_top_logprobs = ref_top_logprob.data();
  sampling_cpu(sp);
  tokens[2] = 4000;  // a drawn token that is not the argmax: its raw logprob from the whole row's normaliser
  const LogitNormalizer row2 = sampling_normalizer_cpu(widened.data() + size_t(2) * vocab, vocab);
  ref_logprob[2] =
      static_cast<float>(static_cast<double>(widened[size_t(2) * vocab + 4000]) - sampling_log_total(&row2, 1));
  for (int world : {1, 2, 3, 8}) {
    const int shard = (vocab + world - 1) / world;
    std::vector<std::vector<uint16_t>> slices(world);
    std::vector<std::vector<float>> records(world);
    for (int q = 0; q < world; ++q) {
      const int begin = q * shard, cols = std::min(vocab, begin + shard) - begin;
      for (int r = 0; r < n; ++r)
        slices[q].insert(slices[q].end(), logits.begin() + int64_t{r} * vocab + begin,
                         logits.begin() + int64_t{r} * vocab + begin + cols);
      const VocabSliceParams p{slices[q].data(), cols, cols, begin, q, world, n, temperature.data(), nullptr, nullptr};
      records[q].assign(size_t(world) * n * kVocabLogprobRecord, -7.f);
      vocab_logprob_record_cpu(p, tokens.data(), num_top, records[q].data());
    }
    sum_over_ranks(records);
    for (int q = 0; q < world; ++q) {
      std::vector<float> logprob(n), top_logprob(size_t(n) * kMaxTopLogprobs, 0.f);
      std::vector<int32_t> top(size_t(n) * kMaxTopLogprobs, -1);
      vocab_merge_logprobs_cpu(records[q].data(), world, n, num_top, logprob.data(), top.data(), top_logprob.data());
      for (int r = 0; r < n; ++r) {
        EXPECT_NEAR(logprob[r], ref_logprob[r], 2e-5 * std::max(1.f, std::abs(ref_logprob[r])))
            << "row " << r << ", world " << world;
        const int shown = std::min(std::max(num_top[r], 0), r == 6 ? 3 : kMaxTopLogprobs);
        for (int j = 0; j < shown; ++j) {
          const size_t k = size_t(r) * kMaxTopLogprobs + j;
          EXPECT_EQ(top[k], ref_top[k]) << "row " << r << " top " << j << ", world " << world << ", rank " << q;
          EXPECT_NEAR(top_logprob[k], ref_top_logprob[k], 2e-5 * std::max(1.f, std::abs(ref_top_logprob[k])))
              << "row " << r << " top " << j << ", world " << world;
        }
      }
    }
  }
}

// The top-k selection over the group lands exactly on the k-th largest key, boundary ties included.
TEST(VocabSamplingRef, TopKThresholdIsTheKthLargestKey) {
  std::mt19937 rng(7);
  const int vocab = 3001, world = 4, shard = (vocab + world - 1) / world;
  std::vector<uint16_t> logits(vocab);
  std::uniform_int_distribution<int> few(-8, 8);  // many equal keys
  for (auto& x : logits) x = float_to_bf16(0.25f * static_cast<float>(few(rng)));
  for (int k : {1, 2, 17, 100, 1500, 3000}) {
    std::vector<uint32_t> keys(vocab);
    for (int i = 0; i < vocab; ++i) keys[i] = sampling_order_key(bf16_to_float(logits[i]) * (1.0f / 0.9f));
    std::sort(keys.begin(), keys.end(), std::greater<>());
    std::vector<float> temperature = {0.9f}, top_p = {1.f};
    std::vector<int32_t> top_k = {k}, rows = {0};
    std::vector<std::vector<uint16_t>> slices(world);
    std::vector<VocabSliceParams> params(world);
    std::vector<std::vector<VocabRowState>> state(world, std::vector<VocabRowState>(1));
    std::vector<std::vector<float>> hist(world, std::vector<float>(kVocabSelectBins));
    for (int q = 0; q < world; ++q) {
      const int begin = q * shard, cols = std::min(vocab, begin + shard) - begin;
      slices[q].assign(logits.begin() + begin, logits.begin() + begin + cols);
      params[q] =
          VocabSliceParams{slices[q].data(), cols, cols, begin, q, world, 1, temperature.data(), nullptr, nullptr};
    }
    for (int shift = 24; shift >= -8; shift -= 8) {
      for (int q = 0; q < world; ++q) {
        VocabSelectParams sp{VocabSelect::kTopK, rows.data(),   1, shift, top_k.data(), top_p.data(), nullptr,
                             state[q].data(),    hist[q].data()};
        vocab_select_round_cpu(params[q], sp);
      }
      if (shift >= 0) sum_over_ranks(hist);
    }
    for (int q = 0; q < world; ++q) EXPECT_EQ(state[q][0].threshold, keys[k - 1]) << "k " << k << ", rank " << q;
  }
}

TEST(VocabSamplingRef, KeysRoundTrip) {
  for (float x : {0.f, -0.f, 1.f, -1.f, 3.4e38f, -3.4e38f, 1e-40f, -1e-40f}) {
    EXPECT_EQ(std::bit_cast<uint32_t>(sampling_key_value(sampling_order_key(x))), std::bit_cast<uint32_t>(x));
  }
  EXPECT_LT(sampling_order_key(-0.f), sampling_order_key(0.f));
}

}  // namespace
}  // namespace gossamer::kernels
