#include "kernels/cuda_utils.h"
#include "kernels/embedding.h"

namespace gossamer::kernels {
namespace {

__global__ void embedding_kernel(EmbeddingParams p) {
  pdl_wait();
  pdl_trigger();
  const int64_t t = blockIdx.x;
  const int vi = blockIdx.y * blockDim.x + threadIdx.x;
  if (vi >= p.hidden / 8) return;
  const int64_t row = int64_t{p.ids[t]} - p.vocab_begin;  // 64-bit: no overflow for any id
  uint4 v = make_uint4(0, 0, 0, 0);
  if (row >= 0 && row < p.vocab) v = reinterpret_cast<const uint4*>(p.table + row * p.hidden)[vi];
  reinterpret_cast<uint4*>(p.out + t * p.hidden)[vi] = v;
}

}  // namespace

void launch_embedding(const EmbeddingParams& p, cudaStream_t stream) {
  GOSSAMER_CHECK(p.hidden % 8 == 0, "embedding: hidden must be a multiple of 8");
  GOSSAMER_CHECK(p.vocab >= 0 && p.vocab_begin >= 0, "embedding: negative table rows or slice start");
  if (p.num_tokens == 0) return;
  const int threads = 128;
  const dim3 grid(p.num_tokens, ceil_div(p.hidden / 8, threads));  // tokens on x: y is limited to 65,535
  launch_pdl(embedding_kernel, grid, dim3(threads), 0, stream, p);
  GOSSAMER_CUDA_CHECK_LAUNCH();
}

}  // namespace gossamer::kernels
