#include "core/npy.h"

#include <cstring>
#include <fstream>

#include "core/error.h"
#include "core/mapped_file.h"

namespace gossamer {

void write_npy_f32(const std::string& path, const std::vector<int64_t>& shape, const float* data) {
  std::string dims;
  int64_t count = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    dims += (i ? ", " : "") + std::to_string(shape[i]);
    count *= shape[i];
  }
  if (shape.size() == 1) dims += ",";  // Python tuple syntax: (5,)
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + "), }";
  const size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  GOSSAMER_CHECK(out.good(), "cannot write '", path, "'");
  const char magic[] = {'\x93', 'N', 'U', 'M', 'P', 'Y', 1, 0};
  out.write(magic, 8);
  const uint16_t header_len = static_cast<uint16_t>(header.size());
  out.write(reinterpret_cast<const char*>(&header_len), 2);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(count * 4));
  GOSSAMER_CHECK(out.good(), "failed writing '", path, "'");
}

NpyArray read_npy_f32(const std::string& path) {
  MappedFile file(path);
  const auto bytes = file.bytes();
  GOSSAMER_CHECK(bytes.size() >= 10 && std::memcmp(bytes.data(), "\x93NUMPY", 6) == 0, path, ": not a .npy file");
  const int major = bytes[6];
  size_t header_len = 0, offset = 0;
  if (major == 1) {
    header_len = bytes[8] | (bytes[9] << 8);
    offset = 10;
  } else {
    GOSSAMER_CHECK(bytes.size() >= 12, path, ": truncated .npy header");
    header_len = bytes[8] | (bytes[9] << 8) | (bytes[10] << 16) | (static_cast<size_t>(bytes[11]) << 24);
    offset = 12;
  }
  GOSSAMER_CHECK(offset + header_len <= bytes.size(), path, ": truncated .npy header");
  const std::string header(reinterpret_cast<const char*>(bytes.data() + offset), header_len);
  GOSSAMER_CHECK(header.find("'<f4'") != std::string::npos, path, ": only little-endian float32 is supported");
  GOSSAMER_CHECK(header.find("'fortran_order': False") != std::string::npos, path, ": Fortran order not supported");
  const size_t shape_key = header.find("'shape':");
  const size_t open = header.find('(', shape_key), close = header.find(')', open);
  GOSSAMER_CHECK(shape_key != std::string::npos && open != std::string::npos && close != std::string::npos, path,
                 ": no shape in the .npy header");
  NpyArray array;
  int64_t count = 1;
  for (size_t i = open + 1; i < close;) {
    if (header[i] < '0' || header[i] > '9') {
      ++i;
      continue;
    }
    int64_t dim = 0;
    for (; i < close && header[i] >= '0' && header[i] <= '9'; ++i) dim = dim * 10 + (header[i] - '0');
    array.shape.push_back(dim);
    count *= dim;
  }
  GOSSAMER_CHECK(offset + header_len + static_cast<size_t>(count) * 4 <= bytes.size(), path, ": truncated data");
  array.data.resize(static_cast<size_t>(count));
  std::memcpy(array.data.data(), bytes.data() + offset + header_len, static_cast<size_t>(count) * 4);
  return array;
}

}  // namespace gossamer
