// One block of 1024 threads per row (fp32 or bf16 logits), the rule of kernels/sampling.h. Penalized rows are
// first written to the fp32 scratch row and sampled from there. The top-k and top-p thresholds are found by
// radix selection over the order-preserving integer image of x (4 histogram passes of 8 bits each), so no
// sort is needed; the top log-probabilities by one max-reduce per requested token.
#include <cfloat>

#include "kernels/cuda_utils.h"
#include "kernels/sampling.h"

namespace gossamer::kernels {
namespace {

constexpr int kThreads = 1024;

// Logits as fp32 (exact widening for bf16).
__device__ __forceinline__ float logit_value(const float* x, int i) {
  return x[i];
}
__device__ __forceinline__ float logit_value(const uint16_t* x, int i) {
  return __uint_as_float(static_cast<uint32_t>(x[i]) << 16);
}

// Steps 1-4 of the rule for one row (x: [vocab], fp32 or bf16); every thread returns the drawn token.
template <typename T>
__device__ int32_t sample_row(const SamplingParams& p, int row, const T* x) {
  __shared__ float f_scratch[32];
  __shared__ int i_scratch[32];
  __shared__ unsigned long long u_scratch[32];
  __shared__ float chunk_prefix[kThreads];
  const float temp = p.temperature ? p.temperature[row] : 0.f;
  // ---- greedy: (max value, lowest index) packed so that a max-reduce finds it ----
  if (temp <= 0.f) {
    unsigned long long best = 0;
    for (int i = threadIdx.x; i < p.vocab; i += kThreads) {
      const unsigned long long key =
          (static_cast<unsigned long long>(sampling_order_key(logit_value(x, i))) << 32) | (0xFFFFFFFFu - i);
      best = key > best ? key : best;
    }
    best = block_reduce<kThreads>(
        best, [](unsigned long long a, unsigned long long b) { return a > b ? a : b; }, u_scratch);
    return static_cast<int32_t>(0xFFFFFFFFu - static_cast<uint32_t>(best));
  }
  const float inv_t = 1.0f / temp;
  float mx = -FLT_MAX;
  for (int i = threadIdx.x; i < p.vocab; i += kThreads) mx = fmaxf(mx, logit_value(x, i) * inv_t);
  mx = block_reduce<kThreads>(
      mx, [](float a, float b) { return fmaxf(a, b); }, f_scratch);
  // ---- top-k threshold: the k-th largest key, by 4 radix passes of 8 bits ----
  __shared__ int hist[256];
  __shared__ float fhist[256];
  __shared__ uint32_t s_prefix;
  __shared__ float s_above;
  uint32_t t_k = 0;
  const int k = p.top_k ? p.top_k[row] : 0;
  if (k > 0 && k < p.vocab) {
    uint32_t prefix = 0, mask = 0;
    int remaining = k;
    for (int shift = 24; shift >= 0; shift -= 8) {
      for (int b = threadIdx.x; b < 256; b += kThreads) hist[b] = 0;
      __syncthreads();
      for (int i = threadIdx.x; i < p.vocab; i += kThreads) {
        const uint32_t key = sampling_order_key(logit_value(x, i) * inv_t);
        if ((key & mask) == prefix) atomicAdd(&hist[(key >> shift) & 255], 1);
      }
      __syncthreads();
      if (threadIdx.x == 0) {
        int cum = 0, chosen = 0;
        for (int b = 255; b >= 0; --b) {
          if (cum + hist[b] >= remaining) {
            chosen = b;
            break;
          }
          cum += hist[b];
        }
        remaining -= cum;
        s_prefix = prefix | (uint32_t(chosen) << shift);
        i_scratch[0] = remaining;
      }
      __syncthreads();
      prefix = s_prefix;
      remaining = i_scratch[0];
      mask |= 255u << shift;
      __syncthreads();
    }
    t_k = prefix;
  }
  auto mass_above = [&](uint32_t t) {
    float s = 0.f;
    for (int i = threadIdx.x; i < p.vocab; i += kThreads) {
      const float v = logit_value(x, i) * inv_t;
      if (sampling_order_key(v) >= t) s += __expf(v - mx);
    }
    return block_reduce<kThreads>(
        s, [](float a, float b) { return a + b; }, f_scratch);
  };
  // ---- top-p threshold: the key where the mass from the top first reaches top_p·mass(top-k set),
  //      by 4 radix passes over mass histograms ----
  uint32_t t_final = t_k;
  const float top_p = p.top_p ? p.top_p[row] : 1.f;
  if (top_p < 1.f) {
    const float target = top_p * mass_above(t_k);
    uint32_t prefix = 0, mask = 0;
    float above = 0.f;  // mass of kept keys above the current prefix range
    for (int shift = 24; shift >= 0; shift -= 8) {
      for (int b = threadIdx.x; b < 256; b += kThreads) fhist[b] = 0.f;
      __syncthreads();
      for (int i = threadIdx.x; i < p.vocab; i += kThreads) {
        const float v = logit_value(x, i) * inv_t;
        const uint32_t key = sampling_order_key(v);
        if (key >= t_k && (key & mask) == prefix) atomicAdd(&fhist[(key >> shift) & 255], __expf(v - mx));
      }
      __syncthreads();
      if (threadIdx.x == 0) {
        float cum = above;
        int chosen = -1, lowest = 0;
        for (int b = 255; b >= 0; --b) {
          if (fhist[b] > 0.f) lowest = b;
          if (fhist[b] > 0.f && cum + fhist[b] >= target) {
            chosen = b;
            break;
          }
          cum += fhist[b];
        }
        if (chosen < 0) {  // rounding left the target unreached: keep everything down to the lowest bin
          chosen = lowest;
          cum = above;
          for (int b = 255; b > lowest; --b) cum += fhist[b];
        }
        s_prefix = prefix | (uint32_t(chosen) << shift);
        s_above = cum;
      }
      __syncthreads();
      prefix = s_prefix;
      above = s_above;
      mask |= 255u << shift;
      __syncthreads();
    }
    t_final = max(prefix, t_k);
  }
  // ---- sample in index order ----
  const int chunk = ceil_div(p.vocab, kThreads);
  const int i0 = threadIdx.x * chunk, i1 = min(p.vocab, i0 + chunk);
  float my = 0.f;
  for (int i = i0; i < i1; ++i) {
    const float v = logit_value(x, i) * inv_t;
    if (sampling_order_key(v) >= t_final) my += __expf(v - mx);
  }
  chunk_prefix[threadIdx.x] = my;
  __syncthreads();
  if (threadIdx.x == 0) {  // NOTE: serial scan over 1024 partial sums; negligible next to the passes above
    float run = 0.f;
    for (int i = 0; i < kThreads; ++i) {
      const float v = chunk_prefix[i];
      chunk_prefix[i] = run;
      run += v;
    }
    f_scratch[0] = run;
  }
  __syncthreads();
  const float target = sampling_uniform(p.seeds ? p.seeds[row] : 0ull) * f_scratch[0];
  int found = -1, last_kept = -1;
  float run = chunk_prefix[threadIdx.x];
  for (int i = i0; i < i1; ++i) {
    const float v = logit_value(x, i) * inv_t;
    if (sampling_order_key(v) < t_final) continue;
    last_kept = i;
    run += __expf(v - mx);
    if (run > target) {
      found = i;
      break;
    }
  }
  // The first thread (lowest index) that crossed the target wins; if rounding left none, the last kept.
  const int first = block_reduce<kThreads>(
      found < 0 ? INT_MAX : found, [](int a, int b) { return min(a, b); }, i_scratch);
  const int last = block_reduce<kThreads>(
      last_kept, [](int a, int b) { return max(a, b); }, i_scratch);
  return first != INT_MAX ? first : last;
}

// Raw log-probabilities of the drawn token and of the row's top num_top[row] tokens (z: the raw row).
template <typename T>
__device__ void row_logprobs(const SamplingParams& p, int row, const T* z, int32_t token) {
  __shared__ float f_scratch[32];
  __shared__ unsigned long long u_scratch[32];
  float mx = 0.f, sum = 0.f;
  row_normaliser<kThreads>(
      p.vocab, [&](int i) { return logit_value(z, i); }, f_scratch, mx, sum);
  const float log_total = mx + logf(sum);
  if (threadIdx.x == 0) p.out_logprobs[row] = logit_value(z, token) - log_total;
  const int n = p.num_top ? min(max(p.num_top[row], 0), min(kMaxTopLogprobs, p.vocab)) : 0;
  // ---- top tokens: each pass finds the largest (key, lowest index) below the previous one ----
  unsigned long long previous = ~0ull;
  for (int j = 0; j < n; ++j) {
    unsigned long long best = 0;
    for (int i = threadIdx.x; i < p.vocab; i += kThreads) {
      const unsigned long long key =
          (static_cast<unsigned long long>(sampling_order_key(logit_value(z, i))) << 32) | (0xFFFFFFFFu - i);
      if (key < previous && key > best) best = key;
    }
    best = block_reduce<kThreads>(
        best, [](unsigned long long a, unsigned long long b) { return a > b ? a : b; }, u_scratch);
    const int index = static_cast<int>(0xFFFFFFFFu - static_cast<uint32_t>(best));
    if (threadIdx.x == 0) {
      p.out_top_tokens[row * kMaxTopLogprobs + j] = index;
      p.out_top_logprobs[row * kMaxTopLogprobs + j] = logit_value(z, index) - log_total;
    }
    previous = best;
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads) sampling_kernel(SamplingParams p, const T* logits) {
  const int row = blockIdx.x;
  const T* z = logits + static_cast<int64_t>(row) * p.vocab;
  int32_t token = 0;
  // ---- 0. penalties: the penalized row goes to the fp32 scratch row ----
  if (p.penalty_offsets && p.penalty_offsets[row + 1] > p.penalty_offsets[row]) {
    float* y = p.penalized + static_cast<int64_t>(p.scratch_rows ? p.scratch_rows[row] : row) * p.vocab;
    for (int i = threadIdx.x; i < p.vocab; i += kThreads) y[i] = logit_value(z, i);
    __syncthreads();
    for (int e = p.penalty_offsets[row] + threadIdx.x; e < p.penalty_offsets[row + 1]; e += kThreads) {
      const int t = p.penalty_tokens[e];  // NOTE: distinct per row, so no two threads write one entry
      y[t] = penalized_logit(y[t], p.penalty_counts[e], p.presence[row], p.frequency[row], p.repetition[row]);
    }
    __syncthreads();
    token = sample_row(p, row, static_cast<const float*>(y));
  } else {
    token = sample_row(p, row, z);
  }
  if (threadIdx.x == 0) p.out_tokens[row] = token;
  if (p.out_logprobs) row_logprobs(p, row, z, token);
}

}  // namespace

void launch_sampling(const SamplingParams& p, CUstream_st* stream) {
  GOSSAMER_CHECK(p.vocab > 0, "sampling: empty vocabulary");
  GOSSAMER_CHECK(!p.penalty_offsets ||
                     (p.penalty_tokens && p.penalty_counts && p.presence && p.frequency && p.repetition && p.penalized),
                 "sampling: penalties need tokens, counts, the three factors and the scratch rows");
  GOSSAMER_CHECK(!p.num_top || (p.out_logprobs && p.out_top_tokens && p.out_top_logprobs),
                 "sampling: top log-probabilities need their outputs");
  GOSSAMER_CHECK((p.logits != nullptr) != (p.logits_bf16 != nullptr), "sampling: give logits or logits_bf16");
  if (p.num_rows == 0) return;
  if (p.logits_bf16) {
    sampling_kernel<uint16_t><<<p.num_rows, kThreads, 0, stream>>>(p, p.logits_bf16);
  } else {
    sampling_kernel<float><<<p.num_rows, kThreads, 0, stream>>>(p, p.logits);
  }
  GOSSAMER_CUDA_CHECK_LAUNCH();
}

}  // namespace gossamer::kernels
