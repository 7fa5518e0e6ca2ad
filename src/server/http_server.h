// HttpServer: HTTP/1.1 on Boost.Beast/Asio with one pool of I/O threads (docs/server-http.md).
//
// Sockets: a listen backlog of 4096 (bursts of 1,000 connects must not stall: tests/server/server_behaviour_test.cpp),
// SO_REUSEADDR (no SO_REUSEPORT), TCP_NODELAY. Limits: request header and body sizes, a timeout for reading a request
// (also the keep-alive idle timeout) and for each write. Keep-alive is honoured. HTTP/1.0 streams are
// close-delimited; HEAD gets no body; `Expect: 100-continue` is answered; a client that half-closes after
// its request still gets the answer; CORS preflights are answered here.
//
// Contract: start() binds and listens (throws gossamer::Error when it cannot) and returns; handlers run on
// the I/O threads and must not block. stop() closes the listener and every connection and joins the
// threads; it is idempotent. The server owns no request state: draining is the caller's job.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "server/http_types.h"

namespace gossamer::server {

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  int port = 8000;                        // 0 = any free port (see HttpServer::port())
  int num_threads = 4;                    // I/O threads
  int listen_backlog = 4096;              // pending connections the kernel may queue
  size_t max_body_bytes = 32u << 20;      // larger request bodies get 413
  uint32_t max_header_bytes = 64u << 10;  // larger request heads get 431
  int read_timeout_s = 60;                // reading one request, and keep-alive idle time
  int write_timeout_s = 300;              // one write to a client that does not read
  // CORS (vLLM's defaults): origins, methods and headers a browser may use; "*" = any.
  std::vector<std::string> allowed_origins = {"*"};
  std::vector<std::string> allowed_methods = {"*"};
  std::vector<std::string> allowed_headers = {"*"};
};

class HttpServer {
 public:
  HttpServer(HttpServerOptions options, HttpHandler handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  void start();
  // Stops accepting new connections (existing ones keep going).
  void stop_accepting();
  void stop();
  int port() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gossamer::server
