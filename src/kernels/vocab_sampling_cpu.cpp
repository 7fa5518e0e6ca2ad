// CPU reference of kernels/vocab_sampling.h: plain loops over this rank's slice, f32 sums in id order.
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/dtype.h"
#include "kernels/sampling.h"
#include "kernels/vocab_sampling.h"

namespace gossamer::kernels {
namespace {

// x of (row, column c) of the slice: z (the row's penalized f32 copy, or the logit widened to fp32), times
// 1 / temperature for sampled rows.
float slice_x(const VocabSliceParams& p, int row, int c) {
  const int32_t copy = p.penalized_rows != nullptr ? p.penalized_rows[row] : -1;
  const float z = copy >= 0 ? p.penalized[static_cast<int64_t>(copy) * p.num_cols + c]
                            : bf16_to_float(p.logits[static_cast<int64_t>(row) * p.ld + c]);
  const float t = p.temperature[row];
  return t > 0.f ? z * (1.0f / t) : z;
}

// (key, lowest id) packed so that the larger u64 is the better candidate.
uint64_t packed(uint32_t key, uint32_t id) {
  return (uint64_t{key} << 32) | (0xFFFFFFFFu - id);
}

}  // namespace

void vocab_penalize_cpu(const VocabSliceParams& p, const VocabPenaltyParams& pen) {
  for (int r = 0; r < p.num_rows; ++r) {
    const int32_t copy = p.penalized_rows[r];
    if (copy < 0) continue;
    float* y = pen.out + static_cast<int64_t>(copy) * p.num_cols;
    for (int c = 0; c < p.num_cols; ++c) y[c] = bf16_to_float(p.logits[static_cast<int64_t>(r) * p.ld + c]);
    for (int32_t e = pen.offsets[r]; e < pen.offsets[r + 1]; ++e) {
      const int c = pen.tokens[e] - p.vocab_begin;
      if (c < 0 || c >= p.num_cols) continue;
      y[c] = penalized_logit(y[c], pen.counts[e], pen.presence[r], pen.frequency[r], pen.repetition[r]);
    }
  }
}

void vocab_local_max_cpu(const VocabSliceParams& p, float* records) {
  std::fill_n(records, static_cast<size_t>(p.world) * p.num_rows * kVocabMaxRecord, 0.f);
  for (int r = 0; r < p.num_rows; ++r) {
    uint64_t best = 0;
    for (int c = 0; c < p.num_cols; ++c)
      best = std::max(best, packed(sampling_order_key(slice_x(p, r, c)), static_cast<uint32_t>(p.vocab_begin + c)));
    float* out = records + (static_cast<int64_t>(p.rank) * p.num_rows + r) * kVocabMaxRecord;
    const auto key = static_cast<uint32_t>(best >> 32);
    out[0] = static_cast<float>(key >> 16);
    out[1] = static_cast<float>(key & 0xFFFFu);
    out[2] = static_cast<float>(0xFFFFFFFFu - static_cast<uint32_t>(best));
  }
}

void vocab_merge_max_cpu(const float* records, int world, int num_rows, int32_t* tokens, VocabRowState* state) {
  for (int r = 0; r < num_rows; ++r) {
    uint64_t best = 0;
    for (int q = 0; q < world; ++q) {
      const float* rec = records + (static_cast<int64_t>(q) * num_rows + r) * kVocabMaxRecord;
      const uint32_t key = (static_cast<uint32_t>(rec[0]) << 16) | static_cast<uint32_t>(rec[1]);
      best = std::max(best, packed(key, static_cast<uint32_t>(rec[2])));
    }
    tokens[r] = static_cast<int32_t>(0xFFFFFFFFu - static_cast<uint32_t>(best));
    state[r] = VocabRowState{};
    state[r].max = sampling_key_value(static_cast<uint32_t>(best >> 32));
  }
}

void vocab_select_round_cpu(const VocabSliceParams& p, const VocabSelectParams& s) {
  for (int j = 0; j < s.num_select; ++j) {
    const int r = s.rows[j];
    VocabRowState& st = s.state[r];
    float* hist = s.hist + static_cast<int64_t>(j) * kVocabSelectBins;
    vocab_select_advance(p.world, s, j, hist, st);
    if (s.shift < 0) continue;
    std::fill_n(hist, kVocabSelectBins, 0.f);
    for (int c = 0; c < p.num_cols; ++c) {
      const float x = slice_x(p, r, c);
      const uint32_t key = sampling_order_key(x);
      if ((key & st.mask) != st.prefix) continue;
      if (s.what == VocabSelect::kTopK) {
        hist[(key >> s.shift) & 255u] += 1.f;
      } else if (key >= st.threshold) {
        hist[(key >> s.shift) & 255u] += std::exp(x - st.max);
      }
    }
  }
}

void vocab_local_mass_cpu(const VocabSliceParams& p, const int32_t* rows, int num_select, const VocabRowState* state,
                          float* masses) {
  std::fill_n(masses, static_cast<size_t>(p.world) * num_select, 0.f);
  for (int j = 0; j < num_select; ++j) {
    const VocabRowState& st = state[rows[j]];
    // The reference sums in double: a float running sum over a 100k-column slice drifts by ~1e-4 relative
    // (H200, 2026-12-01: the device's tree sum sat 1.3e-4 above a float reference on every row).
    double sum = 0.0;
    for (int c = 0; c < p.num_cols; ++c) {
      const float x = slice_x(p, rows[j], c);
      if (sampling_order_key(x) >= st.threshold) sum += std::exp(static_cast<double>(x - st.max));
    }
    masses[static_cast<int64_t>(p.rank) * num_select + j] = static_cast<float>(sum);
  }
}

void vocab_local_draw_cpu(const VocabSliceParams& p, const int32_t* rows, int num_select, const VocabRowState* state,
                          const float* masses, const uint64_t* seeds, float* picks) {
  std::fill_n(picks, static_cast<size_t>(p.world) * num_select * 2, 0.f);
  for (int j = 0; j < num_select; ++j) {
    const int r = rows[j];
    const VocabRowState& st = state[r];
    float total = 0.f, before = 0.f;
    for (int q = 0; q < p.world; ++q) {
      if (q == p.rank) before = total;
      total += masses[static_cast<int64_t>(q) * num_select + j];
    }
    const float target = sampling_uniform(seeds[r]) * total;
    float run = before;
    int chosen = -1, last = -1;
    for (int c = 0; c < p.num_cols; ++c) {
      const float x = slice_x(p, r, c);
      if (sampling_order_key(x) < st.threshold) continue;
      last = p.vocab_begin + c;
      run += std::exp(x - st.max);
      if (run > target) {
        chosen = p.vocab_begin + c;
        break;
      }
    }
    float* out = picks + (static_cast<int64_t>(p.rank) * num_select + j) * 2;
    out[0] = static_cast<float>(chosen + 1);
    out[1] = static_cast<float>(last + 1);
  }
}

void vocab_merge_draw_cpu(const float* picks, int world, const int32_t* rows, int num_select, int32_t* tokens) {
  for (int j = 0; j < num_select; ++j) tokens[rows[j]] = vocab_merged_draw(picks, world, num_select, j);
}

}  // namespace gossamer::kernels
