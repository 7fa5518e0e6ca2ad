// Tensor Memory Accelerator (TMA) helpers for sm_90a: building a tensor map on the host, and the bulk
// tensor copies, bulk shared → global stores, transaction-counted mbarrier arrivals and register reallocation
// used by the warp-specialised kernels on the device.
//
// A tensor map describes a global tensor of up to 5 dimensions (dimension 0 contiguous, the others with
// byte strides that are multiples of 16) and the box one copy moves into shared memory. Boxes that reach
// past the tensor's bounds are zero-filled, and the copy still counts the whole box's bytes on the barrier.
// NOTE: with a swizzle mode, each box row (dimension 0) occupies a whole swizzle span in shared memory:
// a 64-byte dimension 0 under 128B swizzle lands 128 bytes apart (measured: out-of-range shared writes).
// So dimension 0 is sized to the swizzle span (64 bytes for the 64-wide tile-major FP8 tiles, 64B swizzle).
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "core/error.h"

namespace gossamer::kernels::tma {

// ---- host: tensor maps ----

// A uint8 tensor map with the given swizzle (box dimension 0 must be the swizzle span). dims[0] is contiguous;
// strides_bytes[i] is dimension i + 1's stride. The driver entry point is resolved once through the
// runtime (no link against libcuda).
inline CUtensorMap make_map_u8(const void* base, int rank, const uint64_t* dims, const uint64_t* strides_bytes,
                               const uint32_t* box, CUtensorMapSwizzle swizzle) {
  using Encode = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                              const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                              CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
  static Encode encode = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
    GOSSAMER_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found) ==
                           cudaSuccess &&
                       found == cudaDriverEntryPointSuccess && fn != nullptr,
                   "tma: cuTensorMapEncodeTiled is not available from the driver");
    return reinterpret_cast<Encode>(fn);
  }();
  CUtensorMap map{};
  cuuint64_t d[5], s[4];
  cuuint32_t b[5], e[5];
  for (int i = 0; i < rank; ++i) {
    d[i] = dims[i];
    b[i] = box[i];
    e[i] = 1;
    if (i + 1 < rank) s[i] = strides_bytes[i];
  }
  const CUresult r = encode(&map, CU_TENSOR_MAP_DATA_TYPE_UINT8, rank, const_cast<void*>(base), d, s, b, e,
                            CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  GOSSAMER_CHECK(r == CUDA_SUCCESS, "tma: cuTensorMapEncodeTiled failed (", static_cast<int>(r), ")");
  return map;
}
// 64-byte rows of box dimension 0, 64B-swizzled (the FP8 GEMMs' K halves).
inline CUtensorMap make_map_u8_sw64(const void* base, int rank, const uint64_t* dims, const uint64_t* strides_bytes,
                                    const uint32_t* box) {
  return make_map_u8(base, rank, dims, strides_bytes, box, CU_TENSOR_MAP_SWIZZLE_64B);
}
// 128-byte rows of box dimension 0, 128B-swizzled (64 bf16: the W4A16 GEMM's activations).
inline CUtensorMap make_map_u8_sw128(const void* base, int rank, const uint64_t* dims, const uint64_t* strides_bytes,
                                     const uint32_t* box) {
  return make_map_u8(base, rank, dims, strides_bytes, box, CU_TENSOR_MAP_SWIZZLE_128B);
}

// ---- device ----

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// Makes mbarrier initialisation visible to the async proxy (TMA) before the first copy names it.
__device__ __forceinline__ void fence_barrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

// One arrival that also announces `bytes` of transactions to come on this phase.
__device__ __forceinline__ void arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(bytes) : "memory");
}

__device__ __forceinline__ void prefetch_map(const CUtensorMap* map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}

__device__ __forceinline__ void copy_4d(void* dst, const CUtensorMap* map, int c0, int c1, int c2, int c3,
                                        uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5, %6}], "
      "[%2];\n" ::"r"(smem_u32(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(smem_u32(bar)), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
      : "memory");
}

// `bytes` contiguous bytes (a multiple of 16; both addresses 16-byte aligned) from global memory into this
// CTA's shared memory, completing as transactions on `bar` (announce them with arrive_expect_tx): a flat bulk
// copy, no tensor map.
__device__ __forceinline__ void copy_bulk(void* dst, const void* src, uint32_t bytes, uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(smem_u32(dst)),
      "l"(reinterpret_cast<uint64_t>(src)), "r"(bytes), "r"(smem_u32(bar))
      : "memory");
}

// The 2-D box at (c0, c1) into the same shared-memory offset of every CTA in `cta_mask` (a cluster's
// ranks), each destination's barrier at `bar`'s offset receiving the box's bytes.
__device__ __forceinline__ void copy_2d_multicast(void* dst, const CUtensorMap* map, int c0, int c1, uint64_t* bar,
                                                  uint16_t cta_mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%3, "
      "%4}], [%2], %5;\n" ::"r"(smem_u32(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(smem_u32(bar)), "r"(c0), "r"(c1), "h"(cta_mask)
      : "memory");
}

// The 2-D box at (c0, c1) into this CTA's shared memory, its bytes completing on `bar`.
__device__ __forceinline__ void copy_2d(void* dst, const CUtensorMap* map, int c0, int c1, uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];\n" ::"r"(
          smem_u32(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(smem_u32(bar)), "r"(c0), "r"(c1)
      : "memory");
}

// The 4-D box at (c0 … c3) into the same shared-memory offset of every CTA in `cta_mask`, as
// copy_2d_multicast.
__device__ __forceinline__ void copy_4d_multicast(void* dst, const CUtensorMap* map, int c0, int c1, int c2, int c3,
                                                  uint64_t* bar, uint16_t cta_mask) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%3, "
      "%4, %5, %6}], [%2], %7;\n" ::"r"(smem_u32(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(smem_u32(bar)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "h"(cta_mask)
      : "memory");
}

// `bytes` (a multiple of 16; both addresses 16-byte aligned) from this CTA's shared memory to global memory,
// asynchronously, in this thread's open bulk group (commit_bulk_group closes it). Make the source's
// generic-proxy writes visible first (fence_proxy_async, then a barrier).
__device__ __forceinline__ void store_bulk(void* dst, const void* src, uint32_t bytes) {
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;\n" ::"l"(reinterpret_cast<uint64_t>(dst)),
               "r"(smem_u32(src)), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void commit_bulk_group() {
  asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
}
// Waits until every bulk group this thread committed has read its shared-memory sources (those may be rewritten).
__device__ __forceinline__ void wait_bulk_groups_read() {
  asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
}
// Waits until every bulk group this thread committed has completed (its global writes performed).
__device__ __forceinline__ void wait_bulk_groups() {
  asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
}

// This CTA's rank in its cluster.
__device__ __forceinline__ uint32_t cluster_rank() {
  uint32_t rank;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(rank));
  return rank;
}

// Every thread of every CTA of the cluster (all must call it): earlier shared-memory writes and barrier
// initialisations are visible cluster-wide afterwards.
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}

// Register reallocation between warpgroups (every thread of the warpgroup executes it).
template <int kRegs>
__device__ __forceinline__ void regs_release() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kRegs));
}
template <int kRegs>
__device__ __forceinline__ void regs_claim() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kRegs));
}

}  // namespace gossamer::kernels::tma
