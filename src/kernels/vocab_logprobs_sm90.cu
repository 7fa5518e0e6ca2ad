// kernels/vocab_logprobs.h on the GPU: one block of kThreads per row over this rank's slice for the record
// (the single-device row_logprobs passes: max-reduce, Σ __expf, one max-reduce per top token), one thread
// per row for the merge.
#include <cfloat>

#include "kernels/cuda_utils.h"
#include "kernels/vocab_logprobs.h"

namespace gossamer::kernels {
namespace {

constexpr int kThreads = 512;

__device__ __forceinline__ float raw_z(const uint16_t* z, int c) {
  return __uint_as_float(static_cast<uint32_t>(z[c]) << 16);
}

__global__ void __launch_bounds__(kThreads)
    logprob_record_kernel(VocabSliceParams p, const int32_t* tokens, const int32_t* num_top, float* records) {
  __shared__ float f_scratch[32];
  __shared__ unsigned long long u_scratch[32];
  __shared__ float mine[kVocabLogprobRecord];
  const int row = blockIdx.x;
  const uint16_t* z = p.logits + static_cast<int64_t>(row) * p.ld;
  // ---- the slice's normaliser ----
  float mx = 0.f, sum = 0.f;
  row_normaliser<kThreads>(
      p.num_cols, [&](int c) { return raw_z(z, c); }, f_scratch, mx, sum);
  for (int i = threadIdx.x; i < kVocabLogprobRecord; i += kThreads) mine[i] = 0.f;
  __syncthreads();
  if (threadIdx.x == 0) {
    const int c = tokens[row] - p.vocab_begin;
    mine[0] = mx;
    mine[1] = sum;
    mine[2] = c >= 0 && c < p.num_cols ? raw_z(z, c) : 0.f;
  }
  // ---- the slice's top n: each pass the largest (key, lowest id) below the previous one ----
  const int wanted = num_top != nullptr ? num_top[row] : 0;
  const int n = max(0, min(wanted, min(kMaxTopLogprobs, p.num_cols)));
  unsigned long long previous = ~0ull;
  for (int j = 0; j < n; ++j) {
    unsigned long long best = 0;
    for (int c = threadIdx.x; c < p.num_cols; c += kThreads) {
      const unsigned long long key = (static_cast<unsigned long long>(sampling_order_key(raw_z(z, c))) << 32) |
                                     (0xFFFFFFFFu - static_cast<uint32_t>(p.vocab_begin + c));
      if (key < previous && key > best) best = key;
    }
    best = block_reduce<kThreads>(
        best, [](unsigned long long a, unsigned long long b) { return a > b ? a : b; }, u_scratch);
    if (threadIdx.x == 0) {
      const int id = static_cast<int>(0xFFFFFFFFu - static_cast<uint32_t>(best));
      mine[3 + j] = static_cast<float>(id + 1);
      mine[3 + kMaxTopLogprobs + j] = raw_z(z, id - p.vocab_begin);
    }
    previous = best;
  }
  __syncthreads();
  // ---- this rank's slot ← the record, every other slot ← 0 ----
  for (int i = threadIdx.x; i < p.world * kVocabLogprobRecord; i += kThreads) {
    const int q = i / kVocabLogprobRecord, field = i % kVocabLogprobRecord;
    records[(static_cast<int64_t>(q) * p.num_rows + row) * kVocabLogprobRecord + field] =
        q == p.rank ? mine[field] : 0.f;
  }
}

__global__ void merge_logprobs_kernel(const float* records, int world, int num_rows, const int32_t* num_top,
                                      float* out_logprobs, int32_t* out_top_tokens, float* out_top_logprobs) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= num_rows) return;
  const int64_t at = static_cast<int64_t>(r) * kMaxTopLogprobs;
  vocab_merged_logprobs(records, world, num_rows, r, num_top != nullptr ? num_top[r] : 0, out_logprobs + r,
                        num_top != nullptr ? out_top_tokens + at : nullptr,
                        num_top != nullptr ? out_top_logprobs + at : nullptr);
}

}  // namespace

void launch_vocab_logprob_record(const VocabSliceParams& p, const int32_t* tokens, const int32_t* num_top,
                                 float* records, cudaStream_t stream) {
  GOSSAMER_CHECK(p.logits != nullptr && p.num_cols > 0 && p.ld >= p.num_cols && p.world >= 1 &&
                     p.world <= kVocabLogprobMaxWorld && p.rank >= 0 && p.rank < p.world && tokens != nullptr,
                 "vocab_logprob_record: bad slice (", p.num_cols, " columns, ld ", p.ld, ", rank ", p.rank, " of ",
                 p.world, ") or no tokens");
  GOSSAMER_CHECK(p.vocab_begin + int64_t{p.num_cols} < (int64_t{1} << 24),
                 "vocab_logprob_record: ids travel as exact f32 integers (< 2^24)");
  if (p.num_rows == 0) return;
  logprob_record_kernel<<<p.num_rows, kThreads, 0, stream>>>(p, tokens, num_top, records);
  GOSSAMER_CUDA_CHECK_LAUNCH();
}

void launch_vocab_merge_logprobs(const float* records, int world, int num_rows, const int32_t* num_top,
                                 float* out_logprobs, int32_t* out_top_tokens, float* out_top_logprobs,
                                 cudaStream_t stream) {
  GOSSAMER_CHECK(world >= 1 && world <= kVocabLogprobMaxWorld, "vocab_merge_logprobs: world ", world);
  GOSSAMER_CHECK(out_logprobs != nullptr && (num_top == nullptr || (out_top_tokens && out_top_logprobs)),
                 "vocab_merge_logprobs: needs its outputs");
  if (num_rows == 0) return;
  merge_logprobs_kernel<<<ceil_div(num_rows, 128), 128, 0, stream>>>(records, world, num_rows, num_top, out_logprobs,
                                                                     out_top_tokens, out_top_logprobs);
  GOSSAMER_CUDA_CHECK_LAUNCH();
}

}  // namespace gossamer::kernels
