#include "harmony_test_util.h"

#include <cstdio>
#include <cstdlib>
#include <string>

namespace gossamer::text::harmony::test_support {

bool running_under_ci() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && std::string(ci) == "true";
}

std::shared_ptr<const Tokenizer> real_tokenizer() {
  static const std::shared_ptr<const Tokenizer> tokenizer = [] {
    try {
      return Tokenizer::load_default();
    } catch (const std::exception& error) {
      std::fprintf(stderr, "harmony tests: real o200k_harmony tokenizer unavailable (%s)\n", error.what());
      return std::shared_ptr<const Tokenizer>();
    }
  }();
  return tokenizer;
}

}  // namespace gossamer::text::harmony::test_support
