#include "core/error.h"

#include <cstdio>
#include <cstdlib>

namespace gossamer {

namespace {
std::string format_where(const std::source_location& where) {
  std::string file = where.file_name();
  const auto slash = file.find("src/");
  if (slash != std::string::npos) file = file.substr(slash);
  return file + ":" + std::to_string(where.line());
}
}  // namespace

Error::Error(const std::string& message, std::source_location where)
    : std::runtime_error(message), where_(format_where(where)) {}

namespace detail {
void assert_fail(const char* condition, const std::string& message, std::source_location where) {
  std::fprintf(stderr, "gossamer: internal error at %s: assertion `%s` failed %s\n", format_where(where).c_str(),
               condition, message.c_str());
  std::fflush(stderr);
  std::abort();
}
}  // namespace detail

}  // namespace gossamer
