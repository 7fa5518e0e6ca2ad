// CPU reference of kernels/vocab_logprobs.h: the slice's normaliser summed in double (stored as f32, as the
// record travels), the top list by sampling_top_ids_cpu, the merge by vocab_merged_logprobs.
#include <algorithm>
#include <cfloat>
#include <vector>

#include "core/dtype.h"
#include "kernels/vocab_logprobs.h"

namespace gossamer::kernels {

void vocab_logprob_record_cpu(const VocabSliceParams& p, const int32_t* tokens, const int32_t* num_top,
                              float* records) {
  std::fill_n(records, static_cast<size_t>(p.world) * p.num_rows * kVocabLogprobRecord, 0.f);
  std::vector<float> z(static_cast<size_t>(p.num_cols));
  int32_t ids[kMaxTopLogprobs];
  for (int r = 0; r < p.num_rows; ++r) {
    for (int c = 0; c < p.num_cols; ++c) z[c] = bf16_to_float(p.logits[static_cast<int64_t>(r) * p.ld + c]);
    float* out = records + (static_cast<int64_t>(p.rank) * p.num_rows + r) * kVocabLogprobRecord;
    // NOTE: the max from −FLT_MAX as the kernel's (the double normaliser starts at −DBL_MAX, which f32 cannot
    // hold): an all −inf slice gives (−FLT_MAX, 0) on both.
    const LogitNormalizer part = sampling_normalizer_cpu(z.data(), p.num_cols);
    out[0] = part.max > -FLT_MAX ? static_cast<float>(part.max) : -FLT_MAX;
    out[1] = static_cast<float>(part.sum);
    const int c = tokens[r] - p.vocab_begin;
    out[2] = c >= 0 && c < p.num_cols ? z[c] : 0.f;
    const int n = std::clamp(num_top != nullptr ? num_top[r] : 0, 0, std::min(kMaxTopLogprobs, p.num_cols));
    sampling_top_ids_cpu(z.data(), p.num_cols, p.vocab_begin, n, ids);
    for (int j = 0; j < n; ++j) {
      out[3 + j] = static_cast<float>(ids[j] + 1);
      out[3 + kMaxTopLogprobs + j] = z[ids[j] - p.vocab_begin];
    }
  }
}

void vocab_merge_logprobs_cpu(const float* records, int world, int num_rows, const int32_t* num_top,
                              float* out_logprobs, int32_t* out_top_tokens, float* out_top_logprobs) {
  for (int r = 0; r < num_rows; ++r) {
    const int64_t at = static_cast<int64_t>(r) * kMaxTopLogprobs;
    vocab_merged_logprobs(records, world, num_rows, r, num_top != nullptr ? num_top[r] : 0, out_logprobs + r,
                          num_top != nullptr ? out_top_tokens + at : nullptr,
                          num_top != nullptr ? out_top_logprobs + at : nullptr);
  }
}

}  // namespace gossamer::kernels
