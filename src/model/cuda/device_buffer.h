// Owning device (cudaMalloc) and pinned host (cudaMallocHost) buffers, RAII, move-only.
//
// Contract: allocation failures throw gossamer::Error with the size asked for; ensure() grows a buffer
// (contents lost) only when it is too small, so the hot path allocates nothing once sizes settle.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <utility>

#include "kernels/cuda_utils.h"

namespace gossamer::model::cuda {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes) { ensure(bytes); }
  ~DeviceBuffer() { release(); }
  DeviceBuffer(DeviceBuffer&& other) noexcept : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      release();
      data_ = std::exchange(other.data_, nullptr);
      bytes_ = std::exchange(other.bytes_, 0);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void ensure(size_t bytes) {
    if (bytes <= bytes_) return;
    release();
    const cudaError_t status = cudaMalloc(&data_, bytes);
    GOSSAMER_CHECK(status == cudaSuccess, "cudaMalloc of ", bytes, " bytes failed: ", cudaGetErrorString(status));
    bytes_ = bytes;
  }
  template <typename T = void>
  T* get() const {
    return static_cast<T*>(data_);
  }
  size_t bytes() const { return bytes_; }

 private:
  void release() {
    if (data_ != nullptr) cudaFree(data_);
    data_ = nullptr;
    bytes_ = 0;
  }
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  ~PinnedBuffer() {
    if (data_ != nullptr) cudaFreeHost(data_);
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  void ensure(size_t bytes) {
    if (bytes <= bytes_) return;
    if (data_ != nullptr) cudaFreeHost(data_);
    data_ = nullptr;
    const cudaError_t status = cudaMallocHost(&data_, bytes);
    GOSSAMER_CHECK(status == cudaSuccess, "cudaMallocHost of ", bytes, " bytes failed: ", cudaGetErrorString(status));
    bytes_ = bytes;
  }
  template <typename T = void>
  T* get() const {
    return static_cast<T*>(data_);
  }

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace gossamer::model::cuda
