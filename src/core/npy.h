// NumPy .npy files (format version 1.0), little-endian float32 / int32 only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gossamer {

// Writes `data` (row-major, product(shape) elements) as '<f4'.
void write_npy_f32(const std::string& path, const std::vector<int64_t>& shape, const float* data);

struct NpyArray {
  std::vector<int64_t> shape;
  std::vector<float> data;
};
// Reads a '<f4' C-order .npy file; throws gossamer::Error on anything else.
NpyArray read_npy_f32(const std::string& path);

}  // namespace gossamer
