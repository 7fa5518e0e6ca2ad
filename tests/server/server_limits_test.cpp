// Requests built to hurt (issue #11 §1): deeply nested and huge tool schemas on chat and /tokenize get a 400
// naming the limit, quickly, while /health keeps answering; SIGTERM exits within --shutdown-timeout with
// requests still generating.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "server_process.h"
#include "text/nested_schemas.h"

namespace gossamer::server::testing {
namespace {

using Json = nlohmann::json;
using namespace std::chrono_literals;

using text::testing::nested_items;
using text::testing::nested_properties;

// A chat (or /tokenize) body with one tool whose parameters are `schema` (raw JSON text).
std::string body_with_schema(const std::string& schema) {
  return R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":4,"tools":[{"type":"function","function":)"
         R"({"name":"f","parameters":)" +
         schema + "}}]}";
}

class ServerLimits : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = std::make_unique<ServerProcess>(std::vector<std::string>{"--test-backend", "fake"});
  }
  static void TearDownTestSuite() { server_.reset(); }
  static inline std::unique_ptr<ServerProcess> server_;
};

TEST_F(ServerLimits, NestedSchemasGet400NamingTheLimitOnChatAndTokenize) {
  struct Case {
    std::string schema;
    std::string limit;  // text the error message must hold
  };
  const std::vector<Case> cases = {
      {nested_items(100), "64 levels"},    {nested_properties(40), "64 levels"},     {nested_items(2000), "256 levels"},
      {nested_items(14000), "256 levels"}, {nested_properties(10000), "256 levels"},
  };
  for (const Case& c : cases) {
    for (const char* path : {"/v1/chat/completions", "/tokenize"}) {
      const auto start = std::chrono::steady_clock::now();
      const auto response = server_->post_raw(path, body_with_schema(c.schema));
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      EXPECT_EQ(response.status, 400) << path << " " << response.body.substr(0, 300);
      EXPECT_NE(response.body.find(c.limit), std::string::npos) << path << " " << response.body.substr(0, 300);
      EXPECT_LT(seconds, 2.0) << path << " schema of " << c.schema.size() << " bytes";
    }
  }
  EXPECT_EQ(server_->get("/health").status, 200);
}

TEST_F(ServerLimits, HugeSchemasGet400NamingTheNodeLimit) {
  Json properties = Json::object();
  for (int i = 0; i < 6000; ++i) properties[std::string("p").append(std::to_string(i))] = {{"type", "string"}};
  const Json schema = {{"type", "object"}, {"properties", properties}};
  const auto one = server_->post_raw("/v1/chat/completions", body_with_schema(schema.dump()));
  EXPECT_EQ(one.status, 400) << one.body.substr(0, 300);
  EXPECT_NE(one.body.find("10000 JSON values"), std::string::npos) << one.body.substr(0, 300);
  EXPECT_NE(one.body.find("tools[0].function.parameters"), std::string::npos) << one.body.substr(0, 300);
  // Within the per-schema limit, but too much over all tools together.
  Json small = Json::object();
  for (int i = 0; i < 2000; ++i) small[std::string("p").append(std::to_string(i))] = {{"type", "string"}};
  Json body = {{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"tools", Json::array()}};
  for (int t = 0; t < 6; ++t) {
    body["tools"].push_back({{"type", "function"},
                             {"function",
                              {{"name", std::string("f").append(std::to_string(t))},
                               {"parameters", {{"type", "object"}, {"properties", small}}}}}});
  }
  const auto many = server_->post("/tokenize", body);
  EXPECT_EQ(many.status, 400) << many.body.substr(0, 300);
  EXPECT_NE(many.body.find("20000 JSON values"), std::string::npos) << many.body.substr(0, 300);
  Json too_many_tools = {{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"tools", Json::array()}};
  for (int t = 0; t < 129; ++t)
    too_many_tools["tools"].push_back(
        {{"type", "function"}, {"function", {{"name", std::string("f").append(std::to_string(t))}}}});
  EXPECT_EQ(server_->post("/v1/chat/completions", too_many_tools).status, 400);
}

TEST_F(ServerLimits, HealthAnswersWhileHostileRequestsArrive) {
  std::atomic<bool> stop{false};
  std::vector<std::thread> attackers;
  std::atomic<int> bad_status{0};
  for (int i = 0; i < 4; ++i) {
    attackers.emplace_back([&, i] {
      const std::string body = body_with_schema(i % 2 ? nested_items(2000) : nested_properties(60));
      while (!stop) {
        if (server_->post_raw(i % 2 ? "/tokenize" : "/v1/chat/completions", body).status != 400) ++bad_status;
      }
    });
  }
  for (int i = 0; i < 20; ++i) {
    const auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(server_->get("/health").status, 200);
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 1.0);
    std::this_thread::sleep_for(20ms);
  }
  stop = true;
  for (auto& thread : attackers) thread.join();
  EXPECT_EQ(bad_status.load(), 0);
  // A normal request still works afterwards.
  const auto ok =
      server_->post("/v1/chat/completions", {{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"max_tokens", 3}});
  EXPECT_EQ(ok.status, 200) << ok.body;
}

TEST(ServerShutdown, SigtermExitsWithinTheShutdownTimeoutWithRequestsStillGenerating) {
  ServerProcess server({"--test-backend", "fake", "--test-step-delay-ms", "50", "--shutdown-timeout", "1"});
  std::vector<std::thread> clients;
  std::atomic<int> started{0};
  for (int i = 0; i < 3; ++i) {
    clients.emplace_back([&] {
      HttpClient client("127.0.0.1", server.port(), 30.0);
      const Json body = {{"prompt", {5, 6, 7}}, {"max_tokens", 2000}, {"stream", true}, {"ignore_eos", true}};
      client.request("POST", "/v1/completions", body.dump(), {}, [&](std::string_view) {
        ++started;
        return true;
      });
    });
  }
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (started.load() < 3 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(10ms);
  const auto start = std::chrono::steady_clock::now();
  const int code = server.stop(SIGTERM, 8.0);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (auto& thread : clients) thread.join();
  EXPECT_EQ(code, 0) << server.log();
  EXPECT_LT(seconds, 4.0);  // 1 s of drain, then the abort
}

}  // namespace
}  // namespace gossamer::server::testing
