// Errors with source locations.
//
// Contract: API boundaries (bad input, bad config, bad checkpoint) throw gossamer::Error with a clear
// message via GOSSAMER_CHECK / GOSSAMER_THROW. Violated internal invariants abort via GOSSAMER_ASSERT.
#pragma once

#include <source_location>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace gossamer {

// An error caused by input the caller controls (file, request, flag). what() is user-facing.
class Error : public std::runtime_error {
 public:
  Error(const std::string& message, std::source_location where = std::source_location::current());
  // Where the error was raised: "file.cpp:123".
  const std::string& where() const { return where_; }

 private:
  std::string where_;
};

namespace detail {
template <typename... Args>
std::string concat(Args&&... args) {
  std::ostringstream out;
  (out << ... << std::forward<Args>(args));
  return out.str();
}
[[noreturn]] void assert_fail(const char* condition, const std::string& message, std::source_location where);
}  // namespace detail

}  // namespace gossamer

// Throws gossamer::Error built from the streamed arguments.
#define GOSSAMER_THROW(...) throw ::gossamer::Error(::gossamer::detail::concat(__VA_ARGS__))

// Throws gossamer::Error when `cond` is false. Use for anything a user can trigger.
#define GOSSAMER_CHECK(cond, ...)                                       \
  do {                                                                  \
    if (!(cond)) [[unlikely]] {                                         \
      throw ::gossamer::Error(::gossamer::detail::concat(__VA_ARGS__)); \
    }                                                                   \
  } while (0)

// Aborts with a message when an internal invariant is violated (a bug, not bad input).
#define GOSSAMER_ASSERT(cond, ...)                                                                      \
  do {                                                                                                  \
    if (!(cond)) [[unlikely]] {                                                                         \
      ::gossamer::detail::assert_fail(#cond, ::gossamer::detail::concat("" __VA_OPT__(, ) __VA_ARGS__), \
                                      std::source_location::current());                                 \
    }                                                                                                   \
  } while (0)
