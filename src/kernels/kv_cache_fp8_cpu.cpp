#include "kernels/kv_cache_fp8.h"

namespace gossamer::kernels {

void kv_fp8_quantize_rows_cpu(const uint16_t* rows, int64_t num_rows, int num_kv_heads, int head_dim,
                              const float* scales, uint8_t* codes) {
  for (int64_t r = 0; r < num_rows; ++r) {
    for (int h = 0; h < num_kv_heads; ++h) {
      const float scale = scales ? scales[h] : kKvFp8DefaultScale;
      const int64_t base = (r * num_kv_heads + h) * head_dim;
      for (int d = 0; d < head_dim; ++d) codes[base + d] = kv_fp8_quantize(bf16_to_float(rows[base + d]), scale);
    }
  }
}

}  // namespace gossamer::kernels
