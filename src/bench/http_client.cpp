#include "bench/http_client.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace gossamer::server {

HttpClient::HttpClient(std::string host, int port, double timeout_s)
    : host_(std::move(host)), port_(port), timeout_s_(timeout_s) {}

HttpClient::~HttpClient() {
  close();
}

void HttpClient::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  buffer_.clear();
}

void HttpClient::connect() {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* result = nullptr;
  const int rc = getaddrinfo(host_.c_str(), std::to_string(port_).c_str(), &hints, &result);
  GOSSAMER_CHECK(rc == 0, "cannot resolve ", host_, ": ", gai_strerror(rc));
  int last_errno = 0;
  for (addrinfo* ai = result; ai; ai = ai->ai_next) {
    const int fd = ::socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
    if (fd < 0) continue;
    if (::connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
      fd_ = fd;
      break;
    }
    last_errno = errno;
    ::close(fd);
  }
  freeaddrinfo(result);
  GOSSAMER_CHECK(fd_ >= 0, "cannot connect to ", host_, ":", port_, ": ", std::strerror(last_errno));
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(timeout_s_);
  tv.tv_usec = static_cast<suseconds_t>((timeout_s_ - static_cast<double>(tv.tv_sec)) * 1e6);
  setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  const int one = 1;
  setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

void HttpClient::send_all(const std::string& data) {
  size_t sent = 0;
  while (sent < data.size()) {
    const ssize_t n = ::send(fd_, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    GOSSAMER_CHECK(n > 0, "send failed: ", std::strerror(errno));
    sent += static_cast<size_t>(n);
  }
}

bool HttpClient::fill() {
  char chunk[16384];
  while (true) {
    const ssize_t n = ::recv(fd_, chunk, sizeof(chunk), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      GOSSAMER_THROW("timed out reading from ", host_, ":", port_);
    if (n < 0 && errno == ECONNRESET) return false;
    GOSSAMER_CHECK(n >= 0, "recv failed: ", std::strerror(errno));
    if (n == 0) return false;
    buffer_.append(chunk, static_cast<size_t>(n));
    return true;
  }
}

std::string HttpClient::read_line() {
  while (true) {
    const auto end = buffer_.find("\r\n");
    if (end != std::string::npos) {
      std::string line = buffer_.substr(0, end);
      buffer_.erase(0, end + 2);
      return line;
    }
    GOSSAMER_CHECK(fill(), "connection closed by the server");
  }
}

ClientResponse HttpClient::request(const std::string& method, const std::string& path, const std::string& body,
                                   const HeaderList& headers, const std::function<bool(std::string_view)>& on_data) {
  std::string head = method + " " + path + " HTTP/1.1\r\nHost: " + host_ + ":" + std::to_string(port_) + "\r\n";
  bool has_content_type = false;
  for (const auto& [name, value] : headers) {
    head += name + ": " + value + "\r\n";
    if (name == "Content-Type" || name == "content-type") has_content_type = true;
  }
  if (!body.empty() && !has_content_type) head += "Content-Type: application/json\r\n";
  if (method == "POST" || !body.empty()) head += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  head += "\r\n";

  // A kept-alive connection may have been closed by the server: retry once on a fresh one.
  for (int attempt = 0;; ++attempt) {
    const bool reused = fd_ >= 0;
    if (fd_ < 0) connect();
    try {
      send_all(head + body);
      if (buffer_.empty() && !fill()) GOSSAMER_THROW("connection closed by the server");
      break;
    } catch (const Error&) {
      close();
      if (!reused || attempt > 0) throw;
    }
  }

  ClientResponse response;
  const std::string status_line = read_line();
  GOSSAMER_CHECK(status_line.rfind("HTTP/1.", 0) == 0 && status_line.size() >= 12, "bad status line: ", status_line);
  response.status = std::stoi(status_line.substr(9, 3));
  while (true) {
    const std::string line = read_line();
    if (line.empty()) break;
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    size_t value_start = colon + 1;
    while (value_start < line.size() && line[value_start] == ' ') ++value_start;
    response.headers[name] = line.substr(value_start);
  }
  const bool keep_alive = response.headers["connection"] != "close";
  bool aborted = false;
  const auto deliver = [&](std::string_view data) {
    if (on_data) {
      if (!aborted && !on_data(data)) aborted = true;
    } else {
      response.body.append(data);
    }
  };

  if (method == "HEAD" || response.status == 204 || response.status == 304) {
  } else if (response.headers["transfer-encoding"].find("chunked") != std::string::npos) {
    while (!aborted) {
      const std::string size_line = read_line();
      const size_t size = std::stoul(size_line, nullptr, 16);
      if (size == 0) {
        while (!read_line().empty()) {
        }
        break;
      }
      while (buffer_.size() < size + 2) GOSSAMER_CHECK(fill(), "connection closed inside a chunk");
      deliver(std::string_view(buffer_).substr(0, size));
      buffer_.erase(0, size + 2);
    }
  } else if (response.headers.count("content-length")) {
    size_t remaining = std::stoul(response.headers["content-length"]);
    while (remaining > 0 && !aborted) {
      if (buffer_.empty()) GOSSAMER_CHECK(fill(), "connection closed inside the body");
      const size_t take = std::min(remaining, buffer_.size());
      deliver(std::string_view(buffer_).substr(0, take));
      buffer_.erase(0, take);
      remaining -= take;
    }
  } else {
    while (!aborted) {
      if (!buffer_.empty()) {
        deliver(buffer_);
        buffer_.clear();
      }
      if (!fill()) break;
    }
    close();
  }
  if (aborted || !keep_alive) close();
  return response;
}

std::vector<std::string> SseReader::push(std::string_view bytes) {
  pending_.append(bytes);
  std::vector<std::string> events;
  size_t start = 0;
  while (true) {
    const size_t end = pending_.find('\n', start);
    if (end == std::string::npos) break;
    std::string line = pending_.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.rfind("data:", 0) == 0) {
      size_t from = 5;
      if (from < line.size() && line[from] == ' ') ++from;
      events.push_back(line.substr(from));
    }
    start = end + 1;
  }
  pending_.erase(0, start);
  return events;
}

}  // namespace gossamer::server
