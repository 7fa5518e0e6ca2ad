// Behaviour under load and failure (docs/server-http.md), against `gossamer serve` with the fake backend:
// 64 concurrent streams with preemption give the same greedy tokens as requests run alone and leave no KV
// block behind; a client that disconnects mid-stream frees its blocks; a full queue answers 429; SIGTERM
// drains; a burst of 1,000 connects is served.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <atomic>
#include <mutex>
#include <thread>

#include "server_process.h"

namespace gossamer::server::testing {
namespace {

using Json = nlohmann::json;
using namespace std::chrono_literals;

struct StreamResult {
  int status = 0;
  std::string text;
  int completion_tokens = -1;
  std::string finish_reason;
  bool done = false;
};

StreamResult stream_completion(int port, const Json& body) {
  StreamResult result;
  for (const auto& event : stream_events(port, "/v1/completions", body, &result.status)) {
    if (event == "[DONE]") {
      result.done = true;
      continue;
    }
    const Json chunk = Json::parse(event);
    if (chunk.contains("usage")) result.completion_tokens = chunk["usage"]["completion_tokens"];
    if (chunk["choices"].empty()) continue;
    result.text += chunk["choices"][0]["text"].get<std::string>();
    if (!chunk["choices"][0]["finish_reason"].is_null()) result.finish_reason = chunk["choices"][0]["finish_reason"];
  }
  return result;
}

Json completion_request(int i) {
  std::vector<int> prompt;
  for (int t = 0; t < 8 + i % 24; ++t) prompt.push_back(1000 + 37 * i + 11 * t);
  return {{"prompt", prompt},
          {"max_tokens", 16 + i % 33},
          {"temperature", 0},
          {"stream", true},
          {"stream_options", {{"include_usage", true}}}};
}

TEST(ServerBehaviour, ConcurrentStreamsMatchRequestsRunAloneAndFreeEveryBlock) {
  // 48 blocks of 16 positions: far less than 32 running sequences need, so preemption must happen.
  ServerProcess server({"--test-backend", "fake", "--num-gpu-blocks-override", "48", "--block-size", "16",
                        "--max-model-len", "256", "--max-num-seqs", "32", "--max-num-batched-tokens", "512"});
  const int num_requests = 96;
  std::vector<StreamResult> alone(num_requests), together(num_requests);
  for (int i = 0; i < num_requests; ++i) alone[i] = stream_completion(server.port(), completion_request(i));

  std::atomic<int> next{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < 64; ++c) {
    clients.emplace_back([&] {
      for (int i = next++; i < num_requests; i = next++)
        together[i] = stream_completion(server.port(), completion_request(i));
    });
  }
  for (auto& client : clients) client.join();

  for (int i = 0; i < num_requests; ++i) {
    EXPECT_EQ(together[i].status, 200) << i;
    EXPECT_TRUE(together[i].done) << i;
    EXPECT_EQ(together[i].finish_reason, "length") << i;
    EXPECT_EQ(together[i].completion_tokens, 16 + i % 33) << i;
    EXPECT_EQ(together[i].text, alone[i].text) << "request " << i << " differs when batched";
  }
  EXPECT_GT(server.metric("gossamer:num_preemptions_total{"), 0) << "the test should exercise preemption";
  EXPECT_TRUE(wait_for([&] { return server.metric("gossamer:num_requests_running{") == 0; }, 2s));
  EXPECT_EQ(server.metric("gossamer:kv_cache_usage_perc{"), 0);
  EXPECT_EQ(server.metric("gossamer:num_requests_waiting{"), 0);
}

TEST(ServerBehaviour, DisconnectMidStreamFreesTheBlocks) {
  ServerProcess server({"--test-backend", "fake", "--test-step-delay-ms", "20"});
  HttpClient client("127.0.0.1", server.port(), 30.0);
  SseReader reader;
  int events = 0;
  const Json body = {
      {"messages", {{{"role", "user"}, {"content", "tell me a long story"}}}}, {"max_tokens", 2000}, {"stream", true}};
  client.request("POST", "/v1/chat/completions", body.dump(), {}, [&](std::string_view data) {
    events += static_cast<int>(reader.push(data).size());
    return events < 3;  // hang up after three events
  });
  EXPECT_GE(events, 3);
  EXPECT_TRUE(wait_for([&] { return server.metric("gossamer:num_requests_running{") == 0; }, 3s));
  EXPECT_EQ(server.metric("gossamer:kv_cache_usage_perc{"), 0);
  EXPECT_GE(server.metric("gossamer:client_disconnects_total{"), 1);
  EXPECT_GE(
      server.metric("gossamer:request_success_total{model_name=\"gossamer-test-fake\",finished_reason=\"abort\"}"), 1);
}

TEST(ServerBehaviour, FullQueueAnswers429WithRetryAfter) {
  ServerProcess server(
      {"--test-backend", "fake", "--max-num-seqs", "1", "--max-queued-requests", "2", "--test-step-delay-ms", "10"});
  std::mutex mutex;
  std::vector<ClientResponse> responses;
  std::vector<std::thread> clients;
  for (int c = 0; c < 8; ++c) {
    clients.emplace_back([&, c] {
      auto response = server.post("/v1/completions", {{"prompt", {1, 2, 3, c}}, {"max_tokens", 30}});
      std::lock_guard<std::mutex> lock(mutex);
      responses.push_back(std::move(response));
    });
  }
  for (auto& client : clients) client.join();
  int ok = 0, rejected = 0;
  for (auto& response : responses) {
    if (response.status == 200) ++ok;
    if (response.status == 429) {
      ++rejected;
      EXPECT_EQ(response.headers["retry-after"], "1");
      EXPECT_EQ(Json::parse(response.body)["error"]["type"], "rate_limit_error");
    }
  }
  EXPECT_GE(ok, 1);
  EXPECT_GE(rejected, 1);
  EXPECT_EQ(ok + rejected, 8);
  EXPECT_GE(server.metric("gossamer:requests_rejected_total{model_name=\"gossamer-test-fake\",reason=\"overload\"}"),
            1);
}

TEST(ServerBehaviour, SigtermDrainsInFlightStreamsAndExitsZero) {
  ServerProcess server({"--test-backend", "fake", "--test-step-delay-ms", "10"});
  std::atomic<bool> first_event{false};
  StreamResult result;
  std::thread stream([&] {
    HttpClient client("127.0.0.1", server.port(), 30.0);
    SseReader reader;
    const Json body = {{"prompt", {5, 6, 7}}, {"max_tokens", 150}, {"stream", true}};
    result.status = client
                        .request("POST", "/v1/completions", body.dump(), {},
                                 [&](std::string_view data) {
                                   for (const auto& event : reader.push(data)) {
                                     first_event = true;
                                     if (event == "[DONE]") {
                                       result.done = true;
                                       continue;
                                     }
                                     const Json chunk = Json::parse(event);
                                     if (!chunk["choices"].empty() && !chunk["choices"][0]["finish_reason"].is_null()) {
                                       result.finish_reason = chunk["choices"][0]["finish_reason"];
                                     }
                                   }
                                   return true;
                                 })
                        .status;
  });
  ASSERT_TRUE(wait_for([&] { return first_event.load(); }, 10s));
  kill(server.pid(), SIGTERM);
  EXPECT_TRUE(wait_for([&] { return server.get("/health").status == 503; }, 2s));
  const auto refused = server.post("/v1/completions", {{"prompt", {1}}, {"max_tokens", 1}});
  EXPECT_EQ(refused.status, 503);
  EXPECT_EQ(Json::parse(refused.body)["error"]["type"], "unavailable_error");
  stream.join();
  EXPECT_EQ(result.status, 200);
  EXPECT_TRUE(result.done);
  EXPECT_EQ(result.finish_reason, "length");
  EXPECT_EQ(server.stop(0, 15.0), 0) << server.log();
}

TEST(ServerBehaviour, BurstOfAThousandConnects) {
  rlimit files{};
  getrlimit(RLIMIT_NOFILE, &files);
  files.rlim_cur = files.rlim_max;
  setrlimit(RLIMIT_NOFILE, &files);
  if (files.rlim_cur < 1100) GTEST_SKIP() << "open-file limit " << files.rlim_cur << " is below 1100";
  ServerProcess server({"--test-backend", "fake"});
  const int n = 1000;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(server.port()));
  inet_pton(AF_INET, "127.0.0.1", &address.sin_addr);
  const auto start = std::chrono::steady_clock::now();
  std::vector<int> sockets;
  for (int i = 0; i < n; ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_GE(fd, 0);
    timeval tv{10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0) << "connect " << i;
    sockets.push_back(fd);
  }
  const std::string request = "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  for (const int fd : sockets)
    ASSERT_EQ(send(fd, request.data(), request.size(), MSG_NOSIGNAL), static_cast<ssize_t>(request.size()));
  int ok = 0;
  for (const int fd : sockets) {
    std::string reply;
    char buffer[1024];
    ssize_t got;
    while ((got = recv(fd, buffer, sizeof(buffer), 0)) > 0) reply.append(buffer, static_cast<size_t>(got));
    ok += reply.rfind("HTTP/1.1 200", 0) == 0;
    close(fd);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(ok, n);
  EXPECT_LT(seconds, 10.0);
}

}  // namespace
}  // namespace gossamer::server::testing

namespace gossamer::server::testing {
namespace {

TEST(BenchServe, ReportsVllmFiguresAgainstTheServer) {
  ServerProcess server({"--test-backend", "fake"});
  char pattern[] = "/tmp/gossamer-bench-XXXXXX";
  const int fd = mkstemp(pattern);
  close(fd);
  const std::string command = std::string(GOSSAMER_BINARY) + " bench serve --port " + std::to_string(server.port()) +
                              " --num-prompts 12 --random-input-len 32 --random-output-len 8 --max-concurrency 4" +
                              " --request-rate 200 --ignore-eos --goodput ttft:60000 --result-filename " + pattern +
                              " > /dev/null 2>&1";
  ASSERT_EQ(std::system(command.c_str()), 0);
  std::ifstream in(pattern);
  const Json result = Json::parse(in);
  EXPECT_EQ(result["completed"], 12);
  EXPECT_EQ(result["failed"], 0);
  EXPECT_EQ(result["total_output_tokens"], 12 * 8);
  EXPECT_GT(result["total_input_tokens"], 12 * 32);  // the chat template adds tokens
  EXPECT_EQ(result["max_concurrency"], 4);
  for (const char* key :
       {"request_throughput", "output_throughput", "total_token_throughput", "request_goodput", "mean_ttft_ms",
        "median_ttft_ms", "p99_ttft_ms", "mean_tpot_ms", "median_tpot_ms", "p99_tpot_ms", "mean_itl_ms",
        "median_itl_ms", "p99_itl_ms", "mean_e2el_ms", "median_e2el_ms", "p99_e2el_ms"}) {
    ASSERT_TRUE(result.contains(key)) << key;
    EXPECT_GT(result[key].get<double>(), 0.0) << key;
  }
}

}  // namespace
}  // namespace gossamer::server::testing
