// The local pieces of vocab-parallel sampling (kernels/vocab_sampling.h) on the GPU against their CPU
// reference, over gpt-oss's vocabulary split into 2 and 4 slices (the group's sums taken on the host, in
// rank order): local_max records exactly (max key, lowest id; ties across slices), merge_max's tokens
// exactly, the top-k count histograms and thresholds exactly, masses within f32 rounding, and the
// finished draw equal to the single-device rule's (greedy exact, sampled within rounding of a boundary).
#include "kernels/vocab_sampling.h"

#include <algorithm>
#include <cmath>
#include <span>

#include "kernel_test_utils.h"
#include "kernels/sampling.h"
#include "sampling_boundaries.h"

namespace gossamer::kernels {
namespace {

using namespace test;

// Sums every rank's copy of a record buffer (in rank order) and gives each the total.
void sum_over_ranks(std::vector<std::vector<float>>& per_rank) {
  std::vector<float> total(per_rank[0].size(), 0.f);
  for (const auto& mine : per_rank) {
    for (size_t i = 0; i < total.size(); ++i) total[i] += mine[i];
  }
  for (auto& mine : per_rank) mine = total;
}

void expect_near_rel(const std::vector<float>& got, const std::vector<float>& ref, double tol, const char* what) {
  for (size_t i = 0; i < ref.size(); ++i)
    EXPECT_NEAR(got[i], ref[i], tol * std::max(1.0, std::abs(double{ref[i]}))) << what << " [" << i << "]";
}

TEST(VocabSamplingKernel, PiecesMatchReferenceAndTheSingleDeviceRule) {
  GOSSAMER_REQUIRE_GPU();
  std::mt19937 rng(41);
  const int vocab = 201088;
  const auto& rows = kSamplingTestRows;
  const int n = static_cast<int>(std::size(rows));
  std::vector<uint16_t> logits = random_bf16(size_t(n) * vocab, rng, 3.f);
  for (int id : {1000, 100544, 150000, 201087}) logits[size_t(1) * vocab + id] = float_to_bf16(40.f);  // ties
  std::vector<float> temperature(n), top_p(n);
  std::vector<int32_t> top_k(n), sampled, k_rows, p_rows;
  std::vector<uint64_t> seeds(n);
  for (int i = 0; i < n; ++i) {
    temperature[i] = rows[i].temp;
    top_k[i] = rows[i].top_k;
    top_p[i] = rows[i].top_p;
    seeds[i] = 7654321ull * (i + 1);
    if (rows[i].temp <= 0.f) continue;
    sampled.push_back(i);
    if (rows[i].top_k > 0) k_rows.push_back(i);
    if (rows[i].top_p < 1.f) p_rows.push_back(i);
  }
  const std::vector<float> widened = bf16_to_floats(logits);
  std::vector<int32_t> single(n);
  sampling_cpu({widened.data(), single.data(), temperature.data(), top_k.data(), top_p.data(), seeds.data(), n, vocab});
  ASSERT_EQ(single[1], 1000);
  DeviceBuffer<float> d_temperature(temperature), d_top_p(top_p);
  DeviceBuffer<int32_t> d_top_k(top_k), d_sampled(sampled), d_k_rows(k_rows), d_p_rows(p_rows);
  DeviceBuffer<uint64_t> d_seeds(seeds);

  for (int world : {2, 4}) {
    const int shard = (vocab + world - 1) / world;
    std::vector<std::vector<uint16_t>> slices(world);
    std::vector<DeviceBuffer<uint16_t>> d_slices;
    std::vector<VocabSliceParams> cpu(world), gpu(world);
    for (int q = 0; q < world; ++q) {
      const int begin = q * shard, cols = std::min(vocab, begin + shard) - begin;
      for (int r = 0; r < n; ++r)
        slices[q].insert(slices[q].end(), logits.begin() + int64_t{r} * vocab + begin,
                         logits.begin() + int64_t{r} * vocab + begin + cols);
      d_slices.emplace_back(slices[q]);
      cpu[q] = VocabSliceParams{slices[q].data(), cols, cols, begin, q, world, n, temperature.data()};
      gpu[q] = VocabSliceParams{d_slices[q].get(), cols, cols, begin, q, world, n, d_temperature.get()};
    }
    // ---- 1. local_max: exact records; merge_max: exact tokens ----
    std::vector<std::vector<float>> records(world, std::vector<float>(size_t(world) * n * kVocabMaxRecord));
    for (int q = 0; q < world; ++q) {
      DeviceBuffer<float> d_records(records[q].size());
      d_records.poison();
      launch_vocab_local_max(gpu[q], d_records.get(), nullptr);
      vocab_local_max_cpu(cpu[q], records[q].data());
      EXPECT_EQ(d_records.download(), records[q]) << "local_max, rank " << q << " of " << world;
    }
    sum_over_ranks(records);
    std::vector<int32_t> tokens(n);
    std::vector<VocabRowState> state(n);
    vocab_merge_max_cpu(records[0].data(), world, n, tokens.data(), state.data());
    {
      DeviceBuffer<float> d_records(records[0]);
      DeviceBuffer<int32_t> d_tokens(n);
      DeviceBuffer<float> d_state(n * sizeof(VocabRowState) / 4);
      launch_vocab_merge_max(d_records.get(), world, n, d_tokens.get(), reinterpret_cast<VocabRowState*>(d_state.get()),
                             nullptr);
      EXPECT_EQ(d_tokens.download(), tokens) << "merge_max, world " << world;
    }
    for (int r = 0; r < n; ++r) {
      if (rows[r].temp <= 0.f) {
        EXPECT_EQ(tokens[r], single[r]) << "greedy row " << r << ", world " << world;
      }
    }
    // ---- 2./3. the selections, every round on the GPU from the reference's state and summed histograms ----
    std::vector<float> masses;
    auto select = [&](VocabSelect what, const std::vector<int32_t>& which, const DeviceBuffer<int32_t>& d_which) {
      const int count = static_cast<int>(which.size());
      std::vector<std::vector<float>> hist(world, std::vector<float>(size_t(count) * kVocabSelectBins));
      std::vector<std::vector<VocabRowState>> states(world, state);
      for (int shift = 24; shift >= -8; shift -= 8) {
        for (int q = 0; q < world; ++q) {
          std::vector<float> words(reinterpret_cast<float*>(states[q].data()),
                                   reinterpret_cast<float*>(states[q].data()) + n * sizeof(VocabRowState) / 4);
          DeviceBuffer<float> d_state(words), d_hist(hist[q]),
              d_masses(masses.empty() ? std::vector<float>(4) : masses);
          VocabSelectParams sp{
              what,          d_which.get(), count,          shift,
              d_top_k.get(), d_top_p.get(), d_masses.get(), reinterpret_cast<VocabRowState*>(d_state.get()),
              d_hist.get()};
          launch_vocab_select_round(gpu[q], sp, nullptr);
          VocabSelectParams cp{what,          which.data(),     count,         shift, top_k.data(), top_p.data(),
                               masses.data(), states[q].data(), hist[q].data()};
          vocab_select_round_cpu(cpu[q], cp);
          const std::vector<float> got_hist = d_hist.download(), got_state = d_state.download();
          const auto* got = reinterpret_cast<const VocabRowState*>(got_state.data());
          for (int r : which) {  // NOTE: top-p's bins come from f32 masses: equal unless at a boundary
            if (what == VocabSelect::kTopK) {
              EXPECT_EQ(got[r].prefix, states[q][r].prefix) << "row " << r;
            }
            if (what == VocabSelect::kTopK && shift < 0) {
              EXPECT_EQ(got[r].threshold, states[q][r].threshold);
            }
          }
          if (shift >= 0 && what == VocabSelect::kTopK) {
            EXPECT_EQ(got_hist, hist[q]) << "count histogram " << shift;
          }
          if (shift >= 0 && what == VocabSelect::kTopP) expect_near_rel(got_hist, hist[q], 1e-4, "mass histogram");
        }
        if (shift >= 0) sum_over_ranks(hist);
      }
      state = states[0];
    };
    select(VocabSelect::kTopK, k_rows, d_k_rows);
    for (int r : k_rows) {  // exactly the k-th largest key of the whole row
      std::vector<uint32_t> keys(vocab);
      for (int i = 0; i < vocab; ++i)
        keys[i] = sampling_order_key(widened[size_t(r) * vocab + i] * (1.0f / rows[r].temp));
      std::nth_element(keys.begin(), keys.begin() + (rows[r].top_k - 1), keys.end(), std::greater<>());
      EXPECT_EQ(state[r].threshold, keys[rows[r].top_k - 1]) << "top-k row " << r << ", world " << world;
    }
    // ---- masses (of the top-k set, for the top-p target) ----
    auto local_masses = [&](const std::vector<int32_t>& which, const DeviceBuffer<int32_t>& d_which) {
      std::vector<std::vector<float>> per_rank(world, std::vector<float>(size_t(world) * which.size()));
      std::vector<float> words(reinterpret_cast<float*>(state.data()),
                               reinterpret_cast<float*>(state.data()) + n * sizeof(VocabRowState) / 4);
      DeviceBuffer<float> d_state(words);
      for (int q = 0; q < world; ++q) {
        DeviceBuffer<float> d_masses(per_rank[q].size());
        d_masses.poison();
        launch_vocab_local_mass(gpu[q], d_which.get(), static_cast<int>(which.size()),
                                reinterpret_cast<const VocabRowState*>(d_state.get()), d_masses.get(), nullptr);
        vocab_local_mass_cpu(cpu[q], which.data(), static_cast<int>(which.size()), state.data(), per_rank[q].data());
        expect_near_rel(d_masses.download(), per_rank[q], 1e-4, "local_mass");
      }
      sum_over_ranks(per_rank);
      return per_rank[0];
    };
    masses = local_masses(p_rows, d_p_rows);
    select(VocabSelect::kTopP, p_rows, d_p_rows);
    // ---- 4. the draw on the GPU from the reference's state and masses ----
    masses = local_masses(sampled, d_sampled);
    const int s = static_cast<int>(sampled.size());
    std::vector<std::vector<float>> picks(world, std::vector<float>(size_t(world) * s * 2));
    std::vector<float> words(reinterpret_cast<float*>(state.data()),
                             reinterpret_cast<float*>(state.data()) + n * sizeof(VocabRowState) / 4);
    DeviceBuffer<float> d_state(words), d_masses(masses);
    for (int q = 0; q < world; ++q) {
      DeviceBuffer<float> d_picks(picks[q].size());
      launch_vocab_local_draw(gpu[q], d_sampled.get(), s, reinterpret_cast<const VocabRowState*>(d_state.get()),
                              d_masses.get(), d_seeds.get(), d_picks.get(), nullptr);
      picks[q] = d_picks.download();
    }
    sum_over_ranks(picks);
    DeviceBuffer<float> d_picks(picks[0]);
    DeviceBuffer<int32_t> d_tokens(tokens);
    launch_vocab_merge_draw(d_picks.get(), world, d_sampled.get(), s, d_tokens.get(), nullptr);
    const std::vector<int32_t> drawn = d_tokens.download();
    int same = 0;
    for (int r = 0; r < n; ++r) {
      same += drawn[r] == single[r];
      const auto allowed = draws_within_rounding(std::span(widened).subspan(size_t(r) * vocab, vocab), rows[r].temp,
                                                 rows[r].top_k, rows[r].top_p, seeds[r], 1e-4);
      EXPECT_TRUE(std::find(allowed.begin(), allowed.end(), drawn[r]) != allowed.end())
          << "row " << r << ", world " << world << ": drew " << drawn[r] << ", the single-device rule " << single[r];
    }
    EXPECT_GE(same, n - 1) << "world " << world;
  }
}

}  // namespace
}  // namespace gossamer::kernels
