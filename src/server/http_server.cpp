// The only translation unit that includes Boost.Beast (it compiles slowly).
#include "server/http_server.h"

#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cerrno>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "core/error.h"
#include "core/log.h"
#include "server/http_cors.h"

namespace gossamer::server {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using error_code = beast::error_code;

namespace {

std::string status_line(int status) {
  const auto reason = http::obsolete_reason(static_cast<http::status>(status));
  return "HTTP/1.1 " + std::to_string(status) + " " + std::string(reason.data(), reason.size()) + "\r\n";
}

std::string error_body(int status, const std::string& message) {
  const char* type = status == 413 || status == 431 || status == 400 ? "invalid_request_error" : "server_error";
  std::string escaped;
  for (const char c : message) {
    if (c == '"' || c == '\\') escaped += '\\';
    escaped += c;
  }
  return std::string("{\"error\":{\"message\":\"") + escaped + "\",\"type\":\"" + type +
         "\",\"param\":null,\"code\":" + std::to_string(status) + "}}";
}

struct Shared {
  HttpServerOptions options;
  HttpHandler handler;
  Cors cors;
};

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(std::shared_ptr<net::io_context> context, tcp::socket&& socket, std::shared_ptr<const Shared> shared)
      : context_(std::move(context)), stream_(std::move(socket)), shared_(std::move(shared)) {
    error_code ec;
    const auto endpoint = stream_.socket().remote_endpoint(ec);
    if (!ec) remote_ = endpoint.address().to_string() + ":" + std::to_string(endpoint.port());
  }

  void run() {
    net::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->do_read(); });
  }

  // --- called through a Channel, from any thread -------------------------------------------------------
  void post_respond(uint64_t generation, HttpResponse response) {
    net::post(stream_.get_executor(),
              [self = shared_from_this(), generation, response = std::move(response)]() mutable {
                if (generation != self->generation_ || self->response_started_) return;
                self->response_started_ = true;
                std::string head = status_line(response.status);
                head += "Content-Type: " + response.content_type + "\r\n";
                head += "Content-Length: " + std::to_string(response.body.size()) + "\r\n";
                for (const auto& [name, value] : response.headers) head += name + ": " + value + "\r\n";
                head += self->cors_headers_;
                head += self->keep_alive_ ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n";
                // NOTE: HEAD gets GET's head (Content-Length included) and no body (RFC 9110 §9.3.2).
                self->enqueue(self->head_only_ ? std::move(head) : head + response.body, true);
              });
  }

  void post_start_stream(uint64_t generation, int status, std::string content_type, HeaderList headers) {
    net::post(stream_.get_executor(), [self = shared_from_this(), generation, status,
                                       content_type = std::move(content_type), headers = std::move(headers)] {
      if (generation != self->generation_ || self->response_started_) return;
      self->response_started_ = true;
      self->streaming_ = true;
      std::string head = status_line(status);
      // NOTE: HTTP/1.0 has no chunked coding: the stream is close-delimited (RFC 9112 §6.3).
      if (self->http10_) self->keep_alive_ = false;
      head += "Content-Type: " + content_type + (self->http10_ ? "\r\n" : "\r\nTransfer-Encoding: chunked\r\n");
      for (const auto& [name, value] : headers) head += name + ": " + value + "\r\n";
      head += self->cors_headers_;
      head += self->keep_alive_ ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n";
      self->enqueue(std::move(head), false);
    });
  }

  void post_write(uint64_t generation, std::string data) {
    if (data.empty()) return;
    net::post(stream_.get_executor(), [self = shared_from_this(), generation, data = std::move(data)] {
      if (generation != self->generation_ || !self->streaming_ || self->response_done_ || self->head_only_) return;
      if (self->http10_) return self->enqueue(std::move(data), false);
      char size[32];
      std::snprintf(size, sizeof(size), "%zx\r\n", data.size());
      self->enqueue(std::string(size) + data + "\r\n", false);
    });
  }

  void post_end_stream(uint64_t generation) {
    net::post(stream_.get_executor(), [self = shared_from_this(), generation] {
      if (generation != self->generation_ || !self->streaming_ || self->response_done_) return;
      self->enqueue(self->http10_ || self->head_only_ ? std::string() : std::string("0\r\n\r\n"), true);
    });
  }

  void post_on_close(uint64_t generation, std::function<void()> callback) {
    net::post(stream_.get_executor(),
              [self = shared_from_this(), generation, callback = std::move(callback)]() mutable {
                if (generation != self->generation_) return;
                if (self->closed_) {
                  if (!self->response_done_) callback();
                  return;
                }
                self->close_callbacks_.push_back(std::move(callback));
              });
  }

  void post_work(std::function<void()> work) { net::post(stream_.get_executor(), std::move(work)); }

  bool closed() const { return closed_.load(); }
  uint64_t generation() const { return generation_; }

 private:
  void do_read() {
    parser_.emplace();
    parser_->body_limit(shared_->options.max_body_bytes);
    parser_->header_limit(shared_->options.max_header_bytes);
    stream_.expires_after(std::chrono::seconds(shared_->options.read_timeout_s));
    http::async_read_header(stream_, buffer_, *parser_,
                            [self = shared_from_this()](error_code ec, size_t) { self->on_header(ec); });
  }

  // The head is in: answer `Expect: 100-continue` (or refuse a body over the limit at once), then the body.
  void on_header(error_code ec) {
    if (ec) return on_read(ec);
    const auto& head = parser_->get();
    const auto expect = head[http::field::expect];
    if (beast::iequals(expect, "100-continue")) {
      if (parser_->content_length() && *parser_->content_length() > shared_->options.max_body_bytes) {
        return send_error_and_close(413, "request body too large");
      }
      static const std::string kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
      net::async_write(stream_, net::buffer(kContinue), [self = shared_from_this()](error_code write_ec, size_t) {
        if (write_ec) return self->shutdown();
        self->read_body();
      });
      return;
    }
    read_body();
  }

  void read_body() {
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](error_code ec, size_t) { self->on_read(ec); });
  }

  void send_error_and_close(int status, const std::string& message) {
    keep_alive_ = false;
    ++generation_;
    response_started_ = true;
    response_done_ = false;
    const std::string body = error_body(status, message);
    std::string head = status_line(status) +
                       "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
                       "\r\nConnection: close\r\n\r\n";
    enqueue(head + body, true);
  }

  void on_read(error_code ec) {
    if (ec == http::error::body_limit) return send_error_and_close(413, "request body too large");
    if (ec == http::error::header_limit) return send_error_and_close(431, "request header too large");
    if (ec == http::error::end_of_stream || ec == beast::error::timeout || ec == net::error::eof ||
        ec == net::error::operation_aborted || ec == net::error::connection_reset) {
      return shutdown();
    }
    if (ec) {
      if (ec.category() == error_code(http::error::bad_target).category()) {
        return send_error_and_close(400, "malformed HTTP request");
      }
      return shutdown();
    }
    auto message = parser_->release();
    HttpRequest request;
    request.method = std::string(message.method_string());
    request.target = std::string(message.target());
    const auto question = request.target.find('?');
    request.path = request.target.substr(0, question);
    if (question != std::string::npos) request.query = request.target.substr(question + 1);
    for (const auto& field : message) {
      std::string name(field.name_string());
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      request.headers[name] = std::string(field.value());
    }
    request.body = std::move(message.body());
    request.remote = remote_;
    keep_alive_ = message.keep_alive();
    head_only_ = message.method() == http::verb::head;
    http10_ = message.version() == 10;
    half_closed_ = false;
    cors_headers_.clear();
    const std::string origin(message[http::field::origin]);
    if (!origin.empty() && shared_->cors.allows_origin(origin)) {
      cors_headers_ = shared_->cors.origin_headers(origin);
      // NOTE: a preflight is answered here; it never reaches the API (CORS as vLLM's CORSMiddleware does it).
      if (message.method() == http::verb::options &&
          message.find(http::field::access_control_request_method) != message.end()) {
        ++generation_;
        response_started_ = false;
        response_done_ = false;
        streaming_ = false;
        close_callbacks_.clear();
        const std::string method(message[http::field::access_control_request_method]);
        const std::string headers(message[http::field::access_control_request_headers]);
        if (!shared_->cors.allows_method(method)) {
          return post_respond(generation_, HttpResponse{400, "text/plain", {}, "Disallowed CORS method"});
        }
        HttpResponse preflight{200, "text/plain", shared_->cors.preflight_headers(headers), "OK"};
        return post_respond(generation_, std::move(preflight));
      }
    }

    stream_.expires_never();
    ++generation_;
    response_started_ = false;
    response_done_ = false;
    streaming_ = false;
    close_callbacks_.clear();
    watch_disconnect();

    auto channel = make_channel();
    const std::string method = request.method, path = request.path;
    try {
      shared_->handler(std::move(request), channel);
    } catch (const std::exception& error) {
      GOSSAMER_LOG_ERROR("http: handler failed for ", method, " ", path, ": ", error.what());
      channel->respond(HttpResponse{500, "application/json", {}, error_body(500, "internal server error")});
    }
  }

  std::shared_ptr<ResponseChannel> make_channel();

  // NOTE: waits for readability without consuming: a peek of 0 bytes means the client closed.
  void watch_disconnect() {
    if (watching_) return;
    watching_ = true;
    stream_.socket().async_wait(tcp::socket::wait_read, [self = shared_from_this()](error_code ec) {
      self->watching_ = false;
      if (ec || self->closed_) return;
      // NOTE: plain recv(2): Asio's synchronous receive would block the strand until data arrives.
      char byte;
      const ssize_t n = ::recv(self->stream_.socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
        if (!self->response_done_) self->watch_disconnect();
        return;
      }
      if (n == 0) {
        // NOTE: EOF is a half-close as far as we can tell (a client that shut its sending side still gets
        // its answer); a client that is really gone answers the next write with a reset, which
        // check_reset() sees right after that write, i.e. within one streamed token.
        self->half_closed_ = true;
        self->keep_alive_ = false;
        return;
      }
      if (n < 0) self->mark_closed();
    });
  }

  // After a write to a half-closed client: a reset means it is gone.
  void check_reset() {
    char byte;
    const ssize_t n = ::recv(stream_.socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) mark_closed();
  }

  void mark_closed() {
    if (closed_) return;
    closed_ = true;
    auto callbacks = std::move(close_callbacks_);
    close_callbacks_.clear();
    if (!response_done_) {
      for (auto& callback : callbacks) callback();
    }
    error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.socket().close(ignored);
  }

  void enqueue(std::string data, bool last) {
    if (closed_) return;
    if (last) response_done_ = true;
    out_.push_back(std::move(data));
    if (!writing_) do_write();
  }

  void do_write() {
    writing_ = true;
    stream_.expires_after(std::chrono::seconds(shared_->options.write_timeout_s));
    net::async_write(stream_, net::buffer(out_.front()), [self = shared_from_this()](error_code ec, size_t) {
      self->writing_ = false;
      self->out_.pop_front();
      if (ec) {
        self->mark_closed();
        return;
      }
      if (self->half_closed_ && !self->response_done_) {
        self->check_reset();
        if (self->closed_) return;
      }
      if (!self->out_.empty()) return self->do_write();
      self->stream_.expires_never();
      if (self->response_done_) {
        self->close_callbacks_.clear();
        if (self->keep_alive_) {
          self->do_read();
        } else {
          self->shutdown();
        }
      }
    });
  }

  void shutdown() {
    closed_ = true;
    close_callbacks_.clear();
    error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.socket().close(ignored);
  }

  std::shared_ptr<net::io_context> context_;  // NOTE: declared first so it outlives the stream
  beast::tcp_stream stream_;
  std::shared_ptr<const Shared> shared_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::string remote_;
  std::deque<std::string> out_;
  std::vector<std::function<void()>> close_callbacks_;
  uint64_t generation_ = 0;
  bool keep_alive_ = true;
  bool head_only_ = false;
  bool http10_ = false;       // HTTP/1.0 client: streams are close-delimited, not chunked
  bool half_closed_ = false;  // the client shut its sending side after the request
  std::string cors_headers_;  // CORS lines added to this request's response head
  bool writing_ = false;
  bool watching_ = false;
  bool response_started_ = false;
  bool response_done_ = false;
  bool streaming_ = false;
  std::atomic<bool> closed_{false};
};

class Channel : public ResponseChannel {
 public:
  Channel(std::shared_ptr<Session> session, uint64_t generation)
      : session_(std::move(session)), generation_(generation) {}
  void respond(HttpResponse response) override { session_->post_respond(generation_, std::move(response)); }
  void start_stream(int status, const std::string& content_type, HeaderList headers) override {
    session_->post_start_stream(generation_, status, content_type, std::move(headers));
  }
  void write(std::string data) override { session_->post_write(generation_, std::move(data)); }
  void end_stream() override { session_->post_end_stream(generation_); }
  bool closed() const override { return session_->closed(); }
  void on_close(std::function<void()> callback) override { session_->post_on_close(generation_, std::move(callback)); }
  void post(std::function<void()> work) override { session_->post_work(std::move(work)); }

 private:
  std::shared_ptr<Session> session_;
  uint64_t generation_;
};

std::shared_ptr<ResponseChannel> Session::make_channel() {
  return std::make_shared<Channel>(shared_from_this(), generation_);
}

}  // namespace

struct HttpServer::Impl {
  std::shared_ptr<const Shared> shared;
  std::shared_ptr<net::io_context> context;
  std::optional<tcp::acceptor> acceptor;
  std::vector<std::thread> threads;
  std::atomic<bool> accepting{false};
  std::once_flag stopped;
  int port = 0;

  void do_accept() {
    acceptor->async_accept(net::make_strand(*context), [this](error_code ec, tcp::socket socket) {
      if (!accepting) return;
      if (!ec) {
        error_code ignored;
        socket.set_option(tcp::no_delay(true), ignored);
        std::make_shared<Session>(context, std::move(socket), shared)->run();
      } else if (ec == net::error::operation_aborted) {
        return;
      } else {
        GOSSAMER_LOG_WARN("http: accept failed: ", ec.message());
      }
      do_accept();
    });
  }
};

HttpServer::HttpServer(HttpServerOptions options, HttpHandler handler) : impl_(std::make_unique<Impl>()) {
  auto shared = std::make_shared<Shared>();
  shared->options = std::move(options);
  shared->handler = std::move(handler);
  shared->cors =
      Cors{shared->options.allowed_origins, shared->options.allowed_methods, shared->options.allowed_headers};
  impl_->shared = shared;
  impl_->context = std::make_shared<net::io_context>(std::max(1, impl_->shared->options.num_threads));
}

HttpServer::~HttpServer() {
  stop();
}

void HttpServer::start() {
  const HttpServerOptions& options = impl_->shared->options;
  error_code ec;
  const auto address = net::ip::make_address(options.host == "localhost" ? "127.0.0.1" : options.host, ec);
  GOSSAMER_CHECK(!ec, "invalid --host '", options.host, "': ", ec.message());
  const tcp::endpoint endpoint(address, static_cast<uint16_t>(options.port));
  impl_->acceptor.emplace(*impl_->context);
  impl_->acceptor->open(endpoint.protocol(), ec);
  GOSSAMER_CHECK(!ec, "cannot open a socket: ", ec.message());
  impl_->acceptor->set_option(net::socket_base::reuse_address(true), ec);
  impl_->acceptor->bind(endpoint, ec);
  GOSSAMER_CHECK(!ec, "cannot bind ", options.host, ":", options.port, ": ", ec.message());
  impl_->acceptor->listen(options.listen_backlog, ec);
  GOSSAMER_CHECK(!ec, "cannot listen on ", options.host, ":", options.port, ": ", ec.message());
  impl_->port = impl_->acceptor->local_endpoint().port();
  impl_->accepting = true;
  impl_->do_accept();
  for (int i = 0; i < std::max(1, options.num_threads); ++i) {
    impl_->threads.emplace_back([context = impl_->context] {
      try {
        context->run();
      } catch (const std::exception& error) {
        GOSSAMER_LOG_ERROR("http: I/O thread stopped: ", error.what());
      }
    });
  }
}

void HttpServer::stop_accepting() {
  if (!impl_->accepting.exchange(false)) return;
  net::post(*impl_->context, [impl = impl_.get()] {
    error_code ignored;
    if (impl->acceptor) impl->acceptor->close(ignored);
  });
}

void HttpServer::stop() {
  std::call_once(impl_->stopped, [this] {
    stop_accepting();
    impl_->context->stop();
    for (auto& thread : impl_->threads) thread.join();
    impl_->threads.clear();
  });
}

int HttpServer::port() const {
  return impl_->port;
}

}  // namespace gossamer::server
