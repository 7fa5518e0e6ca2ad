// Runs the client libraries gpt-oss users call (tests/server/client_libraries_test.mjs: `openai`, the Vercel
// AI SDK, LangChain, the OpenAI Agents SDK; versions pinned in package.json) against `gossamer serve` on
// the scripted fake backend: chat, streaming, tools and the Responses API through each library.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "scripted_backend.h"
#include "server_process.h"

namespace gossamer::server::testing {
namespace {

class ClientLibraries : public ::testing::TestWithParam<const char*> {
 protected:
  static void SetUpTestSuite() {
    server_ = std::make_unique<ServerProcess>(std::vector<std::string>{
        "--test-backend", "fake", "--test-script", write_script_file(), "--api-key", "sk-gossamer-test"});
  }
  static void TearDownTestSuite() { server_.reset(); }
  static inline std::unique_ptr<ServerProcess> server_;
};

// Runs the script for one library; returns (exit code, output).
std::pair<int, std::string> run_library(int port, const std::string& library) {
  return run_node_script("client_libraries_test.mjs", port,
                         "GOSSAMER_API_KEY=sk-gossamer-test GOSSAMER_LIBRARY=" + library);
}

TEST_P(ClientLibraries, ChatStreamingToolsAndResponses) {
  const std::filesystem::path modules = std::filesystem::path(GOSSAMER_SOURCE_DIR) / "node_modules";
  for (const char* package : {"openai", "ai", "@ai-sdk/openai", "@langchain/openai", "@openai/agents", "zod"}) {
    ASSERT_TRUE(std::filesystem::exists(modules / package / "package.json"))
        << "the npm package " << package << " is missing: run scripts/setup.sh";
  }
  ASSERT_EQ(std::system("node --version > /dev/null 2>&1"), 0) << "node is missing: run scripts/setup.sh";
  const auto [code, output] = run_library(server_->port(), GetParam());
  EXPECT_EQ(code, 0) << output << "\n--- server log (tail) ---\n"
                     << server_->log().substr(server_->log().size() > 4000 ? server_->log().size() - 4000 : 0);
  EXPECT_NE(output.find(std::string("checks passed (") + GetParam() + ")"), std::string::npos) << output;
}

INSTANTIATE_TEST_SUITE_P(Libraries, ClientLibraries, ::testing::Values("openai", "ai", "langchain", "agents"),
                         [](const auto& info) { return std::string(info.param); });

}  // namespace
}  // namespace gossamer::server::testing
