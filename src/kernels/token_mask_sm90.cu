// Token-mask application (token_mask.h): one thread per logit, grid-stride over the row's columns, one grid
// row (blockIdx.y) per batch row. The 32 lanes of a warp read the same mask word (one broadcast load) and
// write 32 consecutive logits (one coalesced store where tokens are refused).
#include <algorithm>

#include "kernels/cuda_utils.h"
#include "kernels/token_mask.h"

namespace gossamer::kernels {
namespace {

constexpr int kThreads = 256;

__global__ void token_mask_kernel(const TokenMaskParams p) {
  pdl_wait();
  const int32_t r = blockIdx.y;
  const int32_t m = p.mask_rows != nullptr ? p.mask_rows[r] : r;
  if (m < 0) return;
  const uint32_t* mask = p.masks + static_cast<int64_t>(m) * p.words;
  const int64_t base = static_cast<int64_t>(r) * p.vocab;
  for (int32_t c = blockIdx.x * kThreads + threadIdx.x; c < p.vocab; c += gridDim.x * kThreads) {
    const int32_t t = p.vocab_begin + c;
    const uint32_t word = __ldg(mask + t / 32);
    if (((word >> (t % 32)) & 1u) != 0) continue;
    if (p.logits != nullptr) {
      p.logits[base + c] = __int_as_float(0xff800000);  // -inf
    } else {
      p.logits_bf16[base + c] = 0xFF80;  // bf16 -inf
    }
  }
}

}  // namespace

void launch_token_mask(const TokenMaskParams& p, cudaStream_t stream) {
  GOSSAMER_CHECK(p.num_rows >= 0 && p.vocab >= 0 && p.vocab_begin >= 0 &&
                     int64_t{p.words} * 32 >= int64_t{p.vocab_begin} + p.vocab,
                 "token_mask: bad shape");
  if (p.num_rows == 0 || p.vocab == 0) return;
  GOSSAMER_CHECK((p.logits != nullptr) != (p.logits_bf16 != nullptr) && p.masks != nullptr, "token_mask: null pointer");
  GOSSAMER_CHECK(p.num_rows <= 65535, "token_mask: at most 65,535 rows per launch");
  // 201,088 logits per row: 64 blocks of 256 threads each walk ~12 elements.
  const int blocks_x = static_cast<int>(std::min<int64_t>(ceil_div<int64_t>(p.vocab, kThreads), 64));
  launch_pdl(token_mask_kernel, dim3(blocks_x, p.num_rows), dim3(kThreads), 0, stream, p);
}

}  // namespace gossamer::kernels
