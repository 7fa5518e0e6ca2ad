#include "kernels/cuda_utils.h"
#include "kernels/vocab_shards.h"

namespace gossamer::kernels {
namespace {

// One thread per output element; rows on y (a decode batch), vocabulary on x.
__global__ void vocab_shards_kernel(VocabShardsParams p) {
  const int64_t v = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  const int64_t r = blockIdx.y;
  if (v >= p.vocab) return;
  const int64_t q = v / p.shard_rows, begin = q * p.shard_rows;
  const int64_t n = min(p.vocab, begin + p.shard_rows) - begin;
  p.out[r * p.vocab + v] = p.shards[q * p.rows * p.shard_rows + r * n + (v - begin)];
}

}  // namespace

void launch_vocab_shards(const VocabShardsParams& p, cudaStream_t stream) {
  GOSSAMER_CHECK(p.shard_rows > 0 && p.vocab > 0 && p.rows <= 65535, "vocab_shards: bad sizes");
  if (p.rows == 0) return;
  const int threads = 256;
  const dim3 grid(static_cast<unsigned>(ceil_div<int64_t>(p.vocab, threads)), p.rows);
  vocab_shards_kernel<<<grid, threads, 0, stream>>>(p);
  GOSSAMER_CUDA_CHECK_LAUNCH();
}

}  // namespace gossamer::kernels
