// ApiError: an error answered to an API client in OpenAI's envelope
// {"error": {"message", "type", "param", "code"}} with an HTTP status (OpenAI's error shape; docs/server-http.md).
//
// Contract: thrown by request parsing and handlers; the router turns it into the response. `code` is a
// string code ("context_length_exceeded", "model_not_found") or, when empty, the HTTP status number.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>

#include "server/http_types.h"

namespace gossamer::server {

class ApiError : public std::runtime_error {
 public:
  ApiError(int status, std::string type, const std::string& message, std::optional<std::string> param = std::nullopt,
           std::string code = {})
      : std::runtime_error(message),
        status(status),
        type(std::move(type)),
        param(std::move(param)),
        code(std::move(code)) {}

  static ApiError invalid(const std::string& message, std::optional<std::string> param = std::nullopt) {
    return ApiError(400, "invalid_request_error", message, std::move(param));
  }

  nlohmann::json to_json() const;
  HttpResponse to_response() const;

  int status;
  std::string type;
  std::optional<std::string> param;
  std::string code;
  HeaderList headers;    // e.g. Retry-After
  nlohmann::json extra;  // extra fields inside "error" (e.g. token counts)
};

// Error envelope for a status with the default type for it.
HttpResponse error_response(int status, const std::string& message);

}  // namespace gossamer::server
