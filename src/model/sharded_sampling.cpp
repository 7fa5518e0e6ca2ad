#include "model/sharded_sampling.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <functional>
#include <utility>

#include "core/error.h"
#include "kernels/sampling.h"
#include "kernels/token_mask.h"

namespace gossamer::model {

namespace {

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

// A logprobs row's slice record: its normaliser, the drawn token's logit (where this slice owns it) and
// its first tokens in the top list's order (id −1 past the slice's columns or the row's n).
struct LogprobRecord {
  kernels::LogitNormalizer part;
  float drawn_logit = 0.0f;
  int32_t owns_drawn = 0;
  float top_logits[kernels::kMaxTopLogprobs] = {};
  int32_t top_ids[kernels::kMaxTopLogprobs] = {};
};

// z [num_rows, n]: this slice's logits with each row's token mask applied (kernels/token_mask.h).
std::vector<float> masked_logits(const float* local, int64_t num_rows, int64_t row_stride, IndexRange vocab,
                                 int64_t vocab_size, std::span<const RowSampling> rows) {
  const int64_t n = vocab.size();
  std::vector<float> z(static_cast<size_t>(num_rows * n));
  for (int64_t r = 0; r < num_rows; ++r) {
    std::copy_n(local + r * row_stride, n, z.begin() + r * n);
    const uint32_t* token_mask = rows[static_cast<size_t>(r)].token_mask;
    if (token_mask == nullptr) continue;
    kernels::TokenMaskParams mask;
    mask.logits = z.data() + r * n;
    mask.masks = token_mask;
    mask.num_rows = 1;
    mask.vocab = static_cast<int32_t>(n);
    mask.vocab_begin = static_cast<int32_t>(vocab.begin);
    mask.words = static_cast<int32_t>((vocab_size + 31) / 32);
    kernels::token_mask_cpu(mask);
  }
  return z;
}

// The raw logprobs of the rows that asked: one all-gather of their LogprobRecords.
void gather_logprobs(const std::vector<float>& z, IndexRange vocab, int64_t vocab_size,
                     std::span<const RowSampling> rows, comm::Communicator& comm, VocabParallelSample& out) {
  const int64_t n = vocab.size();
  std::vector<int64_t> l_rows;
  for (int64_t r = 0; r < static_cast<int64_t>(rows.size()); ++r) {
    if (rows[static_cast<size_t>(r)].num_top_logprobs >= 0) l_rows.push_back(r);
  }
  if (l_rows.empty()) return;
  const auto top_count = [&](int64_t r) {
    return static_cast<int>(
        std::min<int64_t>({rows[static_cast<size_t>(r)].num_top_logprobs, kernels::kMaxTopLogprobs, vocab_size}));
  };
  std::vector<LogprobRecord> mine(l_rows.size());
  for (size_t j = 0; j < l_rows.size(); ++j) {
    const int64_t r = l_rows[j];
    const float* row = z.data() + r * n;
    LogprobRecord& record = mine[j];
    record.part = kernels::sampling_normalizer_cpu(row, static_cast<int>(n));
    const int32_t drawn = out.tokens[static_cast<size_t>(r)];
    if (vocab.contains(drawn)) {
      record.owns_drawn = 1;
      record.drawn_logit = row[drawn - vocab.begin];
    }
    const int local_n = static_cast<int>(std::min<int64_t>(top_count(r), n));
    std::fill_n(record.top_ids, kernels::kMaxTopLogprobs, -1);
    kernels::sampling_top_ids_cpu(row, static_cast<int>(n), static_cast<int32_t>(vocab.begin), local_n, record.top_ids);
    for (int i = 0; i < local_n; ++i) record.top_logits[i] = row[record.top_ids[i] - vocab.begin];
  }
  const std::vector<LogprobRecord> all = gather(comm, mine);
  const int world = comm.world_size();
  for (size_t j = 0; j < l_rows.size(); ++j) {
    std::vector<kernels::LogitNormalizer> parts;
    std::vector<std::pair<float, int32_t>> candidates;  // (logit, id) of every slice's first n
    float drawn_logit = 0.0f;
    for (int q = 0; q < world; ++q) {
      const LogprobRecord& record = all[static_cast<size_t>(q) * l_rows.size() + j];
      parts.push_back(record.part);
      if (record.owns_drawn) drawn_logit = record.drawn_logit;
      for (int i = 0; i < kernels::kMaxTopLogprobs && record.top_ids[i] >= 0; ++i)
        candidates.emplace_back(record.top_logits[i], record.top_ids[i]);
    }
    const double log_total = kernels::sampling_log_total(parts.data(), world);
    const int top_n = std::min(top_count(l_rows[j]), static_cast<int>(candidates.size()));
    std::partial_sort(candidates.begin(), candidates.begin() + top_n, candidates.end(),
                      [](const auto& a, const auto& b) {
                        return kernels::sampling_top_before(a.first, a.second, b.first, b.second);
                      });
    RowLogprobs& result = out.logprobs[static_cast<size_t>(l_rows[j])];
    result.logprob = static_cast<float>(static_cast<double>(drawn_logit) - log_total);
    for (int i = 0; i < top_n; ++i) {
      result.top.emplace_back(
          candidates[static_cast<size_t>(i)].second,
          static_cast<float>(static_cast<double>(candidates[static_cast<size_t>(i)].first) - log_total));
    }
  }
}

}  // namespace

VocabParallelSample sample_vocab_parallel(const float* local, int64_t num_rows, int64_t row_stride, IndexRange vocab,
                                          int64_t vocab_size, std::span<const RowSampling> rows,
                                          comm::Communicator& comm) {
  GOSSAMER_CHECK(static_cast<int64_t>(rows.size()) == num_rows, "sampling: ", rows.size(), " settings for ", num_rows,
                 " rows");
  const int world = comm.world_size();
  const int64_t n = vocab.size();
  VocabParallelSample out;
  out.tokens.assign(static_cast<size_t>(num_rows), 0);
  out.logprobs.assign(static_cast<size_t>(num_rows), {});
  std::vector<int32_t>& tokens = out.tokens;
  if (num_rows == 0) return out;
  auto sampled = [&](int64_t r) { return rows[static_cast<size_t>(r)].temperature > 0.0f; };

  // ---- z: the masked logits (the raw logprobs'); x: z with the slice's penalties; x / T (T = 1 for
  // greedy rows) and its keys ----
  const std::vector<float> z = masked_logits(local, num_rows, row_stride, vocab, vocab_size, rows);
  std::vector<float> values = z;
  for (int64_t r = 0; r < num_rows; ++r) {
    const RowSampling& row = rows[static_cast<size_t>(r)];
    GOSSAMER_CHECK(row.penalty_tokens.size() == row.penalty_counts.size(), "sampling row ", r,
                   ": penalty tokens and counts differ");
    for (size_t e = 0; e < row.penalty_tokens.size(); ++e) {
      const int32_t t = row.penalty_tokens[e];
      if (!vocab.contains(t)) continue;
      float& x = values[static_cast<size_t>(r * n + (t - vocab.begin))];
      x = kernels::penalized_logit(x, row.penalty_counts[e], row.presence, row.frequency, row.repetition);
    }
  }
  std::vector<uint32_t> keys(values.size());
  for (int64_t r = 0; r < num_rows; ++r) {
    const float inv_t = sampled(r) ? 1.0f / rows[static_cast<size_t>(r)].temperature : 1.0f;
    for (int64_t i = 0; i < n; ++i) {
      float& v = values[static_cast<size_t>(r * n + i)];
      if (sampled(r)) v *= inv_t;
      keys[static_cast<size_t>(r * n + i)] = kernels::sampling_order_key(v);
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
      high[j] = uint64_t{kernels::sampling_order_key(static_cast<float>(row_max[static_cast<size_t>(p_rows[j])]))} +
                1;  // at most the top key
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
  if (s_rows.empty()) {
    gather_logprobs(z, vocab, vocab_size, rows, comm, out);
    return out;
  }
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
    const double target = static_cast<double>(kernels::sampling_uniform(rows[static_cast<size_t>(r)].seed)) * total;
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
  gather_logprobs(z, vocab, vocab_size, rows, comm, out);
  return out;
}

}  // namespace gossamer::model
