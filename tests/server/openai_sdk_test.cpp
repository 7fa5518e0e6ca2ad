// Runs the official `openai` npm client (tests/server/openai_sdk_test.mjs) against `gossamer serve`:
// on the random model that used to be the embedded default (`--load-format dummy --preset embedded`: an
// adversary whose output is noise; shapes, streaming with usage, errors, auth) and on the scripted fake
// backend (tool calls and reasoning through the SDK). The trained embedded default has its own tests
// (tiny_model_e2e_test.cpp).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "scripted_backend.h"
#include "server_process.h"

namespace gossamer::server::testing {
namespace {

// Runs the script with the server's URL; returns (exit code, output).
std::pair<int, std::string> run_sdk_script(int port, const std::string& api_key, const std::string& mode) {
  return run_node_script("openai_sdk_test.mjs", port, "GOSSAMER_API_KEY=" + api_key + " GOSSAMER_MODE=" + mode);
}

void require_node_and_sdk() {
  const std::filesystem::path sdk =
      std::filesystem::path(GOSSAMER_SOURCE_DIR) / "node_modules" / "openai" / "package.json";
  ASSERT_TRUE(std::filesystem::exists(sdk)) << "the openai npm package is missing: run scripts/setup.sh";
  ASSERT_EQ(std::system("node --version > /dev/null 2>&1"), 0) << "node is missing: run scripts/setup.sh";
}

TEST(OpenAiSdk, RandomEmbeddedModel) {
  require_node_and_sdk();
  ServerProcess server({"--load-format", "dummy", "--preset", "embedded", "--api-key", "sk-gossamer-test",
                        "--max-model-len", "2048", "--kv-cache-memory-bytes", "268435456"});
  const auto [code, output] = run_sdk_script(server.port(), "sk-gossamer-test", "embedded");
  EXPECT_EQ(code, 0) << output << "\n--- server log ---\n" << server.log();
  EXPECT_NE(output.find("checks passed (embedded)"), std::string::npos) << output;
}

TEST(ServerLoading, HealthAndRequestsAre503UntilTheModelIsReady) {
  // HTTP is up before the model: the test backend's load takes 4 s, so the probes below always run while
  // it loads (no race with a fast load), and the same request succeeds once /health says ready.
  ServerProcess server({"--test-backend", "fake", "--test-load-delay-ms", "4000"}, 120.0, /*wait_ready=*/false);
  const nlohmann::json request = {{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"max_tokens", 4}};
  const auto health = server.get("/health");
  EXPECT_EQ(health.status, 503) << health.body;
  EXPECT_EQ(nlohmann::json::parse(health.body)["error"]["type"], "unavailable_error");
  const auto chat = server.post("/v1/chat/completions", request);
  EXPECT_EQ(chat.status, 503) << chat.body;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (server.get("/health").status != 200 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(server.get("/health").status, 200);
  const auto ready = server.post("/v1/chat/completions", request);
  EXPECT_EQ(ready.status, 200) << ready.body;
}

TEST(OpenAiSdk, ScriptedToolCallsAndReasoning) {
  require_node_and_sdk();
  ServerProcess server(
      {"--test-backend", "fake", "--test-script", write_script_file(), "--api-key", "sk-gossamer-test"});
  const auto [code, output] = run_sdk_script(server.port(), "sk-gossamer-test", "scripted");
  EXPECT_EQ(code, 0) << output << "\n--- server log ---\n" << server.log();
}

}  // namespace
}  // namespace gossamer::server::testing
