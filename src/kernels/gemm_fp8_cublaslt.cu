// cuBLASLt for the dense FP8 block-scaled GEMM (gemm_fp8_cublaslt.h): one plan (descriptors, layouts,
// the heuristic's algorithm) per shape, pointers set per launch.
#include <cublasLt.h>

#include "kernels/cuda_utils.h"
#include "kernels/gemm_fp8_cublaslt.h"
#include "kernels/gemv_fp8.h"

namespace gossamer::kernels {
namespace {

constexpr size_t kWorkspaceBytes = size_t(32) << 20;

#define GOSSAMER_CUBLASLT_CHECK(call)                                                         \
  do {                                                                                        \
    const cublasStatus_t status_ = (call);                                                    \
    GOSSAMER_CHECK(status_ == CUBLAS_STATUS_SUCCESS, "cuBLASLt: ", #call, " failed (status ", \
                   static_cast<int>(status_), ")");                                           \
  } while (0)

cublasLtHandle_t lt(void* handle) {
  return static_cast<cublasLtHandle_t>(handle);
}

}  // namespace

struct CublasLtFp8Gemm::Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t w = nullptr, x = nullptr, out = nullptr;
  cublasLtMatmulAlgo_t algo{};
  bool found = false;
  ~Plan() {
    if (out) cublasLtMatrixLayoutDestroy(out);
    if (x) cublasLtMatrixLayoutDestroy(x);
    if (w) cublasLtMatrixLayoutDestroy(w);
    if (desc) cublasLtMatmulDescDestroy(desc);
  }
};

CublasLtFp8Gemm::CublasLtFp8Gemm() : workspace_bytes_(kWorkspaceBytes) {
  cublasLtHandle_t h = nullptr;
  GOSSAMER_CUBLASLT_CHECK(cublasLtCreate(&h));
  handle_ = h;
  GOSSAMER_CUDA_CHECK(cudaMalloc(&workspace_, workspace_bytes_));
}

CublasLtFp8Gemm::~CublasLtFp8Gemm() {
  plans_.clear();
  if (workspace_) cudaFree(workspace_);
  if (handle_) cublasLtDestroy(lt(handle_));
}

CublasLtFp8Gemm::Plan* CublasLtFp8Gemm::plan(const GemmFp8Params& p) {
  const Shape shape{p.M, p.N, p.K, p.lda, p.ldc, p.bias != nullptr};
  auto it = plans_.find(shape);
  if (it != plans_.end()) return it->second.get();
  auto made = std::make_unique<Plan>();
  Plan& plan = *made;
  GOSSAMER_CUBLASLT_CHECK(cublasLtMatmulDescCreate(&plan.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t transpose = CUBLAS_OP_T, none = CUBLAS_OP_N;
  GOSSAMER_CUBLASLT_CHECK(
      cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_TRANSA, &transpose, sizeof transpose));
  GOSSAMER_CUBLASLT_CHECK(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_TRANSB, &none, sizeof none));
  const int32_t blocks = CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F, rows = CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
  GOSSAMER_CUBLASLT_CHECK(
      cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &blocks, sizeof blocks));
  GOSSAMER_CUBLASLT_CHECK(
      cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &rows, sizeof rows));
  if (p.bias) {
    const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    const cudaDataType_t bias_type = CUDA_R_16BF;
    GOSSAMER_CUBLASLT_CHECK(
        cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue));
    GOSSAMER_CUBLASLT_CHECK(
        cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof bias_type));
  }
  // dtype/shape: w = our B [N, K] e4m3 row-major = [K, N] column-major; x = our A [M, K] e4m3 (row stride
  // lda) = [K, M] column-major; out = [M, N] bf16 (row stride ldc) = [N, M] column-major.
  GOSSAMER_CUBLASLT_CHECK(cublasLtMatrixLayoutCreate(&plan.w, CUDA_R_8F_E4M3, p.K, p.N, p.K));
  GOSSAMER_CUBLASLT_CHECK(cublasLtMatrixLayoutCreate(&plan.x, CUDA_R_8F_E4M3, p.K, p.M, p.lda));
  GOSSAMER_CUBLASLT_CHECK(cublasLtMatrixLayoutCreate(&plan.out, CUDA_R_16BF, p.N, p.M, p.ldc));
  cublasLtMatmulPreference_t preference = nullptr;
  GOSSAMER_CUBLASLT_CHECK(cublasLtMatmulPreferenceCreate(&preference));
  GOSSAMER_CUBLASLT_CHECK(cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                               &workspace_bytes_, sizeof workspace_bytes_));
  cublasLtMatmulHeuristicResult_t result{};
  int count = 0;
  const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(lt(handle_), plan.desc, plan.w, plan.x, plan.out,
                                                               plan.out, preference, 1, &result, &count);
  cublasLtMatmulPreferenceDestroy(preference);
  plan.found = status == CUBLAS_STATUS_SUCCESS && count > 0;
  if (plan.found) plan.algo = result.algo;
  return plans_.emplace(shape, std::move(made)).first->second.get();
}

CublasLtFp8Gemm::Plan* CublasLtFp8Gemm::usable_plan(const GemmFp8Params& p) {
  if (p.b_tiled || p.tile_group || p.a_row_index || p.epilogue != GemmEpilogue::kBias || p.M <= 0) return nullptr;
  if (p.K % 16 != 0 || p.lda % 16 != 0 || p.ldc % 8 != 0 || p.N % 8 != 0) return nullptr;
  Plan* made = plan(p);
  return made->found ? made : nullptr;
}

bool CublasLtFp8Gemm::supports(const GemmFp8Params& p) {
  return usable_plan(p) != nullptr;
}

bool CublasLtFp8Gemm::launch(const GemmFp8Params& p, cudaStream_t stream) {
  Plan* found = usable_plan(p);
  if (!found) return false;
  Plan& plan = *found;
  const void* w_scales = p.b_scales;
  const void* x_scales = p.a_scales;
  GOSSAMER_CUBLASLT_CHECK(
      cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &w_scales, sizeof w_scales));
  GOSSAMER_CUBLASLT_CHECK(
      cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &x_scales, sizeof x_scales));
  if (p.bias) {
    const void* bias = p.bias;
    GOSSAMER_CUBLASLT_CHECK(
        cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
  }
  const float alpha = 1.0f, beta = 0.0f;
  GOSSAMER_CUBLASLT_CHECK(cublasLtMatmul(lt(handle_), plan.desc, &alpha, p.b, plan.w, p.a, plan.x, &beta, p.out,
                                         plan.out, p.out, plan.out, &plan.algo, workspace_, workspace_bytes_, stream));
  return true;
}

bool gemm_fp8_cublaslt_preferred(int m, int n, int k) {
  return m > kGemvMaxRows && n <= 65536 && k % 16 == 0;
}

}  // namespace gossamer::kernels
