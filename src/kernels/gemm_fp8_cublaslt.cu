// cuBLASLt for the dense FP8 block-scaled GEMM (gemm_fp8_cublaslt.h): one plan (descriptors, layouts,
// the heuristic's algorithm) per shape, pointers set per launch.
#include <cublasLt.h>

#include <string>

#include "kernels/cuda_utils.h"
#include "kernels/gemm_fp8_cublaslt.h"
#include "kernels/gemv_fp8.h"

namespace gossamer::kernels {
namespace {

constexpr size_t kWorkspaceBytes = size_t(32) << 20;
// Restaged scales: M·ceil(K/128) activation scales plus the weight's padded block scales (16 MB: 65,536
// rows at K = 8,192).
constexpr int64_t kScaleWorkspaceFloats = int64_t{4} << 20;

#define GOSSAMER_CUBLASLT_CHECK(call)                                                         \
  do {                                                                                        \
    const cublasStatus_t status_ = (call);                                                    \
    GOSSAMER_CHECK(status_ == CUBLAS_STATUS_SUCCESS, "cuBLASLt: ", #call, " failed (status ", \
                   static_cast<int>(status_), ")");                                           \
  } while (0)

cublasLtHandle_t lt(void* handle) {
  return static_cast<cublasLtHandle_t>(handle);
}

int64_t round4(int64_t v) {
  return (v + 3) / 4 * 4;
}

// Where the restaged scales lie in the workspace (floats): the activation scales first, the weight's
// after them at a 16-byte boundary.
struct ScaleLayout {
  int64_t kb = 0, nb = 0, kb4 = 0;
  int64_t x_floats = 0, w_offset = 0, total = 0;
};
ScaleLayout scale_layout(const GemmFp8Params& p) {
  ScaleLayout l;
  l.kb = ceil_div(p.K, 128);
  l.nb = ceil_div(p.N, 128);
  l.kb4 = round4(l.kb);
  l.x_floats = int64_t{p.M} * l.kb;
  l.w_offset = round4(l.x_floats);
  l.total = l.w_offset + l.nb * l.kb4;
  return l;
}

// x_out[kb, M] = x[M, kb] (cuBLASLt's VEC128, M-major); w_out[nb, kb4] = w[nb, kb], zero past kb (its
// BLK128x128, column stride a multiple of 4). One thread per output element of either.
__global__ void restage_scales_kernel(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ out,
                                      int M, int kb, int nb, int kb4, int64_t w_offset) {
  const int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  const int64_t x_floats = int64_t{M} * kb;
  if (i < x_floats) {
    const int64_t b = i / M, m = i % M;
    out[i] = x[m * kb + b];
    return;
  }
  const int64_t j = i - x_floats;
  if (j >= int64_t{nb} * kb4) return;
  const int64_t n = j / kb4, b = j % kb4;
  out[w_offset + j] = b < kb ? w[n * kb + b] : 0.f;
}

}  // namespace

struct CublasLtFp8Gemm::Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t w = nullptr, x = nullptr, out = nullptr;
  cublasLtMatmulAlgo_t algo{};
  bool found = false;
  std::string note;
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
  GOSSAMER_CUDA_CHECK(cudaMalloc(&scales_, kScaleWorkspaceFloats * sizeof(float)));
}

CublasLtFp8Gemm::~CublasLtFp8Gemm() {
  plans_.clear();
  if (scales_) cudaFree(scales_);
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
  const cublasOperation_t transpose = CUBLAS_OP_T, no_transpose = CUBLAS_OP_N;
  GOSSAMER_CUBLASLT_CHECK(
      cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_TRANSA, &transpose, sizeof transpose));
  GOSSAMER_CUBLASLT_CHECK(
      cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_TRANSB, &no_transpose, sizeof no_transpose));
  const int32_t blocks = CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F, rows = CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
  GOSSAMER_CUBLASLT_CHECK(
      cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &blocks, sizeof blocks));
  GOSSAMER_CUBLASLT_CHECK(
      cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &rows, sizeof rows));
  // Scale pointers set before the heuristic (placeholders in the workspace; launch() sets the real ones).
  const void* placeholder = scales_;
  GOSSAMER_CUBLASLT_CHECK(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &placeholder,
                                                         sizeof placeholder));
  GOSSAMER_CUBLASLT_CHECK(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &placeholder,
                                                         sizeof placeholder));
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
  plan.note = plan.found ? (p.bias ? "bias epilogue" : "no bias")
                         : "no algorithm (heuristic status " + std::to_string(static_cast<int>(status)) + ", " +
                               std::to_string(count) + " found)";
  return plans_.emplace(shape, std::move(made)).first->second.get();
}

CublasLtFp8Gemm::Plan* CublasLtFp8Gemm::usable_plan(const GemmFp8Params& p) {
  if (p.b_tiled || p.grouped.on() || p.a_row_index || p.epilogue != GemmEpilogue::kBias || p.M <= 0) return nullptr;
  if (p.K % 16 != 0 || p.lda % 16 != 0 || p.ldc % 8 != 0 || p.N % 8 != 0 || p.M % 4 != 0) return nullptr;
  if (scale_layout(p).total > kScaleWorkspaceFloats) return nullptr;
  Plan* made = plan(p);
  return made->found ? made : nullptr;
}

bool CublasLtFp8Gemm::supports(const GemmFp8Params& p) {
  return usable_plan(p) != nullptr;
}

std::string CublasLtFp8Gemm::note(const GemmFp8Params& p) {
  if (usable_plan(p)) return plan(p)->note;
  const bool planned = plans_.count(Shape{p.M, p.N, p.K, p.lda, p.ldc, p.bias != nullptr}) > 0;
  return planned ? plan(p)->note : "unsupported arguments";
}

bool CublasLtFp8Gemm::launch(const GemmFp8Params& p, cudaStream_t stream) {
  Plan* found = usable_plan(p);
  if (!found) return false;
  Plan& plan = *found;
  const ScaleLayout l = scale_layout(p);
  const int threads = 256;
  const int64_t work = l.x_floats + l.nb * l.kb4;
  restage_scales_kernel<<<static_cast<unsigned>(ceil_div<int64_t>(work, threads)), threads, 0, stream>>>(
      p.a_scales, p.b_scales, scales_, p.M, static_cast<int>(l.kb), static_cast<int>(l.nb), static_cast<int>(l.kb4),
      l.w_offset);
  GOSSAMER_CUDA_CHECK_LAUNCH();
  const void* w_scales = scales_ + l.w_offset;
  const void* x_scales = scales_;
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
