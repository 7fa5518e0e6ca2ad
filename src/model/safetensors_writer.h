// Writes safetensors files (one file, or shards plus a `model.safetensors.index.json`).
//
// Contract: tensors are written in the order added with 8-byte aligned data offsets; the header is
// padded with spaces to a multiple of 8. Each tensor's bytes come from a producer called once, at write
// time, so that multi-GB checkpoints are streamed rather than held in memory.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace gossamer::model {

class SafetensorsWriter {
 public:
  // Fills `bytes` (already sized to the tensor's byte size).
  using Producer = std::function<void(std::vector<uint8_t>& bytes)>;

  void add(const std::string& name, DType dtype, const Shape& shape, Producer producer);
  void add(const std::string& name, DType dtype, const Shape& shape, std::span<const uint8_t> bytes);
  // Writes everything into one file.
  void write_file(const std::string& path) const;
  // Writes `num_shards` files named model-0000K-of-0000N.safetensors plus model.safetensors.index.json in dir.
  void write_sharded(const std::string& dir, int num_shards) const;
  uint64_t total_bytes() const;

 private:
  struct Pending {
    std::string name;
    DType dtype;
    Shape shape;
    Producer producer;
    uint64_t num_bytes() const { return static_cast<uint64_t>(shape.num_elements() * size_of(dtype)); }
  };
  static void write_subset(const std::string& path, const std::vector<const Pending*>& tensors);
  std::vector<Pending> tensors_;
};

}  // namespace gossamer::model
