#include <cstring>

#include "kernels/fp8_tiled.h"

namespace gossamer::kernels {

void fp8_to_tiled_cpu(const uint8_t* src, uint8_t* dst, int groups, int n, int k) {
  const int64_t group_bytes = fp8_tiled_group_bytes(n, k), kp = fp8_tiled_pad(k);
  std::memset(dst, 0, static_cast<size_t>(group_bytes * groups));
  for (int64_t g = 0; g < groups; ++g) {
    for (int64_t r = 0; r < n; ++r) {
      const uint8_t* row = src + (g * n + r) * k;
      uint8_t* out = dst + g * group_bytes;
      for (int64_t c0 = 0; c0 < k; c0 += 64) {  // one tile row at a time: 64 contiguous bytes
        const int64_t width = k - c0 < 64 ? k - c0 : 64;
        std::memcpy(out + fp8_tiled_offset(r, c0, kp), row + c0, static_cast<size_t>(width));
      }
    }
  }
}

void fp8_from_tiled_cpu(const uint8_t* src, uint8_t* dst, int groups, int n, int k) {
  const int64_t group_bytes = fp8_tiled_group_bytes(n, k), kp = fp8_tiled_pad(k);
  for (int64_t g = 0; g < groups; ++g) {
    for (int64_t r = 0; r < n; ++r) {
      for (int64_t c0 = 0; c0 < k; c0 += 64) {
        const int64_t width = k - c0 < 64 ? k - c0 : 64;
        std::memcpy(dst + (g * n + r) * k + c0, src + g * group_bytes + fp8_tiled_offset(r, c0, kp),
                    static_cast<size_t>(width));
      }
    }
  }
}

}  // namespace gossamer::kernels
