#include "model/safetensors_writer.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"

namespace gossamer::model {

void SafetensorsWriter::add(const std::string& name, DType dtype, const Shape& shape, Producer producer) {
  tensors_.push_back(Pending{name, dtype, shape, std::move(producer)});
}

void SafetensorsWriter::add(const std::string& name, DType dtype, const Shape& shape, std::span<const uint8_t> bytes) {
  GOSSAMER_CHECK(static_cast<int64_t>(bytes.size()) == shape.num_elements() * size_of(dtype), "tensor '", name,
                 "': ", bytes.size(), " bytes do not match shape ", shape.to_string());
  std::vector<uint8_t> copy(bytes.begin(), bytes.end());
  add(name, dtype, shape, [copy = std::move(copy)](std::vector<uint8_t>& out) { out = copy; });
}

uint64_t SafetensorsWriter::total_bytes() const {
  uint64_t total = 0;
  for (const Pending& tensor : tensors_) total += tensor.num_bytes();
  return total;
}

void SafetensorsWriter::write_subset(const std::string& path, const std::vector<const Pending*>& tensors) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  header["__metadata__"] = {{"format", "pt"}};
  uint64_t offset = 0;
  std::vector<uint64_t> offsets;
  for (const Pending* tensor : tensors) {
    std::vector<int64_t> dims(tensor->shape.dims.begin(), tensor->shape.dims.begin() + tensor->shape.rank);
    const uint64_t end = offset + tensor->num_bytes();
    header[tensor->name] = {
        {"dtype", std::string(safetensors_name(tensor->dtype))}, {"shape", dims}, {"data_offsets", {offset, end}}};
    offsets.push_back(offset);
    offset = (end + 7) / 8 * 8;  // keep every tensor 8-byte aligned
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  GOSSAMER_CHECK(out.good(), "cannot write '", path, "'");
  const uint64_t header_size = text.size();
  out.write(reinterpret_cast<const char*>(&header_size), 8);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  uint64_t written = 0;
  static const char kZeros[8] = {};
  std::vector<uint8_t> bytes;
  for (size_t i = 0; i < tensors.size(); ++i) {
    bytes.assign(tensors[i]->num_bytes(), 0);
    tensors[i]->producer(bytes);
    GOSSAMER_ASSERT(bytes.size() == tensors[i]->num_bytes(), "producer of '", tensors[i]->name, "' changed the size");
    out.write(kZeros, static_cast<std::streamsize>(offsets[i] - written));
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    written = offsets[i] + bytes.size();
  }
  GOSSAMER_CHECK(out.good(), "failed writing '", path, "'");
}

void SafetensorsWriter::write_file(const std::string& path) const {
  std::vector<const Pending*> all;
  for (const Pending& tensor : tensors_) all.push_back(&tensor);
  write_subset(path, all);
}

void SafetensorsWriter::write_sharded(const std::string& dir, int num_shards) const {
  GOSSAMER_CHECK(num_shards >= 1, "need at least one shard");
  const uint64_t per_shard =
      (total_bytes() + static_cast<uint64_t>(num_shards) - 1) / static_cast<uint64_t>(num_shards);
  std::vector<std::vector<const Pending*>> shards(static_cast<size_t>(num_shards));
  uint64_t filled = 0;
  size_t shard = 0;
  for (const Pending& tensor : tensors_) {
    if (filled >= per_shard * (shard + 1) && shard + 1 < shards.size()) ++shard;
    shards[shard].push_back(&tensor);
    filled += tensor.num_bytes();
  }
  nlohmann::ordered_json weight_map = nlohmann::ordered_json::object();
  for (size_t i = 0; i < shards.size(); ++i) {
    char name[64];
    std::snprintf(name, sizeof(name), "model-%05zu-of-%05d.safetensors", i + 1, num_shards);
    write_subset((std::filesystem::path(dir) / name).string(), shards[i]);
    for (const Pending* tensor : shards[i]) weight_map[tensor->name] = name;
  }
  nlohmann::ordered_json index = {{"metadata", {{"total_size", total_bytes()}}}, {"weight_map", weight_map}};
  std::ofstream out((std::filesystem::path(dir) / "model.safetensors.index.json").string());
  out << index.dump(2) << "\n";
  GOSSAMER_CHECK(out.good(), "cannot write the index in '", dir, "'");
}

}  // namespace gossamer::model
