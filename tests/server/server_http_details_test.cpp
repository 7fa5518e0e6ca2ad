// HTTP details clients rely on (issue #11 §4): HTTP/1.0 streams are close-delimited, `Expect: 100-continue`
// is answered, a client that half-closes after its request still gets the answer, a vanished one is
// still detected while streaming, and CORS as vLLM does it (preflight and simple requests).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "server_process.h"

namespace gossamer::server::testing {
namespace {

using Json = nlohmann::json;
using namespace std::chrono_literals;

int connect_to(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    close(fd);
    return -1;
  }
  timeval timeout{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  return fd;
}

void send_all(int fd, const std::string& data) {
  size_t sent = 0;
  while (sent < data.size()) {
    const ssize_t n = send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return;
    sent += static_cast<size_t>(n);
  }
}

// Reads until the peer closes (or `until` appears); returns everything read.
std::string read_all(int fd, const std::string& until = {}) {
  std::string out;
  char buffer[4096];
  while (true) {
    const ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
    if (n <= 0) break;
    out.append(buffer, static_cast<size_t>(n));
    if (!until.empty() && out.find(until) != std::string::npos) break;
  }
  return out;
}

std::string post_text(const std::string& version, const std::string& body, const std::string& extra = {}) {
  return "POST /v1/completions " + version +
         "\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n" +
         extra + "\r\n" + body;
}

std::string header_of(const ClientResponse& response, const std::string& name) {
  const auto found = response.headers.find(name);
  return found == response.headers.end() ? std::string() : found->second;
}

class ServerHttpDetails : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = std::make_unique<ServerProcess>(std::vector<std::string>{"--test-backend", "fake"});
  }
  static void TearDownTestSuite() { server_.reset(); }
  static inline std::unique_ptr<ServerProcess> server_;
};

TEST_F(ServerHttpDetails, Http10StreamsAreCloseDelimited) {
  const int fd = connect_to(server_->port());
  ASSERT_GE(fd, 0);
  send_all(fd, post_text("HTTP/1.0", R"({"prompt":[5,6,7],"max_tokens":5,"stream":true})"));
  const std::string response = read_all(fd);
  close(fd);
  EXPECT_EQ(response.find("Transfer-Encoding"), std::string::npos) << response;
  EXPECT_NE(response.find("Connection: close"), std::string::npos) << response;
  const std::string body = response.substr(response.find("\r\n\r\n") + 4);
  EXPECT_EQ(body.rfind("data: ", 0), 0u) << body;  // no chunk-size lines
  EXPECT_NE(body.find("data: [DONE]\n\n"), std::string::npos) << body;
}

TEST_F(ServerHttpDetails, ExpectContinueIsAnswered) {
  const int fd = connect_to(server_->port());
  ASSERT_GE(fd, 0);
  const std::string body = R"({"prompt":[5,6,7],"max_tokens":2})";
  // The head only: the server must invite the body.
  send_all(fd, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
                   std::to_string(body.size()) + "\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n");
  const std::string interim = read_all(fd, "\r\n\r\n");
  EXPECT_EQ(interim.rfind("HTTP/1.1 100 Continue\r\n\r\n", 0), 0u) << interim;
  send_all(fd, body);
  const std::string response = read_all(fd);
  close(fd);
  EXPECT_NE(response.find("HTTP/1.1 200"), std::string::npos) << response;
  EXPECT_NE(response.find("text_completion"), std::string::npos) << response;
}

TEST_F(ServerHttpDetails, HalfClosedClientStillGetsTheAnswer) {
  for (const bool stream : {false, true}) {
    const int fd = connect_to(server_->port());
    ASSERT_GE(fd, 0);
    const std::string body =
        std::string(R"({"prompt":[5,6,7],"max_tokens":4,"stream":)") + (stream ? "true" : "false") + "}";
    send_all(fd, post_text("HTTP/1.1", body));
    shutdown(fd, SHUT_WR);
    const std::string response = read_all(fd);
    close(fd);
    EXPECT_NE(response.find("HTTP/1.1 200"), std::string::npos) << response;
    EXPECT_NE(response.find(stream ? "[DONE]" : "\"usage\""), std::string::npos) << response;
  }
}

TEST(ServerHttpVanished, AVanishedStreamingClientIsCancelled) {
  ServerProcess server({"--test-backend", "fake", "--test-step-delay-ms", "20"});
  const int fd = connect_to(server.port());
  ASSERT_GE(fd, 0);
  send_all(fd, post_text("HTTP/1.1", R"({"prompt":[5,6,7],"max_tokens":2000,"stream":true,"ignore_eos":true})"));
  read_all(fd, "data: ");
  close(fd);
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (server.metric("gossamer:num_requests_running{") != 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_EQ(server.metric("gossamer:num_requests_running{"), 0);
  EXPECT_GE(server.metric("gossamer:client_disconnects_total{"), 1);
}

TEST_F(ServerHttpDetails, CorsPreflightAndSimpleRequests) {
  HttpClient client("127.0.0.1", server_->port(), 10.0);
  const auto preflight = client.request("OPTIONS", "/v1/chat/completions", {},
                                        {{"Origin", "http://example.com"},
                                         {"Access-Control-Request-Method", "POST"},
                                         {"Access-Control-Request-Headers", "authorization,content-type"}});
  EXPECT_EQ(preflight.status, 200);
  EXPECT_EQ(header_of(preflight, "access-control-allow-origin"), "*");
  EXPECT_NE(header_of(preflight, "access-control-allow-methods").find("POST"), std::string::npos);
  EXPECT_EQ(header_of(preflight, "access-control-allow-headers"), "authorization,content-type");
  const auto simple = client.request("GET", "/v1/models", {}, {{"Origin", "http://example.com"}});
  EXPECT_EQ(simple.status, 200);
  EXPECT_EQ(header_of(simple, "access-control-allow-origin"), "*");
  ServerProcess strict(
      {"--test-backend", "fake", "--allowed-origins", "http://ok.example", "--allowed-methods", "GET,POST"});
  HttpClient strict_client("127.0.0.1", strict.port(), 10.0);
  const auto allowed = strict_client.request("GET", "/v1/models", {}, {{"Origin", "http://ok.example"}});
  EXPECT_EQ(header_of(allowed, "access-control-allow-origin"), "http://ok.example");
  const auto other = strict_client.request("GET", "/v1/models", {}, {{"Origin", "http://evil.example"}});
  EXPECT_EQ(header_of(other, "access-control-allow-origin"), "");
  const auto bad_method = strict_client.request(
      "OPTIONS", "/v1/models", {}, {{"Origin", "http://ok.example"}, {"Access-Control-Request-Method", "DELETE"}});
  EXPECT_EQ(bad_method.status, 400);
}

}  // namespace
}  // namespace gossamer::server::testing
