#include <cuda_fp8.h>

#include "kernels/cuda_utils.h"
#include "kernels/quantize_fp8.h"

namespace gossamer::kernels {
namespace {

// One warp per (row, 128-column group): 32 lanes × 4 columns.
__global__ void quantize_fp8_kernel(QuantizeFp8Params p) {
  const int groups = ceil_div(p.K, 128);
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (warp >= static_cast<int64_t>(p.M) * groups) return;
  const int64_t row = warp / groups;
  if (p.num_valid_rows && row >= *p.num_valid_rows) return;
  const int64_t src_row = p.row_index ? p.row_index[row] : row;
  const int g = static_cast<int>(warp % groups);
  const int col = g * 128 + lane * 4;
  const bool active = col < p.K;
  float v[4] = {};
  float amax = 0.f;
  if (active) {
    const uint2 raw = *reinterpret_cast<const uint2*>(p.x + src_row * p.ldx + col);
    const __nv_bfloat16* b = reinterpret_cast<const __nv_bfloat16*>(&raw);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      v[j] = __bfloat162float(b[j]);
      amax = fmaxf(amax, fabsf(v[j]));
    }
  }
  for (int o = 16; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
  amax = fmaxf(amax, 1e-4f);
  const float inv = 448.0f / amax;
  if (lane == 0) p.scales[row * groups + g] = amax / 448.0f;
  if (!active) return;
  uint32_t out;
  uint8_t* ob = reinterpret_cast<uint8_t*>(&out);
#pragma unroll
  for (int j = 0; j < 4; ++j) ob[j] = __nv_cvt_float_to_fp8(__fmul_rn(v[j], inv), __NV_SATFINITE, __NV_E4M3);
  *reinterpret_cast<uint32_t*>(p.q + row * p.ldq + col) = out;
}

}  // namespace

void launch_quantize_fp8(const QuantizeFp8Params& p, cudaStream_t stream) {
  GOSSAMER_CHECK(p.K % 8 == 0 && p.ldq % 16 == 0 && p.ldx % 8 == 0, "quantize_fp8: K must be a multiple of 8");
  if (p.M == 0) return;
  const int64_t warps = static_cast<int64_t>(p.M) * ceil_div(p.K, 128);
  const int threads = 256;
  quantize_fp8_kernel<<<static_cast<unsigned>(ceil_div<int64_t>(warps * 32, threads)), threads, 0, stream>>>(p);
  GOSSAMER_CUDA_CHECK_LAUNCH();
}

}  // namespace gossamer::kernels
