#include "model/safetensors.h"

#include <cstring>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>

#include "core/error.h"

namespace gossamer::model {

namespace {

using nlohmann::json;

constexpr uint64_t kMaxHeaderBytes = 256ull << 20;

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

SafetensorsEntry parse_entry(const std::string& name, const json& value, const std::string& file, uint64_t data_size) {
  GOSSAMER_CHECK(value.is_object(), file, ": header entry for tensor '", name, "' is not an object");
  SafetensorsEntry entry;
  entry.name = name;
  const auto dtype = value.find("dtype");
  GOSSAMER_CHECK(dtype != value.end() && dtype->is_string(), file, ": tensor '", name, "' has no dtype");
  try {
    entry.dtype = dtype_from_safetensors(dtype->get<std::string>());
  } catch (const Error& error) {
    GOSSAMER_THROW(file, ": tensor '", name, "': ", error.what());
  }
  const auto shape = value.find("shape");
  GOSSAMER_CHECK(shape != value.end() && shape->is_array() && shape->size() <= static_cast<size_t>(kMaxRank), file,
                 ": tensor '", name, "' has no valid shape");
  uint64_t num_elements = 1;
  for (const json& dim : *shape) {
    GOSSAMER_CHECK(dim.is_number_unsigned(), file, ": tensor '", name, "' has a bad dimension ", dim.dump());
    const uint64_t size = dim.get<uint64_t>();
    GOSSAMER_CHECK(size == 0 || num_elements <= std::numeric_limits<uint64_t>::max() / (size * 8), file, ": tensor '",
                   name, "' is too large");
    num_elements *= size;
    entry.shape.dims[static_cast<size_t>(entry.shape.rank++)] = static_cast<int64_t>(size);
  }
  const auto offsets = value.find("data_offsets");
  GOSSAMER_CHECK(offsets != value.end() && offsets->is_array() && offsets->size() == 2 &&
                     (*offsets)[0].is_number_unsigned() && (*offsets)[1].is_number_unsigned(),
                 file, ": tensor '", name, "' has no valid data_offsets");
  entry.begin = (*offsets)[0].get<uint64_t>();
  entry.end = (*offsets)[1].get<uint64_t>();
  GOSSAMER_CHECK(entry.begin <= entry.end && entry.end <= data_size, file, ": tensor '", name, "' data_offsets [",
                 entry.begin, ", ", entry.end, ") lie outside the data section (", data_size,
                 " bytes): the file is truncated or corrupt");
  const uint64_t expected = num_elements * static_cast<uint64_t>(size_of(entry.dtype));
  GOSSAMER_CHECK(entry.end - entry.begin == expected, file, ": tensor '", name, "' holds ", entry.end - entry.begin,
                 " bytes but its shape ", entry.shape.to_string(), " of ", name_of(entry.dtype), " needs ", expected);
  return entry;
}

}  // namespace

SafetensorsArchive SafetensorsArchive::open(const std::string& path) {
  namespace fs = std::filesystem;
  SafetensorsArchive archive;
  archive.path_ = path;
  if (ends_with(path, ".index.json")) {
    json index;
    try {
      index = json::parse(read_text_file(path));
    } catch (const json::exception& error) {
      GOSSAMER_THROW(path, ": invalid index JSON: ", error.what());
    }
    const auto map = index.find("weight_map");
    GOSSAMER_CHECK(map != index.end() && map->is_object(), path, ": index has no 'weight_map' object");
    std::map<std::string, std::map<std::string, std::string>> by_file;  // shard → {tensor: shard}
    for (const auto& [name, file] : map->items()) {
      GOSSAMER_CHECK(file.is_string(), path, ": weight_map entry for '", name, "' is not a file name");
      const std::string shard = file.get<std::string>();
      GOSSAMER_CHECK(shard.find('/') == std::string::npos && shard.find("..") == std::string::npos, path,
                     ": weight_map entry for '", name, "' names an unsafe path '", shard, "'");
      by_file[shard][name] = shard;
    }
    const fs::path dir = fs::path(path).parent_path();
    for (const auto& [shard, names] : by_file) archive.add_file((dir / shard).string(), &names);
  } else {
    archive.add_file(path, nullptr);
  }
  return archive;
}

void SafetensorsArchive::add_file(const std::string& file_path,
                                  const std::map<std::string, std::string>* expected_names) {
  auto file = std::make_unique<MappedFile>(file_path);
  const auto bytes = file->bytes();
  GOSSAMER_CHECK(bytes.size() >= 8, file_path, ": file is too short to be safetensors (", bytes.size(), " bytes)");
  uint64_t header_size = 0;
  std::memcpy(&header_size, bytes.data(), 8);  // little-endian on every platform we build for
  GOSSAMER_CHECK(header_size <= kMaxHeaderBytes && header_size <= bytes.size() - 8, file_path, ": header length ",
                 header_size, " exceeds the file (", bytes.size(), " bytes): truncated or not safetensors");
  json header;
  try {
    header = json::parse(reinterpret_cast<const char*>(bytes.data() + 8),
                         reinterpret_cast<const char*>(bytes.data() + 8 + header_size));
  } catch (const json::exception& error) {
    GOSSAMER_THROW(file_path, ": invalid header JSON: ", error.what());
  }
  GOSSAMER_CHECK(header.is_object(), file_path, ": header is not a JSON object");
  const uint64_t data_start = 8 + header_size;
  const uint64_t data_size = bytes.size() - data_start;
  const int file_index = static_cast<int>(files_.size());
  for (const auto& [name, value] : header.items()) {
    if (name == "__metadata__") continue;
    SafetensorsEntry entry = parse_entry(name, value, file_path, data_size);
    entry.file_index = file_index;
    GOSSAMER_CHECK(!entries_.count(name), file_path, ": tensor '", name, "' appears in more than one shard");
    if (expected_names != nullptr) {
      GOSSAMER_CHECK(expected_names->count(name), file_path, ": tensor '", name,
                     "' is not listed for this shard in the index");
    }
    entries_.emplace(name, std::move(entry));
  }
  if (expected_names != nullptr) {
    for (const auto& [name, shard] : *expected_names) {
      GOSSAMER_CHECK(entries_.count(name), file_path, ": the index lists tensor '", name,
                     "' in this shard but the shard does not contain it");
    }
  }
  files_.push_back(std::move(file));
  data_starts_.push_back(data_start);
}

const SafetensorsEntry& SafetensorsArchive::entry(const std::string& name) const {
  const auto found = entries_.find(name);
  GOSSAMER_CHECK(found != entries_.end(), path_, ": missing tensor '", name, "'");
  return found->second;
}

TensorView SafetensorsArchive::tensor(const std::string& name) const {
  const SafetensorsEntry& e = entry(name);
  const auto file = static_cast<size_t>(e.file_index);
  TensorView view;
  view.data = const_cast<uint8_t*>(files_[file]->bytes().data() + data_starts_[file] + e.begin);
  view.dtype = e.dtype;
  view.shape = e.shape;
  view.device = Device::kCpu;
  return view;
}

std::string SafetensorsArchive::location(const std::string& name) const {
  return files_[static_cast<size_t>(entry(name).file_index)]->path();
}

std::vector<std::string> SafetensorsArchive::names() const {
  std::vector<std::string> result;
  result.reserve(entries_.size());
  for (const auto& [name, entry] : entries_) result.push_back(name);
  return result;
}

}  // namespace gossamer::model
