// The one check of CUDA runtime return codes (kernels, the cuda backend, GPU tests and benches).
//
// Contract: GOSSAMER_CUDA_CHECK(expr) evaluates expr once and throws gossamer::Error naming the call and
// cudaGetErrorString's text when it is not cudaSuccess; GOSSAMER_CUDA_CHECK_LAUNCH() checks the launch
// just issued on this thread (cudaGetLastError).
#pragma once

#include <cuda_runtime.h>

#include "core/error.h"

#define GOSSAMER_CUDA_CHECK(expr)                                           \
  do {                                                                      \
    const cudaError_t gossamer_cuda_status_ = (expr);                       \
    GOSSAMER_CHECK(gossamer_cuda_status_ == cudaSuccess, #expr,             \
                   " failed: ", cudaGetErrorString(gossamer_cuda_status_)); \
  } while (0)

#define GOSSAMER_CUDA_CHECK_LAUNCH() GOSSAMER_CUDA_CHECK(cudaGetLastError())
