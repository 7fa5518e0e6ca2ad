// Shared by the tokenizer tests: one Tokenizer per test binary and small file helpers.
#pragma once

#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "text/tokenizer.h"

namespace gossamer::text::testing {

inline const Tokenizer& test_tokenizer() {
  static const std::shared_ptr<const Tokenizer> tokenizer = Tokenizer::load_default();
  return *tokenizer;
}

inline std::string read_file(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw std::runtime_error("cannot read " + path);
  std::stringstream buffer;
  buffer << file.rdbuf();
  return buffer.str();
}

inline std::string tiktoken_json_path() {
  return std::string(GOSSAMER_SOURCE_DIR) + "/node_modules/tiktoken/encoders/o200k_base.json";
}

}  // namespace gossamer::text::testing
