#include "server/api_error.h"

namespace gossamer::server {

nlohmann::json ApiError::to_json() const {
  nlohmann::json error = {{"message", what()}, {"type", type}, {"param", nullptr}, {"code", status}};
  if (param) error["param"] = *param;
  if (!code.empty()) error["code"] = code;
  if (extra.is_object()) {
    for (const auto& [key, value] : extra.items()) error[key] = value;
  }
  return {{"error", error}};
}

HttpResponse ApiError::to_response() const {
  HttpResponse response;
  response.status = status;
  response.headers = headers;
  response.body = to_json().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return response;
}

HttpResponse error_response(int status, const std::string& message) {
  std::string type = "invalid_request_error";
  if (status == 401) type = "authentication_error";
  if (status == 404) type = "not_found_error";
  if (status == 429) type = "rate_limit_error";
  if (status == 503) type = "unavailable_error";
  if (status >= 500 && status != 503) type = "server_error";
  return ApiError(status, type, message).to_response();
}

}  // namespace gossamer::server
