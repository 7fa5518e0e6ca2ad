#include "core/dtype.h"
#include "kernels/random_fill.h"

namespace gossamer::kernels {

void random_fill_cpu(const RandomFillParams& p) {
  for (int64_t i = 0; i < p.count; ++i) {
    const float v = random_fill_value(p, p.first + i);
    switch (p.type) {
      case RandomFillType::kF32: static_cast<float*>(p.out)[i] = v; break;
      case RandomFillType::kBf16: static_cast<uint16_t*>(p.out)[i] = float_to_bf16(v); break;
      case RandomFillType::kFp8E4M3: static_cast<uint8_t*>(p.out)[i] = float_to_fp8e4m3(v * p.inv_scale); break;
      case RandomFillType::kU8: static_cast<uint8_t*>(p.out)[i] = random_fill_byte(v); break;
    }
  }
}

}  // namespace gossamer::kernels
