// Owning device (cudaMalloc) and pinned host (cudaMallocHost) memory, RAII, move-only: the one set of
// buffers for the cuda backend, the GPU tests and the kernel benchmarks.
//
// Contract: allocation failures throw gossamer::Error with the size asked for; DeviceBuffer::ensure()
// grows a buffer (contents lost) only when it is too small, so the hot path allocates nothing once sizes
// settle. DeviceArray<T> is a DeviceBuffer of n elements of T with host copies in and out (tests and
// benches); its download() synchronises the device first.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <utility>
#include <vector>

#include "core/cuda/check.h"

namespace gossamer::cuda {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes) { ensure(bytes); }
  ~DeviceBuffer() { release(); }
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}
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
  size_t bytes() const { return bytes_; }

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

template <typename T>
class DeviceArray {
 public:
  DeviceArray() = default;
  explicit DeviceArray(size_t n) : buffer_(n * sizeof(T)), n_(n) {}
  explicit DeviceArray(const std::vector<T>& host) : DeviceArray(host.size()) { upload(host); }
  T* get() const { return buffer_.get<T>(); }
  size_t size() const { return n_; }
  // Complete on return (the device synchronised after the copy), so work on any stream, non-blocking
  // streams included, sees the bytes.
  void upload(const std::vector<T>& host) {
    GOSSAMER_CUDA_CHECK(cudaMemcpy(get(), host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
    GOSSAMER_CUDA_CHECK(cudaDeviceSynchronize());
  }
  std::vector<T> download() const {
    std::vector<T> host(n_);
    GOSSAMER_CUDA_CHECK(cudaDeviceSynchronize());
    GOSSAMER_CUDA_CHECK(cudaMemcpy(host.data(), get(), n_ * sizeof(T), cudaMemcpyDeviceToHost));
    return host;
  }
  // All bytes 0xFF: NaN in bf16, fp32 and fp8 e4m3; −1 in integers. Complete on return: cudaMemset runs
  // on the legacy stream, which a non-blocking stream's later kernel does not wait for (a test that poisoned
  // and then launched on one read its own result overwritten, 2026-12-01).
  void poison() {
    if (n_ == 0) return;
    GOSSAMER_CUDA_CHECK(cudaMemset(get(), 0xFF, n_ * sizeof(T)));
    GOSSAMER_CUDA_CHECK(cudaDeviceSynchronize());
  }

 private:
  DeviceBuffer buffer_;
  size_t n_ = 0;
};

}  // namespace gossamer::cuda
