// A non-owning view of a dense, row-major tensor (pointer, shape, dtype, device).
//
// Contract: the view never owns memory; whoever made the pointer keeps it alive while views exist.
// Strides are in elements and default to contiguous row-major. Rank is at most kMaxRank.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "core/dtype.h"
#include "core/error.h"

namespace gossamer {

enum class Device : uint8_t { kCpu, kCuda };

inline constexpr int kMaxRank = 6;

struct Shape {
  std::array<int64_t, kMaxRank> dims{};
  int rank = 0;

  Shape() = default;
  Shape(std::initializer_list<int64_t> values);
  int64_t operator[](int axis) const { return dims[static_cast<size_t>(axis)]; }
  int64_t& operator[](int axis) { return dims[static_cast<size_t>(axis)]; }
  int64_t num_elements() const;
  bool operator==(const Shape& other) const;
  std::string to_string() const;  // "[2, 3, 4]"
};

struct TensorView {
  void* data = nullptr;
  DType dtype = DType::kF32;
  Shape shape;
  Device device = Device::kCpu;

  int64_t num_elements() const { return shape.num_elements(); }
  // Bytes of the packed data (fp4 packs two elements per byte).
  int64_t num_bytes() const { return num_elements() * bits_of(dtype) / 8; }

  template <typename T>
  T* as() const {
    return static_cast<T*>(data);
  }
};

}  // namespace gossamer
