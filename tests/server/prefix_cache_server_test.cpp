// Prefix caching through HTTP: a repeated chat reports usage.prompt_tokens_details.cached_tokens and moves
// vLLM's prefix-cache counters in /metrics; --no-enable-prefix-caching turns both off.
#include <gtest/gtest.h>

#include <memory>
#include <regex>

#include "scripted_backend.h"
#include "server_process.h"

namespace gossamer::server::testing {
namespace {

using Json = nlohmann::json;

Json answer_chat() {
  return {{"model", "test-model"},
          {"messages", {{{"role", "user"}, {"content", "Please answer SCRIPTANSWER"}}}},
          {"max_tokens", 64}};
}

double counter(const std::string& metrics, const std::string& name) {
  const std::regex line(name + R"(_total\{[^}]*\} ([0-9.e+]+))");
  std::smatch match;
  if (!std::regex_search(metrics, match, line)) return -1.0;
  return std::stod(match[1].str());
}

TEST(PrefixCacheServer, RepeatedChatIsServedFromTheCache) {
  ServerProcess server(
      {"--test-backend", "fake", "--test-script", write_script_file(), "--served-model-name", "test-model"});
  const auto first = Json::parse(server.post("/v1/chat/completions", answer_chat()).body);
  const auto second = Json::parse(server.post("/v1/chat/completions", answer_chat()).body);
  EXPECT_EQ(first["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
  const int prompt_tokens = second["usage"]["prompt_tokens"];
  const int cached = second["usage"]["prompt_tokens_details"]["cached_tokens"];
  EXPECT_GT(cached, 0);
  EXPECT_LT(cached, prompt_tokens);
  EXPECT_EQ(cached % 16, 0) << "whole blocks of the default block size";
  EXPECT_EQ(first["choices"][0]["message"]["content"], second["choices"][0]["message"]["content"]);
  const std::string metrics = server.get("/metrics").body;
  EXPECT_EQ(counter(metrics, "vllm:prefix_cache_queries"), 2.0 * prompt_tokens);
  EXPECT_EQ(counter(metrics, "vllm:prefix_cache_hits"), cached);
  EXPECT_EQ(counter(metrics, "gossamer:prefix_cache_hits"), cached);
}

TEST(PrefixCacheServer, TheVllmFlagTurnsItOff) {
  ServerProcess server({"--test-backend", "fake", "--test-script", write_script_file(), "--served-model-name",
                        "test-model", "--no-enable-prefix-caching"});
  server.post("/v1/chat/completions", answer_chat());
  const auto second = Json::parse(server.post("/v1/chat/completions", answer_chat()).body);
  EXPECT_EQ(second["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
  EXPECT_EQ(counter(server.get("/metrics").body, "vllm:prefix_cache_hits"), 0.0);
}

}  // namespace
}  // namespace gossamer::server::testing
