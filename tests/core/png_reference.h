// Runs tests/core/png_reference.mjs: node's built-in zlib as an independent reader of the PNGs we write.
// Tests call GOSSAMER_REQUIRE_NODE() first: without `node` on PATH they skip with a visible message.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace gossamer::testing {

inline bool node_available() {
  return std::system("node --version > /dev/null 2>&1") == 0;
}

#define GOSSAMER_REQUIRE_NODE()                                                                                  \
  do {                                                                                                           \
    if (!::gossamer::testing::node_available()) {                                                                \
      GTEST_SKIP() << "node is not on PATH (scripts/setup.sh installs it): PNG output not checked against zlib"; \
    }                                                                                                            \
  } while (0)

// A fresh scratch directory per test (CTest runs tests in parallel), removed with the object.
class ScratchDir {
 public:
  ScratchDir() {
    const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::temp_directory_path() / ("gossamer_" + std::string(test->test_suite_name()) + "_" +
                                                      test->name() + "_" + std::to_string(::getpid()));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

inline std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

// Runs the script with `arguments`; the parsed JSON line it prints (null when it printed none).
inline nlohmann::json run_png_reference(const std::string& arguments) {
  const std::string script = std::string(GOSSAMER_SOURCE_DIR) + "/tests/core/png_reference.mjs";
  const std::string command = "node '" + script + "' " + arguments + " 2>&1";
  std::string output;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return nullptr;
  std::array<char, 4096> buffer{};
  size_t read = 0;
  while ((read = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) output.append(buffer.data(), read);
  const int status = ::pclose(pipe);
  const nlohmann::json parsed = nlohmann::json::parse(output, nullptr, /*allow_exceptions=*/false);
  if (status != 0 || parsed.is_discarded()) {
    ADD_FAILURE() << command << " failed (status " << status << "):\n" << output;
    return nullptr;
  }
  return parsed;
}

struct DecodedPng {
  nlohmann::json report;        // what the script found: ok, problems, chunks, blocks, largest_block, ...
  std::vector<uint8_t> pixels;  // RGB, as node's zlib inflated them
};

// Decodes `png_path` with node; the pixels go through a file next to it.
inline DecodedPng decode_png_with_node(const std::string& png_path) {
  DecodedPng decoded;
  const std::string pixels_path = png_path + ".rgb";
  decoded.report = run_png_reference("decode '" + png_path + "' '" + pixels_path + "'");
  decoded.pixels = read_bytes(pixels_path);
  return decoded;
}

}  // namespace gossamer::testing
