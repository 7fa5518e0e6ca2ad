// Read-only memory-mapped file (RAII).
//
// Contract: the mapping lives as long as the MappedFile; spans taken from bytes() dangle after it is
// destroyed or moved from. Opening a missing or unreadable file throws gossamer::Error naming the path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace gossamer {

class MappedFile {
 public:
  MappedFile() = default;
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  void release();
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

// Reads a whole (small) file into a string; throws gossamer::Error naming the path on failure.
std::string read_text_file(const std::string& path);

}  // namespace gossamer
