// `gossamer serve -dp N` on the cpu backend: N replicas (each its own model, engine and KV cache) behind one
// server, a request routed to the replica with the fewest requests (server/replica_router.h). Greedy
// outputs equal one replica's under concurrent load (replicas of -tp 2 simulated ranks too), both replicas
// get work, a stream and a client's hang-up work, /metrics has one sample per replica (engine="<i>") that
// a scraper sums, and bad layouts are refused at start.
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "bench/server_counters.h"
#include "run_binary.h"
#include "server_process.h"

namespace gossamer::server {
namespace {

using Json = nlohmann::json;
using testing::ServerProcess;
using testing::wait_for;
using namespace std::chrono_literals;

// The sum over the replicas' samples (engine="<i>") of the metric family `name`, e.g.
// `gossamer:num_requests_running`; -1 when it has no sample.
double summed_metric(const ServerProcess& server, const std::string& name) {
  std::istringstream lines(server.get("/metrics").body);
  std::string line;
  double sum = 0;
  bool found = false;
  while (std::getline(lines, line)) {
    if (line.rfind(name + "{", 0) != 0) continue;
    sum += std::stod(line.substr(line.rfind(' ') + 1));
    found = true;
  }
  return found ? sum : -1;
}

Json chat(const std::string& question) {
  return testing::greedy_chat(question, 48);
}

Json answer(const ServerProcess& server, const Json& body) {
  return server.chat_completion(body);
}

TEST(DataParallelServe, ConcurrentGreedyChatsMatchOneReplica) {
  const std::vector<std::string> common = {"--max-model-len", "1024", "--seed", "3"};
  std::vector<std::string> dp_args = common;
  dp_args.insert(dp_args.end(), {"-dp", "2"});
  ServerProcess one(common);
  ServerProcess two(dp_args);
  const std::vector<std::string> questions = {"What is the capital of France?", "What is 2 + 2?",
                                              "Name a primary color.",          "Say hello.",
                                              "What is the capital of Japan?",  "Count to three."};
  std::vector<Json> alone, together(questions.size());
  for (const auto& question : questions) alone.push_back(answer(one, chat(question)));
  std::vector<std::thread> clients;
  for (size_t i = 0; i < questions.size(); ++i)
    clients.emplace_back([&, i] { together[i] = answer(two, chat(questions[i])); });
  for (auto& client : clients) client.join();
  for (size_t i = 0; i < questions.size(); ++i) {
    // The whole message: reasoning and answer. (Not the usage's cached_tokens: each replica has its own
    // prefix cache.)
    EXPECT_EQ(together[i]["choices"][0]["message"], alone[i]["choices"][0]["message"]) << questions[i];
    EXPECT_EQ(together[i]["choices"][0]["finish_reason"], alone[i]["choices"][0]["finish_reason"]) << questions[i];
    EXPECT_EQ(together[i]["usage"]["completion_tokens"], alone[i]["usage"]["completion_tokens"]) << questions[i];
    EXPECT_EQ(together[i]["usage"]["prompt_tokens"], alone[i]["usage"]["prompt_tokens"]) << questions[i];
  }
  EXPECT_NE(two.log().find("model loaded: TP1 EP1 DP2 on cpu, 2 replicas"), std::string::npos) << two.log();
  EXPECT_NE(two.log().find("2 replica(s)"), std::string::npos) << two.log();
}

// Each replica a tensor-parallel group of simulated ranks: -tp 2 -dp 2 answers as one unsharded replica.
TEST(DataParallelServe, ReplicasOfSimulatedRanksMatchOneReplica) {
  const std::vector<std::string> common = {"--max-model-len", "1024", "--seed", "3"};
  std::vector<std::string> grouped = common;
  grouped.insert(grouped.end(), {"-tp", "2", "-dp", "2"});
  ServerProcess one(common);
  ServerProcess groups(grouped);
  const std::vector<std::string> questions = {"What is the capital of France?", "Say hello."};
  std::vector<Json> together(questions.size());
  std::vector<std::thread> clients;
  for (size_t i = 0; i < questions.size(); ++i)
    clients.emplace_back([&, i] { together[i] = answer(groups, chat(questions[i])); });
  for (auto& client : clients) client.join();
  for (size_t i = 0; i < questions.size(); ++i) {
    EXPECT_EQ(together[i]["choices"][0]["message"], answer(one, chat(questions[i]))["choices"][0]["message"])
        << questions[i];
  }
  EXPECT_NE(groups.log().find("model loaded: TP2 EP1 DP2 on cpu (2 simulated ranks), 2 replicas"), std::string::npos)
      << groups.log();
}

// The fake backend (20 ms steps) keeps requests in flight long enough for the router to spread them.
class FakeReplicas : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = std::make_unique<ServerProcess>(std::vector<std::string>{"--test-backend", "fake", "--test-step-delay-ms",
                                                                       "20", "--no-enable-prefix-caching", "-dp", "2"});
  }
  static void TearDownTestSuite() { server_.reset(); }
  static inline std::unique_ptr<ServerProcess> server_;
};

TEST_F(FakeReplicas, ConcurrentRequestsReachBothReplicasAndMetricsSumThem) {
  const int num_requests = 8;
  std::vector<Json> answers(num_requests);
  std::vector<std::thread> clients;
  for (int i = 0; i < num_requests; ++i) {
    clients.emplace_back([&, i] {
      answers[i] = answer(*server_, {{"messages", {{{"role", "user"}, {"content", "request " + std::to_string(i)}}}},
                                     {"max_tokens", 10 + i},
                                     {"n", 1 + i % 2}});
    });
  }
  for (auto& client : clients) client.join();
  int64_t completion_tokens = 0;
  for (int i = 0; i < num_requests; ++i) {
    ASSERT_EQ(answers[i]["choices"].size(), static_cast<size_t>(1 + i % 2)) << answers[i];
    completion_tokens += answers[i]["usage"]["completion_tokens"].get<int64_t>();
  }
  ASSERT_TRUE(wait_for([&] { return summed_metric(*server_, "gossamer:num_requests_running") == 0; }, 3s));
  const std::string metrics = server_->get("/metrics").body;
  for (const std::string replica : {"0", "1"}) {
    const std::string sample =
        "vllm:generation_tokens_total{model_name=\"gossamer-test-fake\",engine=\"" + replica + "\"} ";
    const size_t at = metrics.find(sample);
    ASSERT_NE(at, std::string::npos) << sample << metrics;
    EXPECT_GT(std::stod(metrics.substr(at + sample.size())), 0) << "replica " << replica << " got no work";
  }
  EXPECT_EQ(summed_metric(*server_, "vllm:generation_tokens_total"), static_cast<double>(completion_tokens));
  const auto counters = parse_server_counters(metrics);
  ASSERT_TRUE(counters.has_value());
  EXPECT_EQ(counters->generation_tokens, static_cast<double>(completion_tokens));
  EXPECT_EQ(summed_metric(*server_, "gossamer:kv_cache_usage_perc"), 0);
  EXPECT_EQ(server_->get("/health").status, 200);
}

TEST_F(FakeReplicas, AStreamAndAHangUpWork) {
  const auto chunks = testing::stream_chunks(
      server_->port(), "/v1/chat/completions",
      {{"messages", {{{"role", "user"}, {"content", "stream to me"}}}}, {"max_tokens", 6}, {"stream", true}});
  ASSERT_FALSE(chunks.empty());
  std::string finish;
  for (const auto& chunk : chunks) {
    if (chunk.contains("choices") && !chunk["choices"].empty() && chunk["choices"][0]["finish_reason"].is_string())
      finish = chunk["choices"][0]["finish_reason"];
  }
  EXPECT_EQ(finish, "length");

  const double disconnects = server_->metric("gossamer:client_disconnects_total{");
  HttpClient client("127.0.0.1", server_->port(), 30.0);
  SseReader reader;
  int events = 0;
  const Json body = {
      {"messages", {{{"role", "user"}, {"content", "tell me a long story"}}}}, {"max_tokens", 2000}, {"stream", true}};
  client.request("POST", "/v1/chat/completions", body.dump(), {}, [&](std::string_view data) {
    events += static_cast<int>(reader.push(data).size());
    return events < 3;  // hang up after three events
  });
  EXPECT_GE(events, 3);
  EXPECT_TRUE(wait_for([&] { return summed_metric(*server_, "gossamer:num_requests_running") == 0; }, 3s));
  EXPECT_EQ(summed_metric(*server_, "gossamer:kv_cache_usage_perc"), 0);
  EXPECT_EQ(server_->metric("gossamer:client_disconnects_total{"), disconnects + 1);
}

TEST(DataParallelServe, BadLayoutsAreRefusedAtStart) {
  const auto zero = gossamer::testing::run_gossamer("serve --port 0 -dp 0");
  EXPECT_NE(zero.status, 0);
  EXPECT_NE(zero.output.find("--data-parallel-size must be ≥ 1"), std::string::npos) << zero.output;
  const auto gpus =
      gossamer::testing::run_gossamer("serve --port 0 --device cuda --load-format dummy --preset tiny -tp 2 -dp 8");
  EXPECT_NE(gpus.status, 0);
  EXPECT_NE(gpus.output.find("layout TP2 EP1 DP8 needs 16 GPUs (tensor-parallel × data-parallel)"), std::string::npos)
      << gpus.output;
  // Colocated replicas (the one-GPU tests' placement) share GPU 0: no automatic KV budget, no memory limit.
  const auto budget = gossamer::testing::run_gossamer(
      "serve --port 0 --device cuda --load-format dummy --preset tiny -dp 2 --test-colocate-gpus");
  EXPECT_NE(budget.status, 0);
  EXPECT_NE(budget.output.find("--test-colocate-gpus needs --kv-cache-memory-bytes"), std::string::npos)
      << budget.output;
  const auto limit = gossamer::testing::run_gossamer(
      "serve --port 0 --device cuda --load-format dummy --preset tiny -dp 2 --test-colocate-gpus "
      "--kv-cache-memory-bytes 268435456 --gpu-memory-limit-gib 80");
  EXPECT_NE(limit.status, 0);
  EXPECT_NE(limit.output.find("--test-colocate-gpus takes no --gpu-memory-limit-gib"), std::string::npos)
      << limit.output;
}

}  // namespace
}  // namespace gossamer::server
