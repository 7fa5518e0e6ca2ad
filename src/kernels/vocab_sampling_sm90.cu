// kernels/vocab_sampling.h on the GPU: one block of kThreads per row over this rank's slice (the local
// pieces), one thread per row for the merges. x, keys and exp(x − max) as sampling_f32_sm90.cu computes
// them, so the pieces reproduce the single-device kernel's passes over the slice.
#include <cfloat>
#include <climits>

#include "kernels/cuda_utils.h"
#include "kernels/sampling.h"
#include "kernels/vocab_sampling.h"

namespace gossamer::kernels {
namespace {

constexpr int kThreads = 512;

// One row of the slice: its f32 penalized copy, or else its bf16 logits.
struct SliceRow {
  const uint16_t* z16 = nullptr;
  const float* z32 = nullptr;
};
__device__ __forceinline__ SliceRow slice_row(const VocabSliceParams& p, int row) {
  const int32_t copy = p.penalized_rows != nullptr ? p.penalized_rows[row] : -1;
  if (copy >= 0) return {nullptr, p.penalized + static_cast<int64_t>(copy) * p.num_cols};
  return {p.logits + static_cast<int64_t>(row) * p.ld, nullptr};
}
// x of (row, column c): z (the penalized f32, or the bf16 logit widened: exact), times 1 / temperature for
// sampled rows; inv_t < 0 marks a greedy row (x = z).
__device__ __forceinline__ float slice_x(const SliceRow& z, int c, float inv_t) {
  const float v = z.z32 != nullptr ? z.z32[c] : __uint_as_float(static_cast<uint32_t>(z.z16[c]) << 16);
  return inv_t >= 0.f ? v * inv_t : v;
}
__device__ __forceinline__ float inverse_temperature(const VocabSliceParams& p, int row) {
  const float t = p.temperature[row];
  return t > 0.f ? 1.0f / t : -1.f;
}

// ---- 0. penalties: the row's slice widened into its f32 copy, then its entries that fall in the slice ----
__global__ void __launch_bounds__(kThreads) penalize_kernel(VocabSliceParams p, VocabPenaltyParams pen) {
  const int row = blockIdx.x;
  const int32_t copy = p.penalized_rows[row];
  if (copy < 0) return;
  const uint16_t* z = p.logits + static_cast<int64_t>(row) * p.ld;
  float* y = pen.out + static_cast<int64_t>(copy) * p.num_cols;
  for (int c = threadIdx.x; c < p.num_cols; c += kThreads) y[c] = __uint_as_float(static_cast<uint32_t>(z[c]) << 16);
  __syncthreads();
  for (int e = pen.offsets[row] + threadIdx.x; e < pen.offsets[row + 1]; e += kThreads) {
    const int c = pen.tokens[e] - p.vocab_begin;  // NOTE: distinct per row, so no two threads write one column
    if (c < 0 || c >= p.num_cols) continue;
    y[c] = penalized_logit(y[c], pen.counts[e], pen.presence[row], pen.frequency[row], pen.repetition[row]);
  }
}

// ---- 1. local (max key, lowest id) → this rank's record slot, zeros in the others ----
__global__ void __launch_bounds__(kThreads) local_max_kernel(VocabSliceParams p, float* records) {
  __shared__ unsigned long long scratch[32];
  const int row = blockIdx.x;
  const SliceRow z = slice_row(p, row);
  const float inv_t = inverse_temperature(p, row);
  unsigned long long best = 0;
  for (int c = threadIdx.x; c < p.num_cols; c += kThreads) {
    const unsigned long long key = (static_cast<unsigned long long>(sampling_order_key(slice_x(z, c, inv_t))) << 32) |
                                   (0xFFFFFFFFu - static_cast<uint32_t>(p.vocab_begin + c));
    best = key > best ? key : best;
  }
  best = block_reduce<kThreads>(
      best, [](unsigned long long a, unsigned long long b) { return a > b ? a : b; }, scratch);
  for (int i = threadIdx.x; i < p.world * kVocabMaxRecord; i += kThreads) {
    const int q = i / kVocabMaxRecord, field = i % kVocabMaxRecord;
    const uint32_t key = static_cast<uint32_t>(best >> 32);
    const uint32_t id = 0xFFFFFFFFu - static_cast<uint32_t>(best);
    const float value = field == 0 ? static_cast<float>(key >> 16)
                                   : (field == 1 ? static_cast<float>(key & 0xFFFFu) : static_cast<float>(id));
    records[(static_cast<int64_t>(q) * p.num_rows + row) * kVocabMaxRecord + field] = q == p.rank ? value : 0.f;
  }
}

__global__ void merge_max_kernel(const float* records, int world, int num_rows, int32_t* tokens, VocabRowState* state) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= num_rows) return;
  unsigned long long best = 0;
  for (int q = 0; q < world; ++q) {
    const float* rec = records + (static_cast<int64_t>(q) * num_rows + r) * kVocabMaxRecord;
    const uint32_t key = (static_cast<uint32_t>(rec[0]) << 16) | static_cast<uint32_t>(rec[1]);
    const unsigned long long packed =
        (static_cast<unsigned long long>(key) << 32) | (0xFFFFFFFFu - static_cast<uint32_t>(rec[2]));
    best = packed > best ? packed : best;
  }
  tokens[r] = static_cast<int32_t>(0xFFFFFFFFu - static_cast<uint32_t>(best));
  VocabRowState fresh;
  fresh.max = sampling_key_value(static_cast<uint32_t>(best >> 32));
  state[r] = fresh;
}

// ---- 2./3. one radix round: fold the summed histogram, write this slice's next one ----
__global__ void __launch_bounds__(kThreads) select_round_kernel(VocabSliceParams p, VocabSelectParams s) {
  __shared__ float hist[kVocabSelectBins];
  __shared__ VocabRowState st;
  const int j = blockIdx.x, row = s.rows[j];
  float* global_hist = s.hist + static_cast<int64_t>(j) * kVocabSelectBins;
  if (s.shift < 24) {
    for (int b = threadIdx.x; b < kVocabSelectBins; b += kThreads) hist[b] = global_hist[b];
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    st = s.state[row];
    vocab_select_advance(p.world, s, j, hist, st);
    s.state[row] = st;
  }
  __syncthreads();
  if (s.shift < 0) return;
  for (int b = threadIdx.x; b < kVocabSelectBins; b += kThreads) hist[b] = 0.f;
  __syncthreads();
  const SliceRow z = slice_row(p, row);
  const float inv_t = inverse_temperature(p, row);
  const uint32_t prefix = st.prefix, mask = st.mask, threshold = st.threshold;
  const float mx = st.max;
  for (int c = threadIdx.x; c < p.num_cols; c += kThreads) {
    const float x = slice_x(z, c, inv_t);
    const uint32_t key = sampling_order_key(x);
    if ((key & mask) != prefix) continue;
    if (s.what == VocabSelect::kTopK) {
      atomicAdd(&hist[(key >> s.shift) & 255u], 1.f);
    } else if (key >= threshold) {
      atomicAdd(&hist[(key >> s.shift) & 255u], __expf(x - mx));
    }
  }
  __syncthreads();
  for (int b = threadIdx.x; b < kVocabSelectBins; b += kThreads) global_hist[b] = hist[b];
}

// ---- 4. kept mass of the slice → this rank's slot ----
__global__ void __launch_bounds__(kThreads) local_mass_kernel(VocabSliceParams p, const int32_t* rows, int num_select,
                                                              const VocabRowState* state, float* masses) {
  __shared__ float scratch[32];
  const int j = blockIdx.x, row = rows[j];
  const VocabRowState st = state[row];
  const SliceRow z = slice_row(p, row);
  const float inv_t = inverse_temperature(p, row);
  float sum = 0.f;
  for (int c = threadIdx.x; c < p.num_cols; c += kThreads) {
    const float x = slice_x(z, c, inv_t);
    if (sampling_order_key(x) >= st.threshold) sum += __expf(x - st.max);
  }
  sum = block_reduce<kThreads>(
      sum, [](float a, float b) { return a + b; }, scratch);
  for (int q = threadIdx.x; q < p.world; q += kThreads)
    masses[static_cast<int64_t>(q) * num_select + j] = q == p.rank ? sum : 0.f;
}

// ---- 4. the walk over the slice in id order, from the mass of the ranks before ----
__global__ void __launch_bounds__(kThreads)
    local_draw_kernel(VocabSliceParams p, const int32_t* rows, int num_select, const VocabRowState* state,
                      const float* masses, const uint64_t* seeds, float* picks) {
  __shared__ int i_scratch[32];
  __shared__ float chunk_prefix[kThreads];
  const int j = blockIdx.x, row = rows[j];
  const VocabRowState st = state[row];
  const SliceRow z = slice_row(p, row);
  const float inv_t = inverse_temperature(p, row);
  float total = 0.f, before = 0.f;
  for (int q = 0; q < p.world; ++q) {
    if (q == p.rank) before = total;
    total += masses[static_cast<int64_t>(q) * num_select + j];
  }
  const float target = sampling_uniform(seeds[row]) * total;
  const int chunk = ceil_div(p.num_cols, kThreads);
  const int c0 = threadIdx.x * chunk, c1 = min(p.num_cols, c0 + chunk);
  float my = 0.f;
  for (int c = c0; c < c1; ++c) {
    const float x = slice_x(z, c, inv_t);
    if (sampling_order_key(x) >= st.threshold) my += __expf(x - st.max);
  }
  chunk_prefix[threadIdx.x] = my;
  __syncthreads();
  if (threadIdx.x == 0) {  // NOTE: serial scan over the partial sums, as the single-device kernel
    float run = before;
    for (int i = 0; i < kThreads; ++i) {
      const float v = chunk_prefix[i];
      chunk_prefix[i] = run;
      run += v;
    }
  }
  __syncthreads();
  int found = -1, last_kept = -1;
  float run = chunk_prefix[threadIdx.x];
  for (int c = c0; c < c1; ++c) {
    const float x = slice_x(z, c, inv_t);
    if (sampling_order_key(x) < st.threshold) continue;
    last_kept = p.vocab_begin + c;
    run += __expf(x - st.max);
    if (run > target) {
      found = p.vocab_begin + c;
      break;
    }
  }
  const int first = block_reduce<kThreads>(
      found < 0 ? INT_MAX : found, [](int a, int b) { return min(a, b); }, i_scratch);
  const int last = block_reduce<kThreads>(
      last_kept, [](int a, int b) { return max(a, b); }, i_scratch);
  for (int i = threadIdx.x; i < p.world * 2; i += kThreads) {
    const int q = i / 2;
    const float value =
        (i % 2 == 0) ? static_cast<float>(first == INT_MAX ? 0 : first + 1) : static_cast<float>(last + 1);
    picks[(static_cast<int64_t>(q) * num_select + j) * 2 + i % 2] = q == p.rank ? value : 0.f;
  }
}

__global__ void merge_draw_kernel(const float* picks, int world, const int32_t* rows, int num_select, int32_t* tokens) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= num_select) return;
  tokens[rows[j]] = vocab_merged_draw(picks, world, num_select, j);
}

void check_slice(const VocabSliceParams& p) {
  GOSSAMER_CHECK(p.num_cols > 0 && p.ld >= p.num_cols && p.world >= 1 && p.rank >= 0 && p.rank < p.world &&
                     p.num_rows >= 0 && p.temperature != nullptr,
                 "vocab_sampling: bad slice (", p.num_cols, " columns, ld ", p.ld, ", rank ", p.rank, " of ", p.world,
                 ")");
  GOSSAMER_CHECK((p.penalized == nullptr) == (p.penalized_rows == nullptr),
                 "vocab_sampling: penalized rows need both their buffer and their row map");
  GOSSAMER_CHECK(p.vocab_begin + int64_t{p.num_cols} < (int64_t{1} << 24),
                 "vocab_sampling: ids travel as exact f32 integers (< 2^24)");
}

}  // namespace

void launch_vocab_penalize(const VocabSliceParams& p, const VocabPenaltyParams& pen, cudaStream_t stream) {
  check_slice(p);
  GOSSAMER_CHECK(p.penalized_rows != nullptr && p.penalized == pen.out && pen.out != nullptr &&
                     pen.offsets != nullptr && pen.tokens != nullptr && pen.counts != nullptr &&
                     pen.presence != nullptr && pen.frequency != nullptr && pen.repetition != nullptr,
                 "vocab_penalize: needs the penalized rows, their buffer (the slice's), entries and factors");
  if (p.num_rows == 0) return;
  penalize_kernel<<<p.num_rows, kThreads, 0, stream>>>(p, pen);
  GOSSAMER_CUDA_CHECK_LAUNCH();
}

void launch_vocab_local_max(const VocabSliceParams& p, float* records, cudaStream_t stream) {
  check_slice(p);
  if (p.num_rows == 0) return;
  local_max_kernel<<<p.num_rows, kThreads, 0, stream>>>(p, records);
  GOSSAMER_CUDA_CHECK_LAUNCH();
}

void launch_vocab_merge_max(const float* records, int world, int num_rows, int32_t* tokens, VocabRowState* state,
                            cudaStream_t stream) {
  if (num_rows == 0) return;
  merge_max_kernel<<<ceil_div(num_rows, 128), 128, 0, stream>>>(records, world, num_rows, tokens, state);
  GOSSAMER_CUDA_CHECK_LAUNCH();
}

void launch_vocab_select_round(const VocabSliceParams& p, const VocabSelectParams& s, cudaStream_t stream) {
  check_slice(p);
  GOSSAMER_CHECK(s.shift == 24 || s.shift == 16 || s.shift == 8 || s.shift == 0 || s.shift == -8,
                 "vocab_select_round: shift ", s.shift);
  GOSSAMER_CHECK(s.what == VocabSelect::kTopK ? s.top_k != nullptr : (s.top_p != nullptr && s.masses != nullptr),
                 "vocab_select_round: top-k needs top_k, top-p needs top_p and the masses");
  if (s.num_select == 0) return;
  select_round_kernel<<<s.num_select, kThreads, 0, stream>>>(p, s);
  GOSSAMER_CUDA_CHECK_LAUNCH();
}

void launch_vocab_local_mass(const VocabSliceParams& p, const int32_t* rows, int num_select, const VocabRowState* state,
                             float* masses, cudaStream_t stream) {
  check_slice(p);
  if (num_select == 0) return;
  local_mass_kernel<<<num_select, kThreads, 0, stream>>>(p, rows, num_select, state, masses);
  GOSSAMER_CUDA_CHECK_LAUNCH();
}

void launch_vocab_local_draw(const VocabSliceParams& p, const int32_t* rows, int num_select, const VocabRowState* state,
                             const float* masses, const uint64_t* seeds, float* picks, cudaStream_t stream) {
  check_slice(p);
  if (num_select == 0) return;
  local_draw_kernel<<<num_select, kThreads, 0, stream>>>(p, rows, num_select, state, masses, seeds, picks);
  GOSSAMER_CUDA_CHECK_LAUNCH();
}

void launch_vocab_merge_draw(const float* picks, int world, const int32_t* rows, int num_select, int32_t* tokens,
                             cudaStream_t stream) {
  if (num_select == 0) return;
  merge_draw_kernel<<<ceil_div(num_select, 128), 128, 0, stream>>>(picks, world, rows, num_select, tokens);
  GOSSAMER_CUDA_CHECK_LAUNCH();
}

}  // namespace gossamer::kernels
