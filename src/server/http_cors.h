// CORS as vLLM does it (Starlette's CORSMiddleware): which origins, methods and headers browsers may use,
// the Access-Control-* lines for simple requests and the preflight answer. "*" allows any.
//
// Contract: plain value type; origin_headers() returns complete header lines ("Name: value\r\n").
#pragma once

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "server/http_types.h"

namespace gossamer::server {

struct Cors {
  std::vector<std::string> origins, methods, headers;

  static bool iequals(const std::string& a, const std::string& b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
             return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
           });
  }

  static bool listed(const std::vector<std::string>& list, const std::string& value, bool case_insensitive) {
    for (const auto& item : list) {
      if (item == "*" || item == value || (case_insensitive && iequals(item, value))) return true;
    }
    return false;
  }
  bool allows_origin(const std::string& origin) const { return listed(origins, origin, false); }
  bool allows_method(const std::string& method) const { return listed(methods, method, true); }
  bool any_origin() const { return std::find(origins.begin(), origins.end(), "*") != origins.end(); }
  std::string origin_headers(const std::string& origin) const {
    return any_origin() ? "Access-Control-Allow-Origin: *\r\n"
                        : "Access-Control-Allow-Origin: " + origin + "\r\nVary: Origin\r\n";
  }
  HeaderList preflight_headers(const std::string& requested_headers) const {
    const bool all_methods = std::find(methods.begin(), methods.end(), "*") != methods.end();
    const bool all_headers = std::find(headers.begin(), headers.end(), "*") != headers.end();
    std::string method_list, header_list;
    if (all_methods) {
      method_list = "DELETE, GET, HEAD, OPTIONS, PATCH, POST, PUT";
    } else {
      for (const auto& m : methods) method_list += (method_list.empty() ? "" : ", ") + m;
    }
    if (all_headers) {
      header_list = requested_headers;
    } else {
      for (const auto& h : headers) header_list += (header_list.empty() ? "" : ", ") + h;
    }
    HeaderList out = {{"Access-Control-Allow-Methods", method_list}, {"Access-Control-Max-Age", "600"}};
    if (!header_list.empty()) out.emplace_back("Access-Control-Allow-Headers", header_list);
    return out;
  }
};

}  // namespace gossamer::server
