// Test helper: runs `gossamer serve` as a child process on a free port and talks to it over HTTP.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench/http_client.h"
#include "run_binary.h"

namespace gossamer::server::testing {

// Polls `condition` every 20 ms until it holds or `timeout` passes; its last value.
inline bool wait_for(const std::function<bool()>& condition, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return condition();
}

// A greedy chat completion body: one user message, `max_tokens` at temperature 0.
inline nlohmann::json greedy_chat(const std::string& question, int max_tokens) {
  return {{"messages", {{{"role", "user"}, {"content", question}}}}, {"temperature", 0}, {"max_tokens", max_tokens}};
}

class ServerProcess {
 public:
  // Starts `gossamer serve --port 0 <args>` and waits until /health answers 200 (or throws); with
  // wait_ready false, only until the port is known (the model may still be loading).
  explicit ServerProcess(const std::vector<std::string>& args, double ready_timeout_s = 120.0, bool wait_ready = true) {
    char pattern[] = "/tmp/gossamer-serve-XXXXXX";
    dir_ = mkdtemp(pattern);
    const std::string port_file = dir_ + "/port";
    log_path_ = dir_ + "/server.log";
    std::vector<std::string> argv = {GOSSAMER_BINARY,      "serve", "--port", "0", "--port-file", port_file,
                                     "--disable-log-stats"};
    argv.insert(argv.end(), args.begin(), args.end());
    pid_ = fork();
    if (pid_ == 0) {
      const int fd = ::open(log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(fd, 1);
      dup2(fd, 2);
      std::vector<char*> c_argv;
      for (auto& arg : argv) c_argv.push_back(arg.data());
      c_argv.push_back(nullptr);
      execv(c_argv[0], c_argv.data());
      _exit(127);
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(ready_timeout_s);
    while (std::chrono::steady_clock::now() < deadline) {
      if (exited()) throw std::runtime_error("gossamer serve exited early:\n" + log());
      if (port_ == 0) {
        std::ifstream in(port_file);
        in >> port_;
      }
      if (port_ != 0 && !wait_ready) return;
      if (port_ != 0) {
        try {
          HttpClient client("127.0.0.1", port_, 5.0);
          if (client.request("GET", "/health").status == 200) return;
        } catch (const std::exception&) {
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    throw std::runtime_error("gossamer serve did not become ready:\n" + log());
  }

  ~ServerProcess() {
    if (pid_ > 0 && !exited()) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  int port() const { return port_; }
  pid_t pid() const { return pid_; }

  std::string log() const {
    std::ifstream in(log_path_);
    std::stringstream out;
    out << in.rdbuf();
    return out.str();
  }

  // Sends `signal` and waits for the exit; returns the exit code (or -1 on timeout / killed by a signal).
  int stop(int signal, double timeout_s) {
    kill(pid_, signal);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    while (std::chrono::steady_clock::now() < deadline) {
      if (exited()) return WIFEXITED(status_) ? WEXITSTATUS(status_) : -1;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return -1;
  }

  bool exited() {
    if (done_) return true;
    if (waitpid(pid_, &status_, WNOHANG) == pid_) done_ = true;
    return done_;
  }

  ClientResponse get(const std::string& path, const HeaderList& headers = {}) const {
    HttpClient client("127.0.0.1", port_, 60.0);
    return client.request("GET", path, {}, headers);
  }
  ClientResponse post(const std::string& path, const nlohmann::json& body, const HeaderList& headers = {}) const {
    HttpClient client("127.0.0.1", port_, 120.0);
    return client.request("POST", path, body.dump(), headers);
  }
  // POSTs a chat completion, expects 200 (a gtest failure otherwise) and returns the parsed reply.
  nlohmann::json chat_completion(const nlohmann::json& body) const {
    const ClientResponse response = post("/v1/chat/completions", body);
    EXPECT_EQ(response.status, 200) << response.body;
    return nlohmann::json::parse(response.body);
  }
  ClientResponse post_raw(const std::string& path, const std::string& body) const {
    HttpClient client("127.0.0.1", port_, 120.0);
    return client.request("POST", path, body);
  }

  // Value of a metric sample line starting with `prefix` (e.g. `gossamer:num_requests_running{`), or -1.
  double metric(const std::string& prefix) const {
    const std::string text = get("/metrics").body;
    std::istringstream lines(text);
    std::string line;
    while (std::getline(lines, line)) {
      if (line.rfind(prefix, 0) == 0) return std::stod(line.substr(line.rfind(' ') + 1));
    }
    return -1;
  }

 private:
  std::string dir_;
  std::string log_path_;
  pid_t pid_ = -1;
  int port_ = 0;
  int status_ = 0;
  bool done_ = false;
};

// Streams a POST and returns the parsed `data:` events (the last one is "[DONE]" when complete).
inline std::vector<std::string> stream_events(int port, const std::string& path, const nlohmann::json& body,
                                              int* status = nullptr) {
  HttpClient client("127.0.0.1", port, 120.0);
  SseReader reader;
  std::vector<std::string> events;
  const auto response = client.request("POST", path, body.dump(), {}, [&](std::string_view data) {
    for (auto& event : reader.push(data)) events.push_back(std::move(event));
    return true;
  });
  if (status) *status = response.status;
  return events;
}

// Streams a POST that must answer 200 and end with [DONE]; returns the JSON chunks before it.
inline std::vector<nlohmann::json> stream_chunks(int port, const std::string& path, const nlohmann::json& body) {
  int status = 0;
  const auto events = stream_events(port, path, body, &status);
  EXPECT_EQ(status, 200);
  EXPECT_EQ(events.empty() ? "" : events.back(), "[DONE]");
  std::vector<nlohmann::json> out;
  for (size_t i = 0; i + 1 < events.size(); ++i) out.push_back(nlohmann::json::parse(events[i]));
  return out;
}

// Runs `node tests/server/<script>` from the source tree against the server on `port`
// (GOSSAMER_BASE_URL=http://127.0.0.1:<port>/v1, then `env`: "NAME=value …"); returns (its exit code, or −1
// when it did not exit, and its stdout + stderr).
inline std::pair<int, std::string> run_node_script(const std::string& script, int port, const std::string& env = "") {
  const auto result = ::gossamer::testing::run_shell("cd '" + std::string(GOSSAMER_SOURCE_DIR) +
                                                     "' && GOSSAMER_BASE_URL=http://127.0.0.1:" + std::to_string(port) +
                                                     "/v1 " + env + " node tests/server/" + script);
  return {WIFEXITED(result.status) ? WEXITSTATUS(result.status) : -1, result.output};
}

}  // namespace gossamer::server::testing
