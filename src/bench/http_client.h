// HttpClient: a small blocking HTTP/1.1 client over POSIX sockets, for `gossamer bench serve` and tests.
//
// Contract: one connection, reused while the server keeps it alive (reconnects otherwise); not
// thread-safe (one client per thread). request() throws gossamer::Error on connection failures and
// timeouts; HTTP error statuses are returned, not thrown. When on_data is given, the body is passed to it
// as it arrives (de-chunked) instead of being stored; returning false closes the connection at once.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "server/http_types.h"

namespace gossamer::server {

struct ClientResponse {
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
};

class HttpClient {
 public:
  HttpClient(std::string host, int port, double timeout_s = 600.0);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  ClientResponse request(const std::string& method, const std::string& path, const std::string& body = {},
                         const HeaderList& headers = {}, const std::function<bool(std::string_view)>& on_data = {});
  void close();

 private:
  void connect();
  void send_all(const std::string& data);
  // Reads more bytes into buffer_; false on EOF.
  bool fill();
  std::string read_line();

  std::string host_;
  int port_;
  double timeout_s_;
  int fd_ = -1;
  std::string buffer_;
};

// Splits a text/event-stream body into the payloads of its `data:` lines, across arbitrary chunk borders.
class SseReader {
 public:
  std::vector<std::string> push(std::string_view bytes);

 private:
  std::string pending_;
};

}  // namespace gossamer::server
