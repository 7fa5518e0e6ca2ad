#include <cstdint>
#include <vector>

#include "core/error.h"
#include "kernels/gemv_fp8_rope.h"

namespace gossamer::kernels {

// The unfused chain the fused kernel must equal: the GEMV into a scratch qkv [M, N] bf16, then RoPE and the
// K/V writes over it.
void gemv_fp8_rope_cpu(const GemvFp8Params& gemv, const RopeParams& rope) {
  GOSSAMER_CHECK(gemv_fp8_rope_supported(gemv, rope), "gemv_fp8_rope_cpu: unsupported shape");
  std::vector<uint16_t> qkv(static_cast<size_t>(gemv.M) * gemv.N);
  GemvFp8Params g = gemv;
  g.out = qkv.data();
  g.ldc = gemv.N;
  gemv_fp8_cpu(g);
  RopeParams r = rope;
  r.qkv = qkv.data();
  r.qkv_stride = gemv.N;
  rope_cpu(r);
}

}  // namespace gossamer::kernels
