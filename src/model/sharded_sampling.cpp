#include "model/sharded_sampling.h"

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <functional>

#include "core/error.h"

namespace gossamer::model {

namespace {

// The uniform draw of kernels/sampling.h (sampling_uniform): splitmix64, top 24 bits.
float uniform_from_seed(uint64_t seed) {
  uint64_t z = seed + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<float>(z >> 40) * (1.0f / 16777216.0f);
}

// Monotone map of floats to unsigned keys (kernels/sampling.h's order).
uint32_t order_key(float x) {
  const uint32_t u = std::bit_cast<uint32_t>(x);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

// Every rank's `mine` (the same size on every rank), rank-major.
template <typename T>
std::vector<T> gather(comm::Communicator& comm, const std::vector<T>& mine) {
  std::vector<T> all(mine.size() * static_cast<size_t>(comm.world_size()));
  if (!mine.empty()) comm.all_gather(mine.data(), all.data(), static_cast<int64_t>(mine.size() * sizeof(T)));
  return all;
}

struct ArgMax {
  float value;
  int32_t index;
};

}  // namespace

std::vector<int32_t> sample_vocab_parallel(const float* local, int64_t num_rows, int64_t row_stride, IndexRange vocab,
                                           int64_t vocab_size, std::span<const RowSampling> rows,
                                           comm::Communicator& comm) {
  GOSSAMER_CHECK(static_cast<int64_t>(rows.size()) == num_rows, "sampling: ", rows.size(), " settings for ", num_rows,
                 " rows");
  const int world = comm.world_size();
  const int64_t n = vocab.size();
  std::vector<int32_t> tokens(static_cast<size_t>(num_rows), 0);
  if (num_rows == 0) return tokens;
  auto sampled = [&](int64_t r) { return rows[static_cast<size_t>(r)].temperature > 0.0f; };

  // ---- x / T per row (T = 1 for greedy rows) and its keys ----
  std::vector<float> values(static_cast<size_t>(num_rows * n));
  std::vector<uint32_t> keys(values.size());
  for (int64_t r = 0; r < num_rows; ++r) {
    const float inv_t = sampled(r) ? 1.0f / rows[static_cast<size_t>(r)].temperature : 1.0f;
    for (int64_t i = 0; i < n; ++i) {
      const float v = sampled(r) ? local[r * row_stride + i] * inv_t : local[r * row_stride + i];
      values[static_cast<size_t>(r * n + i)] = v;
      keys[static_cast<size_t>(r * n + i)] = order_key(v);
    }
  }
  auto value = [&](int64_t r, int64_t i) { return values[static_cast<size_t>(r * n + i)]; };
  auto key = [&](int64_t r, int64_t i) { return keys[static_cast<size_t>(r * n + i)]; };

  // ---- argmax: local (max, lowest index), one all-gather; ranks hold ascending slices ----
  std::vector<ArgMax> mine(static_cast<size_t>(num_rows), ArgMax{-FLT_MAX, -1});
  for (int64_t r = 0; r < num_rows; ++r) {
    for (int64_t i = 0; i < n; ++i) {
      ArgMax& best = mine[static_cast<size_t>(r)];
      if (best.index < 0 || value(r, i) > best.value) best = ArgMax{value(r, i), static_cast<int32_t>(vocab.begin + i)};
    }
  }
  const std::vector<ArgMax> all_max = gather(comm, mine);
  std::vector<double> row_max(static_cast<size_t>(num_rows));
  for (int64_t r = 0; r < num_rows; ++r) {
    ArgMax best{-FLT_MAX, -1};
    for (int q = 0; q < world; ++q) {
      const ArgMax& each = all_max[static_cast<size_t>(q * num_rows + r)];
      if (each.index >= 0 && (best.index < 0 || each.value > best.value)) best = each;
    }
    tokens[static_cast<size_t>(r)] = best.index;
    row_max[static_cast<size_t>(r)] = best.value;
  }

  // ---- top-k threshold: the k-th largest key of the merge of every rank's local top k ----
  std::vector<uint32_t> threshold(static_cast<size_t>(num_rows), 0u);
  std::vector<uint32_t> local_top;
  std::vector<int64_t> k_rows;
  for (int64_t r = 0; r < num_rows; ++r) {
    const int64_t k = rows[static_cast<size_t>(r)].top_k;
    if (!sampled(r) || k <= 0 || k >= vocab_size) continue;
    std::vector<uint32_t> row_keys(keys.begin() + r * n, keys.begin() + (r + 1) * n);
    const int64_t keep = std::min(k, n);
    std::partial_sort(row_keys.begin(), row_keys.begin() + keep, row_keys.end(), std::greater<>());
    row_keys.resize(static_cast<size_t>(k), 0u);  // padding: key 0 sits below every real value's key
    local_top.insert(local_top.end(), row_keys.begin(), row_keys.end());
    k_rows.push_back(r);
  }
  if (!k_rows.empty()) {
    const std::vector<uint32_t> all_top = gather(comm, local_top);
    const size_t per_rank = local_top.size();
    size_t offset = 0;
    for (int64_t r : k_rows) {
      const int64_t k = rows[static_cast<size_t>(r)].top_k;
      std::vector<uint32_t> merged;
      for (int q = 0; q < world; ++q) {
        merged.insert(merged.end(), all_top.begin() + q * per_rank + offset,
                      all_top.begin() + q * per_rank + offset + k);
      }
      std::nth_element(merged.begin(), merged.begin() + (k - 1), merged.end(), std::greater<>());
      threshold[static_cast<size_t>(r)] = merged[static_cast<size_t>(k - 1)];
      offset += static_cast<size_t>(k);
    }
  }

  // Σ exp(v − max) over keys ≥ limit, per row, summed in double per rank and then in rank order.
  auto masses_above = [&](const std::vector<int64_t>& which, const std::vector<uint32_t>& limits) {
    std::vector<double> local_mass(which.size(), 0.0);
    for (size_t j = 0; j < which.size(); ++j) {
      const int64_t r = which[j];
      for (int64_t i = 0; i < n; ++i) {
        if (key(r, i) >= limits[j])
          local_mass[j] += std::exp(static_cast<double>(value(r, i)) - row_max[static_cast<size_t>(r)]);
      }
    }
    const std::vector<double> all = gather(comm, local_mass);
    std::vector<double> total(which.size(), 0.0);
    for (int q = 0; q < world; ++q) {
      for (size_t j = 0; j < which.size(); ++j) total[j] += all[q * which.size() + j];
    }
    return total;
  };

  // ---- top-p threshold: the largest key whose upper set still holds top_p of the top-k mass ----
  std::vector<int64_t> p_rows;
  std::vector<uint32_t> p_limits;
  for (int64_t r = 0; r < num_rows; ++r) {
    if (sampled(r) && rows[static_cast<size_t>(r)].top_p < 1.0f) {
      p_rows.push_back(r);
      p_limits.push_back(threshold[static_cast<size_t>(r)]);
    }
  }
  if (!p_rows.empty()) {
    const std::vector<double> kept = masses_above(p_rows, p_limits);
    std::vector<double> target(p_rows.size());
    std::vector<uint64_t> low(p_rows.size()), high(p_rows.size());  // the answer lies in [low, high)
    for (size_t j = 0; j < p_rows.size(); ++j) {
      target[j] = rows[static_cast<size_t>(p_rows[j])].top_p * kept[j];
      low[j] = p_limits[j];  // mass(≥ top-k threshold) ≥ target always
      high[j] =
          uint64_t{order_key(static_cast<float>(row_max[static_cast<size_t>(p_rows[j])]))} + 1;  // at most the top key
    }
    for (int round = 0; round < 32; ++round) {  // invariant: mass(≥ low) ≥ target, mass(≥ high) < target
      std::vector<uint32_t> middle(p_rows.size());
      for (size_t j = 0; j < p_rows.size(); ++j) middle[j] = static_cast<uint32_t>((low[j] + high[j]) / 2);
      const std::vector<double> mass = masses_above(p_rows, middle);
      for (size_t j = 0; j < p_rows.size(); ++j) {
        if (high[j] - low[j] <= 1) continue;
        (mass[j] >= target[j] ? low[j] : high[j]) = middle[j];
      }
    }
    for (size_t j = 0; j < p_rows.size(); ++j)
      threshold[static_cast<size_t>(p_rows[j])] = static_cast<uint32_t>(low[j]);
  }

  // ---- the draw: kept mass per rank, prefix in rank order, the owning rank walks its slice ----
  std::vector<int64_t> s_rows;
  std::vector<uint32_t> s_limits;
  for (int64_t r = 0; r < num_rows; ++r) {
    if (sampled(r)) {
      s_rows.push_back(r);
      s_limits.push_back(threshold[static_cast<size_t>(r)]);
    }
  }
  if (s_rows.empty()) return tokens;
  std::vector<double> local_mass(s_rows.size(), 0.0);
  for (size_t j = 0; j < s_rows.size(); ++j) {
    for (int64_t i = 0; i < n; ++i) {
      if (key(s_rows[j], i) >= s_limits[j])
        local_mass[j] += std::exp(static_cast<double>(value(s_rows[j], i)) - row_max[static_cast<size_t>(s_rows[j])]);
    }
  }
  const std::vector<double> all_mass = gather(comm, local_mass);
  struct Pick {
    int32_t chosen, last;  // first index whose running mass passes the target; last kept index (or −1)
  };
  std::vector<Pick> picks(s_rows.size(), Pick{-1, -1});
  for (size_t j = 0; j < s_rows.size(); ++j) {
    const int64_t r = s_rows[j];
    double total = 0.0, before = 0.0;
    for (int q = 0; q < world; ++q) {
      if (q == comm.rank()) before = total;
      total += all_mass[q * s_rows.size() + j];
    }
    const double target = static_cast<double>(uniform_from_seed(rows[static_cast<size_t>(r)].seed)) * total;
    double run = before;
    for (int64_t i = 0; i < n; ++i) {
      if (key(r, i) < s_limits[j]) continue;
      picks[j].last = static_cast<int32_t>(vocab.begin + i);
      run += std::exp(static_cast<double>(value(r, i)) - row_max[static_cast<size_t>(r)]);
      if (run > target) {
        picks[j].chosen = static_cast<int32_t>(vocab.begin + i);
        break;
      }
    }
  }
  const std::vector<Pick> all_picks = gather(comm, picks);
  for (size_t j = 0; j < s_rows.size(); ++j) {
    int32_t chosen = -1, last = -1;
    for (int q = 0; q < world; ++q) {
      const Pick& pick = all_picks[q * s_rows.size() + j];
      if (chosen < 0 && pick.chosen >= 0) chosen = pick.chosen;
      if (pick.last >= 0) last = pick.last;
    }
    tokens[static_cast<size_t>(s_rows[j])] = chosen >= 0 ? chosen : last;
  }
  return tokens;
}

}  // namespace gossamer::model
