// The local pieces of vocab-parallel sampling (kernels/vocab_sampling.h) on the GPU against their CPU
// reference, over gpt-oss's vocabulary split into 2 and 4 slices (the group's sums taken on the host, in
// rank order): local_max records exactly (max key, lowest id; ties across slices), merge_max's tokens
// exactly, the top-k count histograms and thresholds exactly, masses within f32 rounding, and the
// finished draw equal to the single-device rule's (greedy exact, sampled within rounding of a boundary).
// Step 0 (penalize) and the logprob records (kernels/vocab_logprobs.h) against their references too.
#include "kernels/vocab_sampling.h"

#include <algorithm>
#include <cmath>
#include <span>

#include "kernel_test_utils.h"
#include "kernels/sampling.h"
#include "kernels/vocab_logprobs.h"
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

// Columns [begin, begin + cols) of every row of `logits` [n, vocab]: one rank's slice [n, cols].
std::vector<uint16_t> vocab_columns(const std::vector<uint16_t>& logits, int n, int vocab, int begin, int cols) {
  std::vector<uint16_t> slice;
  for (int r = 0; r < n; ++r)
    slice.insert(slice.end(), logits.begin() + int64_t{r} * vocab + begin,
                 logits.begin() + int64_t{r} * vocab + begin + cols);
  return slice;
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
      slices[q] = vocab_columns(logits, n, vocab, begin, cols);
      d_slices.emplace_back(slices[q]);
      cpu[q] = VocabSliceParams{slices[q].data(), cols, cols, begin, q, world, n, temperature.data(), nullptr, nullptr};
      gpu[q] =
          VocabSliceParams{d_slices[q].get(), cols, cols, begin, q, world, n, d_temperature.get(), nullptr, nullptr};
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

// Step 0 on each slice: the f32 copies within f32 rounding of the reference (nvcc may contract the penalty's
// multiply-subtract), unpenalized rows untouched, and the argmax records over the copies exact (both read
// the GPU's copies).
TEST(VocabSamplingKernel, PenalizeMatchesReference) {
  GOSSAMER_REQUIRE_GPU();
  std::mt19937 rng(43);
  const int vocab = 201088, n = 4;
  std::vector<uint16_t> logits = random_bf16(size_t(n) * vocab, rng, 3.f);
  std::vector<float> temperature = {0.f, 0.f, 1.f, 0.f}, presence = {0.5f, 0.f, 0.3f, 0.f},
                     frequency = {0.25f, 0.f, 0.1f, 0.f}, repetition = {1.3f, 1.f, 1.1f, 1.f};
  std::vector<int32_t> offsets = {0}, entries, counts, penalized_rows = {0, -1, 1, -1};
  for (int r = 0; r < n; ++r) {
    if (penalized_rows[r] >= 0) {
      std::vector<int32_t> ids = {0, 100543, 100544, 201087};
      for (int i = 0; i < 500; ++i) ids.push_back(static_cast<int32_t>(rng() % vocab));
      std::sort(ids.begin(), ids.end());
      ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
      for (int32_t t : ids) {
        entries.push_back(t);
        counts.push_back(static_cast<int32_t>(rng() % 5));
      }
    }
    offsets.push_back(static_cast<int32_t>(entries.size()));
  }
  DeviceBuffer<float> d_temperature(temperature), d_presence(presence), d_frequency(frequency),
      d_repetition(repetition);
  DeviceBuffer<int32_t> d_offsets(offsets), d_entries(entries), d_counts(counts), d_rows(penalized_rows);
  for (int world : {2, 4}) {
    const int shard = (vocab + world - 1) / world;
    for (int q = 0; q < world; ++q) {
      const int begin = q * shard, cols = std::min(vocab, begin + shard) - begin;
      const std::vector<uint16_t> slice = vocab_columns(logits, n, vocab, begin, cols);
      DeviceBuffer<uint16_t> d_slice(slice);
      DeviceBuffer<float> d_copies(size_t(2) * cols);
      std::vector<float> copies(size_t(2) * cols);
      VocabSliceParams gpu{d_slice.get(),       cols,           cols,        begin, q, world, n,
                           d_temperature.get(), d_copies.get(), d_rows.get()};
      VocabSliceParams cpu{slice.data(),         cols, cols, begin, q, world, n, temperature.data(), copies.data(),
                           penalized_rows.data()};
      launch_vocab_penalize(gpu,
                            {d_offsets.get(), d_entries.get(), d_counts.get(), d_presence.get(), d_frequency.get(),
                             d_repetition.get(), d_copies.get()},
                            nullptr);
      vocab_penalize_cpu(cpu, {offsets.data(), entries.data(), counts.data(), presence.data(), frequency.data(),
                               repetition.data(), copies.data()});
      const std::vector<float> got = d_copies.download();
      expect_near_rel(got, copies, 1e-6, "penalized copy");
      copies = got;
      std::vector<float> records(size_t(world) * n * kVocabMaxRecord);
      DeviceBuffer<float> d_records(records.size());
      launch_vocab_local_max(gpu, d_records.get(), nullptr);
      vocab_local_max_cpu(cpu, records.data());
      EXPECT_EQ(d_records.download(), records) << "local_max over the copies, rank " << q << " of " << world;
    }
  }
}

// The logprob records per slice against the reference (max and the drawn logit exactly, Σ exp within f32
// rounding, top ids and logits exactly), and the merge of the summed records: ids exactly, logprobs within
// f32 rounding of the reference merge and of the single-device rule.
TEST(VocabSamplingKernel, LogprobRecordsMatchReference) {
  GOSSAMER_REQUIRE_GPU();
  std::mt19937 rng(47);
  const int vocab = 201088;
  const std::vector<int32_t> num_top = {-1, 0, 1, 5, 20, 20};
  const int n = static_cast<int>(num_top.size());
  std::vector<uint16_t> logits = random_bf16(size_t(n) * vocab, rng, 3.f);
  for (int id : {7, 100543, 100544, 201087}) logits[size_t(4) * vocab + id] = float_to_bf16(30.f);  // ties
  for (int i = 0; i < vocab; ++i)  // row 5: masked to ids [600, 700): whole slices of −inf
    if (i < 600 || i >= 700) logits[size_t(5) * vocab + i] = float_to_bf16(-INFINITY);
  const std::vector<float> widened = bf16_to_floats(logits);
  std::vector<float> temperature(n, 0.f), top_p(n, 1.f), ref_logprob(n), ref_top_logprob(size_t(n) * kMaxTopLogprobs);
  std::vector<int32_t> tokens(n), top_k(n, 0), ref_top(size_t(n) * kMaxTopLogprobs, -1);
  std::vector<uint64_t> seeds(n, 3);
  SamplingParams sp{widened.data(), tokens.data(), temperature.data(), top_k.data(), top_p.data(), seeds.data(), n,
                    vocab};
  sp.out_logprobs = ref_logprob.data();
  sp.num_top = num_top.data();
  sp.out_top_tokens = ref_top.data();
  sp.out_top_logprobs = ref_top_logprob.data();
  sampling_cpu(sp);
  DeviceBuffer<int32_t> d_tokens(tokens), d_num_top(num_top);
  DeviceBuffer<float> d_temperature(temperature);
  for (int world : {2, 4}) {
    const int shard = (vocab + world - 1) / world;
    std::vector<std::vector<float>> records(world);
    for (int q = 0; q < world; ++q) {
      const int begin = q * shard, cols = std::min(vocab, begin + shard) - begin;
      const std::vector<uint16_t> slice = vocab_columns(logits, n, vocab, begin, cols);
      DeviceBuffer<uint16_t> d_slice(slice);
      const VocabSliceParams gpu{d_slice.get(), cols, cols, begin, q, world, n, d_temperature.get(), nullptr, nullptr};
      const VocabSliceParams cpu{slice.data(), cols, cols, begin, q, world, n, temperature.data(), nullptr, nullptr};
      records[q].assign(size_t(world) * n * kVocabLogprobRecord, 0.f);
      DeviceBuffer<float> d_records(records[q].size());
      d_records.poison();
      launch_vocab_logprob_record(gpu, d_tokens.get(), d_num_top.get(), d_records.get(), nullptr);
      vocab_logprob_record_cpu(cpu, tokens.data(), num_top.data(), records[q].data());
      const std::vector<float> got = d_records.download();
      for (size_t i = 0; i < got.size(); ++i) {
        if (i % kVocabLogprobRecord == 1) {
          EXPECT_NEAR(got[i], records[q][i], 1e-4 * std::max(1.f, std::abs(records[q][i]))) << "sum [" << i << "]";
        } else {
          EXPECT_EQ(got[i], records[q][i])
              << "record field " << i % kVocabLogprobRecord << " [" << i << "], rank " << q << " of " << world;
        }
      }
      records[q] = got;
    }
    sum_over_ranks(records);
    std::vector<float> logprob(n), top_logprob(size_t(n) * kMaxTopLogprobs, 0.f);
    std::vector<int32_t> top(size_t(n) * kMaxTopLogprobs, -1);
    vocab_merge_logprobs_cpu(records[0].data(), world, n, num_top.data(), logprob.data(), top.data(),
                             top_logprob.data());
    DeviceBuffer<float> d_records(records[0]), d_logprob(n), d_top_logprob(top_logprob);
    DeviceBuffer<int32_t> d_top(top.size());
    d_top.poison();
    launch_vocab_merge_logprobs(d_records.get(), world, n, d_num_top.get(), d_logprob.get(), d_top.get(),
                                d_top_logprob.get(), nullptr);
    const std::vector<float> got_logprob = d_logprob.download(), got_top_logprob = d_top_logprob.download();
    const std::vector<int32_t> got_top = d_top.download();
    for (int r = 0; r < n; ++r) {
      EXPECT_NEAR(got_logprob[r], logprob[r], 1e-5 * std::max(1.f, std::abs(logprob[r]))) << "row " << r;
      EXPECT_NEAR(got_logprob[r], ref_logprob[r], 1e-4 * std::max(1.f, std::abs(ref_logprob[r]))) << "row " << r;
      for (int j = 0; j < std::max(num_top[r], 0); ++j) {
        const size_t k = size_t(r) * kMaxTopLogprobs + j;
        EXPECT_EQ(got_top[k], top[k]) << "row " << r << " top " << j << ", world " << world;
        EXPECT_EQ(got_top[k], ref_top[k]) << "row " << r << " top " << j << ", world " << world;
        EXPECT_NEAR(got_top_logprob[k], ref_top_logprob[k], 1e-4 * std::max(1.f, std::abs(ref_top_logprob[k])))
            << "row " << r << " top " << j << ", world " << world;
      }
    }
  }
}

}  // namespace
}  // namespace gossamer::kernels
