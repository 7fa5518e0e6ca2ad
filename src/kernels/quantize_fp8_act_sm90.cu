// Per-token 1×128 quantization to e4m3 (quantize_fp8.h) on the GPU.
//
// One warp per output row, in passes of 2,048 columns: each lane first loads its eight 8-column chunks of
// the pass (16-byte loads, all in flight at once), then every half-warp quantizes one 128-column group per
// chunk round (lanes 0–15 group 2i, lanes 16–31 group 2i + 1 of the pass: quantize_fp8_half_warp_group), then
// stores 8 bytes per lane (to each of its output rows with scatter_rows).
#include "kernels/cuda_utils.h"
#include "kernels/quantize_fp8.h"
#include "kernels/quantize_fp8_sm90.cuh"

namespace gossamer::kernels {
namespace {

constexpr int kChunk = 8;                             // bf16 columns per lane and chunk (16 bytes)
constexpr int kPassChunks = 8;                        // chunks per lane and pass
constexpr int kPassCols = 32 * kChunk * kPassChunks;  // 2,048 columns: 16 groups
constexpr int kMaxScatter = 4;                        // output rows per input row (QuantizeFp8Params::scatter_width)

// 8 bf16 from x (16-byte aligned when kVec16, else 4-byte aligned).
template <bool kVec16>
__device__ __forceinline__ uint4 load_chunk(const uint16_t* x) {
  if constexpr (kVec16) {
    return __ldg(reinterpret_cast<const uint4*>(x));
  } else {
    const uint32_t* w = reinterpret_cast<const uint32_t*>(x);
    return make_uint4(__ldg(w), __ldg(w + 1), __ldg(w + 2), __ldg(w + 3));
  }
}

template <bool kVec16>
__global__ void quantize_fp8_kernel(QuantizeFp8Params p) {
  const int64_t row = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (row >= p.M) return;
  if (p.num_valid_rows && row >= *p.num_valid_rows) return;
  const int groups = ceil_div(p.K, 128);
  const int64_t src_row = p.row_index ? p.row_index[row] : row;
  const uint16_t* x = p.x + src_row * p.ldx;  // [K] bf16
  // The output rows (−1: none): this row, or its scatter_rows.
  int64_t out_rows[kMaxScatter] = {row, -1, -1, -1};
  if (p.scatter_rows) {
#pragma unroll
    for (int k = 0; k < kMaxScatter; ++k)
      out_rows[k] = k < p.scatter_width ? p.scatter_rows[row * p.scatter_width + k] : -1;
  }
  for (int base = 0; base < p.K; base += kPassCols) {
    uint4 raw[kPassChunks];
#pragma unroll
    for (int i = 0; i < kPassChunks; ++i) {
      const int col = base + (32 * i + lane) * kChunk;
      raw[i] = col < p.K ? load_chunk<kVec16>(x + col) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int i = 0; i < kPassChunks; ++i) {
      if (base + 32 * kChunk * i >= p.K) break;  // the warp's whole round is past K
      const int col = base + (32 * i + lane) * kChunk;
      const uint32_t words[4] = {raw[i].x, raw[i].y, raw[i].z, raw[i].w};
      float v[kChunk];
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        v[2 * j] = __uint_as_float(words[j] << 16);
        v[2 * j + 1] = __uint_as_float(words[j] & 0xFFFF0000u);
      }
      uint2 q;
      const float scale = quantize_fp8_half_warp_group(v, q);
      if (col >= p.K) continue;
#pragma unroll
      for (int k = 0; k < kMaxScatter; ++k) {
        if (out_rows[k] < 0) continue;
        if (lane % 16 == 0) p.scales[out_rows[k] * groups + col / 128] = scale;
        *reinterpret_cast<uint2*>(p.q + out_rows[k] * p.ldq + col) = q;
      }
    }
  }
}

}  // namespace

void launch_quantize_fp8(const QuantizeFp8Params& p, cudaStream_t stream) {
  GOSSAMER_CHECK(p.K % 8 == 0 && p.ldq % 16 == 0 && p.ldx % 8 == 0, "quantize_fp8: K must be a multiple of 8");
  GOSSAMER_CHECK(reinterpret_cast<uintptr_t>(p.x) % 4 == 0 && reinterpret_cast<uintptr_t>(p.q) % 8 == 0,
                 "quantize_fp8: x must be 4-byte and q 8-byte aligned");
  GOSSAMER_CHECK(!p.scatter_rows || (p.row_index == nullptr && p.num_valid_rows == nullptr && p.scatter_width >= 1 &&
                                     p.scatter_width <= kMaxScatter),
                 "quantize_fp8: scatter_rows takes 1–", kMaxScatter, " rows per input row and no row_index");
  if (p.M == 0) return;
  const int threads = 256;
  const auto blocks = static_cast<unsigned>(ceil_div<int64_t>(static_cast<int64_t>(p.M) * 32, threads));
  if (reinterpret_cast<uintptr_t>(p.x) % 16 == 0) {
    quantize_fp8_kernel<true><<<blocks, threads, 0, stream>>>(p);
  } else {
    quantize_fp8_kernel<false><<<blocks, threads, 0, stream>>>(p);
  }
  GOSSAMER_CUDA_CHECK_LAUNCH();
}

}  // namespace gossamer::kernels
