// Runs tests/server/tiny_model_e2e_sdk.mjs (the official `openai` npm client) against `gossamer serve`
// with no model: the trained embedded default (models/tiny).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "server_process.h"

namespace gossamer::server::testing {
namespace {

TEST(TinyModelSdk, OpenAiClientThroughTheTrainedModel) {
  const std::filesystem::path source = GOSSAMER_SOURCE_DIR;
  ASSERT_TRUE(std::filesystem::exists(source / "node_modules" / "openai" / "package.json"))
      << "the openai npm package is missing: run scripts/setup.sh";
  ASSERT_EQ(std::system("node --version > /dev/null 2>&1"), 0) << "node is missing: run scripts/setup.sh";
  ServerProcess server({"--max-model-len", "2048"});
  const auto [code, output] = run_node_script("tiny_model_e2e_sdk.mjs", server.port());
  EXPECT_EQ(code, 0) << output << "\n--- server log ---\n" << server.log();
  EXPECT_NE(output.find("7/7 checks passed (tiny model)"), std::string::npos) << output;
}

}  // namespace
}  // namespace gossamer::server::testing
