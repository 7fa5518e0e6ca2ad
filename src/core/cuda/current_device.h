// The calling thread's current CUDA device, set on demand. The cuda backend binds each model to its GPU:
// several models (data-parallel replicas, one per GPU) may live in one process and be called from any
// thread (the loader's, each engine's), so every entry point of a model makes its own GPU current first.
//
// Contract: use_device(d) makes device d current for the calling thread (a no-op when it already is) and
// throws gossamer::Error when d is not a usable device. It costs one thread-local read when nothing changes.
#pragma once

#include <cuda_runtime.h>

#include "core/cuda/check.h"

namespace gossamer::cuda {

inline void use_device(int device) {
  int current = -1;
  GOSSAMER_CUDA_CHECK(cudaGetDevice(&current));
  if (current != device) GOSSAMER_CUDA_CHECK(cudaSetDevice(device));
}

}  // namespace gossamer::cuda
