#include <cuda_fp8.h>

#include "kernels/cuda_utils.h"
#include "kernels/mxfp4_convert.h"

namespace gossamer::kernels {
namespace {

__constant__ float kFp4Lut[16] = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                                  -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};

// One block of 256 threads per 128×128 output block: each thread owns half of one row's block row.
__global__ void __launch_bounds__(256) mxfp4_to_fp8_kernel(Mxfp4ToFp8Params p) {
  const int kb = blockIdx.x, rb = blockIdx.y, e = blockIdx.z;
  const int mx_cols = p.cols / 32;
  const int row = rb * 128 + threadIdx.x / 2;
  const int half = threadIdx.x % 2;   // columns [64·half, 64·half + 64) of the block
  const int mx0 = kb * 4 + half * 2;  // first of the two MX blocks this thread owns
  const int64_t row_base = (static_cast<int64_t>(e) * p.rows + row) * mx_cols;
  // ---- block maximum of the MX exponents ----
  int e_local = 0;
  if (row < p.rows) {
    for (int m = mx0; m < mx0 + 2 && m < mx_cols; ++m) e_local = max(e_local, int(p.scales[row_base + m]));
  }
  for (int o = 16; o > 0; o >>= 1) e_local = max(e_local, __shfl_xor_sync(0xffffffffu, e_local, o));
  __shared__ int warp_max[8];
  if (threadIdx.x % 32 == 0) warp_max[threadIdx.x / 32] = e_local;
  __syncthreads();
  int e_max = 0;
#pragma unroll
  for (int w = 0; w < 8; ++w) e_max = max(e_max, warp_max[w]);
  if (threadIdx.x == 0) {
    const int rbs = ceil_div(p.rows, 128), kbs = ceil_div(p.cols, 128);
    p.out_scales[(static_cast<int64_t>(e) * rbs + rb) * kbs + kb] = ldexpf(1.0f, e_max - 127 - 6);
  }
  if (row >= p.rows) return;
  // ---- convert 32 values per MX block ----
  for (int m = mx0; m < mx0 + 2 && m < mx_cols; ++m) {
    const int shift = int(p.scales[row_base + m]) - e_max + 6;
    const uint4 packed = *reinterpret_cast<const uint4*>(p.blocks + (row_base + m) * 16);
    const uint8_t* bytes = reinterpret_cast<const uint8_t*>(&packed);
    uint4 outv[2];
    uint8_t* ob = reinterpret_cast<uint8_t*>(outv);
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      ob[2 * j] = __nv_cvt_float_to_fp8(ldexpf(kFp4Lut[bytes[j] & 0xF], shift), __NV_SATFINITE, __NV_E4M3);
      ob[2 * j + 1] = __nv_cvt_float_to_fp8(ldexpf(kFp4Lut[bytes[j] >> 4], shift), __NV_SATFINITE, __NV_E4M3);
    }
    uint4* dst = reinterpret_cast<uint4*>(p.out + (static_cast<int64_t>(e) * p.rows + row) * p.cols + m * 32);
    dst[0] = outv[0];
    dst[1] = outv[1];
  }
}

}  // namespace

void launch_mxfp4_to_fp8(const Mxfp4ToFp8Params& p, cudaStream_t stream) {
  GOSSAMER_CHECK(p.cols % 32 == 0, "mxfp4_to_fp8: cols must be a multiple of 32");
  if (p.rows == 0 || p.cols == 0 || p.num_experts == 0) return;
  const dim3 grid(ceil_div(p.cols, 128), ceil_div(p.rows, 128), p.num_experts);
  mxfp4_to_fp8_kernel<<<grid, 256, 0, stream>>>(p);
  GOSSAMER_CUDA_CHECK_LAUNCH();
}

}  // namespace gossamer::kernels
