// The FP8 block-scaled GEMM of gemm_fp8.h (plain mode, kBias epilogue) run by cuBLASLt, the library
// gossamer ships next to: the product dispatches the dense linears to it where it measures faster than
// gemm_fp8 (docs/PERF.md: every qkv/o shape above the decode GEMV's rows, 0.5–0.6× our time at M ≥ 1024).
//
//   out[m, n] = bf16(bias[n] + Σ_kb a_scale[m, kb] · b_scale[n/128, kb] · Σ_{k ∈ kb} A[m, k] · B[n, k])
//
// Differences from gemm_fp8's arguments: B is row-major [N, K] (cuBLASLt cannot read the tile-major
// layout of fp8_tiled.h, so the model keeps a row-major copy of the linears it sends here); lda, K, N and
// the output pointer must suit cuBLASLt (16-byte multiples), and M and N must be multiples of 4 (cuBLASLt's
// block-scale layouts). The scale tensors are gemm_fp8's, unchanged: each launch first restages them into
// this object's workspace in the layouts cuBLASLt reads (one small kernel).
// cuBLASLt's operands, all column-major: its A is our B viewed [K, N] (op T) with BLK128x128 scales,
// k-blocks fastest with a column stride rounded up to 4 ([ceil(N/128), round4(ceil(K/128))]: ours padded);
// its B is our A viewed [K, M] (ld lda, op N) with VEC128 scales M-major ([ceil(K/128), M]: ours
// transposed); its D our out viewed [N, M] (ld ldc) = row-major [M, N].
// The bias: cuBLASLt's BIAS epilogue (bf16 bias per row of its D); a shape it has no algorithm for is not
// supported (the caller runs gemm_fp8).
// Rounding: cuBLASLt's own accumulation order, held to gemm_fp8's error bound by the tests.
//
// Contract: one object per stream user (not thread-safe); plans are made on the host the first time a
// shape is seen (cuBLASLt's heuristic), so a shape should be seen before a CUDA-graph capture that uses
// it (capturing also works: planning launches nothing). Launches never synchronise or allocate.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>

#include "core/cuda/cuda_types.h"  // cudaStream_t
#include "kernels/gemm_fp8.h"

namespace gossamer::kernels {

class CublasLtFp8Gemm {
 public:
  CublasLtFp8Gemm();  // the handle and a workspace on the current device
  ~CublasLtFp8Gemm();
  CublasLtFp8Gemm(const CublasLtFp8Gemm&) = delete;
  CublasLtFp8Gemm& operator=(const CublasLtFp8Gemm&) = delete;

  // Whether cuBLASLt has an algorithm for this problem (p's M, N, K, lda, ldc, bias or not; B row-major,
  // plain mode, kBias). The answer is cached per shape.
  bool supports(const GemmFp8Params& p);
  // How p's shape runs, for tests and benches: "bias epilogue" / "no bias", or why it does not ("no
  // algorithm (heuristic status …)", "unsupported arguments").
  std::string note(const GemmFp8Params& p);
  // Runs p on `stream` and returns true, or returns false (launching nothing) where p is not supported.
  bool launch(const GemmFp8Params& p, cudaStream_t stream);

 private:
  struct Plan;
  using Shape = std::tuple<int, int, int, int64_t, int64_t, bool>;  // M, N, K, lda, ldc, bias
  Plan* plan(const GemmFp8Params& p);                               // made once per shape
  Plan* usable_plan(const GemmFp8Params& p);                        // p's plan if cuBLASLt can run it, else null

  void* handle_ = nullptr;     // cublasLtHandle_t
  void* workspace_ = nullptr;  // cuBLASLt's
  size_t workspace_bytes_ = 0;
  float* scales_ = nullptr;  // the restaged scales (kScaleWorkspaceFloats)
  std::map<Shape, std::unique_ptr<Plan>> plans_;
};

// Whether the model sends a dense FP8 linear of these dimensions to cuBLASLt (when it has an algorithm):
// more rows than the decode GEMV takes, and a width cuBLASLt was seen to run (the unembedding's 201,088
// columns aborted it with an illegal address on the H200: docs/PERF.md, 105892e).
bool gemm_fp8_cublaslt_preferred(int m, int n, int k);

}  // namespace gossamer::kernels
