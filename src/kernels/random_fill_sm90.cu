// Random fills (random_fill.h): a grid-stride loop, one element per thread and step.
#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include <algorithm>

#include "kernels/cuda_utils.h"
#include "kernels/random_fill.h"

namespace gossamer::kernels {
namespace {

__device__ __forceinline__ uint8_t to_fp8(float v) {
  return __nv_cvt_float_to_fp8(v, __NV_SATFINITE, __NV_E4M3);
}

__global__ void random_fill_kernel(const RandomFillParams p) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < p.count; i += stride) {
    const float v = random_fill_value(p, p.first + i);
    switch (p.type) {
      case RandomFillType::kF32: static_cast<float*>(p.out)[i] = v; break;
      case RandomFillType::kBf16: {
        const __nv_bfloat16 h = __float2bfloat16_rn(v);
        static_cast<__nv_bfloat16*>(p.out)[i] = h;
        break;
      }
      case RandomFillType::kFp8E4M3: static_cast<uint8_t*>(p.out)[i] = to_fp8(__fmul_rn(v, p.inv_scale)); break;
      case RandomFillType::kU8: static_cast<uint8_t*>(p.out)[i] = random_fill_byte(v); break;
    }
  }
}

}  // namespace

void launch_random_fill(const RandomFillParams& p, cudaStream_t stream) {
  GOSSAMER_CHECK(p.count >= 0 && (p.count == 0 || p.out != nullptr), "random_fill: null output");
  GOSSAMER_CHECK(p.first >= 0, "random_fill: negative first element");
  if (p.count == 0) return;
  const int blocks = static_cast<int>(std::min<int64_t>(ceil_div<int64_t>(p.count, 256), 132 * 32));
  random_fill_kernel<<<blocks, 256, 0, stream>>>(p);
  GOSSAMER_CUDA_CHECK_LAUNCH();
}

}  // namespace gossamer::kernels
