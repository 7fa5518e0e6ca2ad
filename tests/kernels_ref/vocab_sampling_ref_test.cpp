// The CPU reference of kernels/vocab_sampling.h run as a group of simulated ranks (the sums between the
// launches taken here, in rank order, as the communicator does): greedy tokens equal the single-device
// rule's exactly (ties across a slice boundary → the lowest id), the top-k threshold equals the k-th
// largest key exactly, every rank ends with the same tokens, and seeded draws equal sampling_cpu's except
// within rounding of a boundary (tests/kernels/sampling_boundaries.h), rows under token masks included.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>
#include <vector>

#include "../kernels/sampling_boundaries.h"
#include "core/dtype.h"
#include "kernels/sampling.h"
#include "kernels/token_mask.h"
#include "kernels/vocab_sampling.h"

namespace gossamer::kernels {
namespace {

struct Settings {
  std::vector<float> temperature, top_p;
  std::vector<int32_t> top_k;
  std::vector<uint64_t> seeds;
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
  for (int q = 0; q < world; ++q) {
    const int begin = q * shard, cols = std::min(vocab, begin + shard) - begin;
    for (int r = 0; r < rows; ++r)
      slices[q].insert(slices[q].end(), logits.begin() + int64_t{r} * vocab + begin,
                       logits.begin() + int64_t{r} * vocab + begin + cols);
    params[q] = VocabSliceParams{slices[q].data(), cols, cols, begin, q, world, rows, s.temperature.data()};
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
      params[q] = VocabSliceParams{slices[q].data(), cols, cols, begin, q, world, 1, temperature.data()};
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
