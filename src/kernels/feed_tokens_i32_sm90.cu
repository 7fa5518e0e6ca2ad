#include "kernels/cuda_utils.h"
#include "kernels/feed_tokens.h"

namespace gossamer::kernels {
namespace {

__global__ void feed_tokens_kernel(FeedTokensParams p) {
  pdl_wait();  // NOTE: no pdl_trigger: the embedding behind it reads the ids only once they are all written
  const int32_t f = static_cast<int32_t>(blockIdx.x * blockDim.x + threadIdx.x);
  if (f < p.num_feeds) p.ids[p.feeds[2 * f]] = p.drawn[p.feeds[2 * f + 1]];
}

}  // namespace

void launch_feed_tokens(const FeedTokensParams& p, cudaStream_t stream) {
  if (p.num_feeds == 0) return;
  const int threads = 256;
  launch_pdl(feed_tokens_kernel, dim3(ceil_div(p.num_feeds, threads)), dim3(threads), 0, stream, p);
  GOSSAMER_CUDA_CHECK_LAUNCH();
}

}  // namespace gossamer::kernels
