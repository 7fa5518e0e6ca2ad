// Plain HTTP request/response types shared by the Beast server (http_server.cpp) and the API handlers,
// so that only one translation unit includes Boost.Beast.
//
// Contract: a ResponseChannel belongs to one request. Exactly one of respond() or start_stream() …
// end_stream() must be called; calls after the client disconnected are accepted and dropped. All methods
// are thread-safe (they post to the connection's strand). on_close callbacks run once, on an I/O thread,
// when the client goes away before the response is complete (never after a completed response). post()
// runs work on an I/O thread, in order with the channel's other posts and one at a time (the strand), also
// after the client went away; only a stopped server drops it.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace gossamer::server {

using HeaderList = std::vector<std::pair<std::string, std::string>>;

struct HttpRequest {
  std::string method;                          // "GET", "POST", ...
  std::string target;                          // path and query as sent
  std::string path;                            // without the query
  std::string query;                           // after '?', empty if none
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
  std::string remote;  // "ip:port"

  // Header value or "" when absent; `name` in lower case.
  std::string header(const std::string& name) const {
    const auto found = headers.find(name);
    return found == headers.end() ? std::string() : found->second;
  }
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  HeaderList headers;
  std::string body;
};

class ResponseChannel {
 public:
  virtual ~ResponseChannel() = default;
  virtual void respond(HttpResponse response) = 0;
  // Starts a chunked response (e.g. text/event-stream); the body follows through write().
  virtual void start_stream(int status, const std::string& content_type, HeaderList headers) = 0;
  virtual void write(std::string data) = 0;
  virtual void end_stream() = 0;
  // True once the client is known to be gone.
  virtual bool closed() const = 0;
  virtual void on_close(std::function<void()> callback) = 0;
  // Runs `work` on the connection's I/O thread (its strand), e.g. the request's engine events.
  virtual void post(std::function<void()> work) = 0;
};

// Takes the request by value: handlers move it on to a worker (its body may be large).
using HttpHandler = std::function<void(HttpRequest, std::shared_ptr<ResponseChannel>)>;

}  // namespace gossamer::server
