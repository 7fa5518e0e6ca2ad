// What a kernel's params header needs from CUDA without the CUDA headers, so that the params structs and
// their CPU references (src/kernels/*_cpu.cpp, library gossamer_kernels_ref) build where nvcc is absent.
//
// - cudaStream_t and cudaEvent_t are declared exactly as the CUDA runtime declares them (pointers to the
//   opaque CUstream_st / CUevent_st), so a translation unit may include this header and <cuda_runtime.h> in
//   either order.
// - GOSSAMER_HOST_DEVICE marks inline helpers shared by device code and the references: __host__ __device__
//   under nvcc, nothing elsewhere.
#pragma once

struct CUstream_st;
typedef struct CUstream_st* cudaStream_t;
struct CUevent_st;
typedef struct CUevent_st* cudaEvent_t;

#ifdef __CUDACC__
#define GOSSAMER_HOST_DEVICE __host__ __device__
#else
#define GOSSAMER_HOST_DEVICE
#endif
