#include "core/tensor.h"

namespace gossamer {

Shape::Shape(std::initializer_list<int64_t> values) {
  GOSSAMER_ASSERT(values.size() <= kMaxRank, "rank ", values.size(), " exceeds ", kMaxRank);
  for (int64_t value : values) dims[static_cast<size_t>(rank++)] = value;
}

int64_t Shape::num_elements() const {
  int64_t count = 1;
  for (int axis = 0; axis < rank; ++axis) count *= dims[static_cast<size_t>(axis)];
  return count;
}

bool Shape::operator==(const Shape& other) const {
  if (rank != other.rank) return false;
  for (int axis = 0; axis < rank; ++axis) {
    if (dims[static_cast<size_t>(axis)] != other.dims[static_cast<size_t>(axis)]) return false;
  }
  return true;
}

std::string Shape::to_string() const {
  std::string text = "[";
  for (int axis = 0; axis < rank; ++axis) {
    if (axis) text += ", ";
    text += std::to_string(dims[static_cast<size_t>(axis)]);
  }
  return text + "]";
}

}  // namespace gossamer
