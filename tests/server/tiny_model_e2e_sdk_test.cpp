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
  const std::string command = "cd '" + source.string() +
                              "' && GOSSAMER_BASE_URL=http://127.0.0.1:" + std::to_string(server.port()) +
                              "/v1 node tests/server/tiny_model_e2e_sdk.mjs 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) output.append(buffer, n);
  const int status = pclose(pipe);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << output << "\n--- server log ---\n" << server.log();
  EXPECT_NE(output.find("7/7 checks passed (tiny model)"), std::string::npos) << output;
}

}  // namespace
}  // namespace gossamer::server::testing
