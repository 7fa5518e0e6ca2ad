#include "core/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>

#include "core/error.h"

namespace gossamer {

MappedFile::MappedFile(const std::string& path) : path_(path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  GOSSAMER_CHECK(fd >= 0, "cannot open '", path, "': ", std::strerror(errno));
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    const int saved = errno;
    ::close(fd);
    GOSSAMER_THROW("cannot stat '", path, "': ", std::strerror(saved));
  }
  size_ = static_cast<size_t>(info.st_size);
  if (size_ > 0) {
    void* mapping = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    const int saved = errno;
    ::close(fd);
    GOSSAMER_CHECK(mapping != MAP_FAILED, "cannot map '", path, "': ", std::strerror(saved));
    data_ = static_cast<const uint8_t*>(mapping);
  } else {
    ::close(fd);
  }
}

MappedFile::~MappedFile() {
  release();
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : path_(std::move(other.path_)), data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    release();
    path_ = std::move(other.path_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void MappedFile::release() {
  if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
  data_ = nullptr;
  size_ = 0;
}

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  GOSSAMER_CHECK(in.good(), "cannot open '", path, "': ", std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  GOSSAMER_CHECK(!in.bad(), "cannot read '", path, "'");
  return text.str();
}

}  // namespace gossamer
