// Memory-mapped reader for safetensors checkpoints: one file, or shards listed by a
// `*.safetensors.index.json` ({"weight_map": {tensor: file}}).
//
// Contract:
//  - open() validates every header completely before returning: 8-byte little-endian header length
//    within the file, header JSON well formed, every entry with a known dtype, non-negative shape and
//    data_offsets inside the file's data section whose length equals the shape's byte size. Any
//    violation throws gossamer::Error naming the file (and the tensor, when one is at fault).
//  - Views returned by tensor() point into the mappings and stay valid while the archive lives.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/mapped_file.h"
#include "core/tensor.h"
#include "model/tensor_source.h"

namespace gossamer::model {

struct SafetensorsEntry {
  std::string name;
  DType dtype = DType::kU8;
  Shape shape;
  uint64_t begin = 0;  // byte offset in the file's data section
  uint64_t end = 0;
  int file_index = 0;
};

class SafetensorsArchive final : public TensorSource {
 public:
  // `path` is a .safetensors file or a .safetensors.index.json listing shards beside it.
  static SafetensorsArchive open(const std::string& path);

  bool contains(const std::string& name) const override { return entries_.count(name) != 0; }
  const SafetensorsEntry& entry(const std::string& name) const;  // throws if absent
  TensorView tensor(const std::string& name) const override;     // CPU view into the mapping
  std::string location(const std::string& name) const override;  // the shard file holding it
  std::string description() const override { return path_; }
  std::vector<std::string> names() const;
  size_t size() const { return entries_.size(); }
  const std::string& path() const { return path_; }

 private:
  void add_file(const std::string& file_path, const std::map<std::string, std::string>* expected_names);
  std::string path_;
  std::vector<std::unique_ptr<MappedFile>> files_;
  std::vector<uint64_t> data_starts_;  // per file: offset of the data section
  std::map<std::string, SafetensorsEntry> entries_;
};

}  // namespace gossamer::model
