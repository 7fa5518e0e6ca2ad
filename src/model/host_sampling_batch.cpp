#include "model/host_sampling_batch.h"

#include <algorithm>

#include "core/error.h"

namespace gossamer::model {

HostSamplingBatch::HostSamplingBatch(std::span<const RowSampling> rows, int32_t vocab)
    : num_rows(static_cast<int32_t>(rows.size())), vocab(vocab) {
  const size_t n = rows.size();
  bool any_penalties = false;
  penalty_offsets.assign(n + 1, 0);
  for (size_t r = 0; r < n; ++r) {
    const RowSampling& row = rows[r];
    GOSSAMER_CHECK(row.penalty_tokens.size() == row.penalty_counts.size(), "sampling row ", r,
                   ": penalty tokens and counts differ");
    temperature.push_back(row.temperature);
    top_k.push_back(row.top_k);
    top_p.push_back(row.top_p);
    seeds.push_back(row.seed);
    presence.push_back(row.presence);
    frequency.push_back(row.frequency);
    repetition.push_back(row.repetition);
    num_top.push_back(std::max(row.num_top_logprobs, 0));
    asked_logprobs.push_back(row.num_top_logprobs);
    penalty_tokens.insert(penalty_tokens.end(), row.penalty_tokens.begin(), row.penalty_tokens.end());
    penalty_counts.insert(penalty_counts.end(), row.penalty_counts.begin(), row.penalty_counts.end());
    penalty_offsets[r + 1] = static_cast<int32_t>(penalty_tokens.size());
    any_penalties |= !row.penalty_tokens.empty();
  }
  if (any_penalties) penalized.resize(n * static_cast<size_t>(vocab));
  tokens.assign(n, 0);
  out_logprobs.assign(n, 0.0f);
  top_tokens.assign(n * kernels::kMaxTopLogprobs, 0);
  top_logprobs.assign(n * kernels::kMaxTopLogprobs, 0.0f);
}

kernels::SamplingParams HostSamplingBatch::params(const float* logits) {
  kernels::SamplingParams p;
  p.logits = logits;
  p.out_tokens = tokens.data();
  p.temperature = temperature.data();
  p.top_k = top_k.data();
  p.top_p = top_p.data();
  p.seeds = seeds.data();
  p.num_rows = num_rows;
  p.vocab = vocab;
  p.penalty_offsets = penalty_offsets.data();
  p.penalty_tokens = penalty_tokens.data();
  p.penalty_counts = penalty_counts.data();
  p.presence = presence.data();
  p.frequency = frequency.data();
  p.repetition = repetition.data();
  p.penalized = penalized.empty() ? nullptr : penalized.data();
  p.out_logprobs = out_logprobs.data();
  p.num_top = num_top.data();
  p.out_top_tokens = top_tokens.data();
  p.out_top_logprobs = top_logprobs.data();
  return p;
}

RowLogprobs HostSamplingBatch::logprobs(int32_t r) const {
  RowLogprobs out;
  const size_t row = static_cast<size_t>(r);
  out.logprob = out_logprobs[row];
  for (int32_t j = 0; j < std::min({asked_logprobs[row], kernels::kMaxTopLogprobs, vocab}); ++j) {
    const size_t k = row * kernels::kMaxTopLogprobs + static_cast<size_t>(j);
    out.top.emplace_back(top_tokens[k], top_logprobs[k]);
  }
  return out;
}

}  // namespace gossamer::model
