// `gossamer serve -tp N` on the cpu backend's simulated ranks: the embedded default split over two
// ranks (EP over the same group) answers greedy completions exactly as the unsharded server does,
// sampling vocab-parallel, and its load summary states the layout.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "server_process.h"

namespace gossamer::server {
namespace {

using testing::ServerProcess;

std::string greedy_text(const ServerProcess& server, const std::string& prompt) {
  const auto response = server.post("/v1/completions",
                                    {{"prompt", prompt}, {"max_tokens", 12}, {"temperature", 0}, {"ignore_eos", true}});
  EXPECT_EQ(response.status, 200) << response.body;
  return nlohmann::json::parse(response.body)["choices"][0]["text"].get<std::string>();
}

TEST(ShardedServe, TensorAndExpertParallelServeTheUnshardedGreedyText) {
  const std::vector<std::string> common = {"--max-model-len", "512", "--seed", "3"};
  std::vector<std::string> sharded_args = common;
  sharded_args.insert(sharded_args.end(), {"-tp", "2", "--enable-expert-parallel"});
  ServerProcess unsharded(common);
  ServerProcess sharded(sharded_args);
  for (const std::string prompt : {"The capital of France is", "def fibonacci(n):"}) {
    EXPECT_EQ(greedy_text(sharded, prompt), greedy_text(unsharded, prompt)) << prompt;
  }
  const auto seeded = sharded.post(
      "/v1/completions", {{"prompt", "Once"}, {"max_tokens", 8}, {"temperature", 0.8}, {"top_p", 0.9}, {"seed", 11}});
  EXPECT_EQ(seeded.status, 200) << seeded.body;
  const auto again = sharded.post(
      "/v1/completions", {{"prompt", "Once"}, {"max_tokens", 8}, {"temperature", 0.8}, {"top_p", 0.9}, {"seed", 11}});
  EXPECT_EQ(nlohmann::json::parse(again.body)["choices"][0]["text"],
            nlohmann::json::parse(seeded.body)["choices"][0]["text"]);
  EXPECT_NE(sharded.log().find("model loaded: TP2 EP2 DP1 on cpu (2 simulated ranks)"), std::string::npos)
      << sharded.log();
}

}  // namespace
}  // namespace gossamer::server
