// `gossamer serve --device cuda` with data-parallel replicas (-dp 2) and replicas of tensor-parallel
// groups (-tp 2 -dp 2) on one GPU: every replica and rank colocated on GPU 0 (the hidden
// --test-colocate-gpus; ranks reduce through CUDA IPC), the trained tiny checkpoint in bf16. The same
// command line places replica r on GPUs [r·TP, (r+1)·TP) when that many are present (issue #20's runs).
// Checks: one request at a time, each replica answers exactly as one replica of the same layout does (the
// same model on the same single-request batches); concurrent requests all finish and reach both replicas.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "model/embedded_default.h"
#include "model/loader.h"
#include "server/server_process.h"

namespace gossamer::server {
namespace {

using Json = nlohmann::json;
using testing::ServerProcess;

Json chat(const std::string& question) {
  return testing::greedy_chat(question, 32);
}

Json answer(const ServerProcess& server, const Json& body) {
  return server.chat_completion(body);
}

// gossamer:generation_tokens_total of replica `engine` (its engine="<i>" sample), or -1.
double generated_by(const ServerProcess& server, int engine) {
  std::istringstream lines(server.get("/metrics").body);
  const std::string label = "engine=\"" + std::to_string(engine) + "\"";
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("gossamer:generation_tokens_total{", 0) == 0 && line.find(label) != std::string::npos)
      return std::stod(line.substr(line.rfind(' ') + 1));
  }
  return -1;
}

class CudaReplicasTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (model::resolve_device("auto") != "cuda")
      GTEST_SKIP() << "no CUDA GPU: serve --device cuda with data-parallel replicas not run";
  }
  // The layout's flags (GetParam(): "" or "-tp 2") over the common ones.
  std::vector<std::string> args(const std::string& extra) const {
    std::vector<std::string> all = {model::embedded_model_dir(), "--device", "cuda", "--weights", "bf16",
                                    "--max-model-len", "1024", "--max-num-seqs", "8", "--kv-cache-memory-bytes",
                                    "268435456", "--seed", "3", "--test-colocate-gpus",
                                    // no cache hits: every request a whole prefill, as in the other server
                                    "--no-enable-prefix-caching"};
    std::istringstream words(GetParam() + " " + extra);
    for (std::string word; words >> word;) all.push_back(word);
    return all;
  }
};

TEST_P(CudaReplicasTest, EachReplicaAnswersAsOneReplicaAndLoadReachesBoth) {
  ServerProcess one(args(""), 300.0);
  ServerProcess two(args("-dp 2"), 300.0);
  const std::vector<std::string> questions = {"What is the capital of France?", "Say hello.", "Count to three.",
                                              "Name a primary color."};
  // One at a time: the router gives each to an idle replica (ties: the lower index, then KV usage).
  for (const auto& question : questions) {
    const Json alone = answer(one, chat(question)), replica = answer(two, chat(question));
    EXPECT_EQ(replica["choices"][0]["message"], alone["choices"][0]["message"]) << question;
    EXPECT_EQ(replica["usage"]["completion_tokens"], alone["usage"]["completion_tokens"]) << question;
  }
  // Together: every request finishes, and both replicas generate.
  std::vector<Json> together(8);
  std::vector<std::thread> clients;
  for (size_t i = 0; i < together.size(); ++i)
    clients.emplace_back([&, i] { together[i] = answer(two, chat(questions[i % questions.size()])); });
  for (auto& client : clients) client.join();
  // The embedded model is trained: it may end its answer (stop) or run to max_tokens (length).
  for (const Json& reply : together) {
    const Json& reason = reply["choices"][0]["finish_reason"];
    EXPECT_TRUE(reason == "stop" || reason == "length") << reply;
    EXPECT_GT(reply["usage"]["completion_tokens"].get<int>(), 0) << reply;
  }
  EXPECT_GT(generated_by(two, 0), 0) << two.log();
  EXPECT_GT(generated_by(two, 1), 0) << "replica 1 got no work\n" << two.log();
  EXPECT_NE(two.log().find("2 replicas, every rank on GPU 0 (colocated)"), std::string::npos) << two.log();
}

INSTANTIATE_TEST_SUITE_P(Layouts, CudaReplicasTest, ::testing::Values("", "-tp 2"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param.empty() ? std::string("TP1") : std::string("TP2");
                         });

}  // namespace
}  // namespace gossamer::server
