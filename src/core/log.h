// Minimal leveled logging to stderr, text or JSON lines. Thread-safe (one line per call).
//
// The format and level are process settings chosen once at start-up by the app (`--log-format`).
#pragma once

#include <string>
#include <string_view>

#include "core/error.h"

namespace gossamer::log {

enum class Level { kDebug, kInfo, kWarning, kError };
enum class Format { kText, kJson };

void set_level(Level level);
void set_format(Format format);
bool enabled(Level level);
void write(Level level, std::string_view message);

}  // namespace gossamer::log

#define GOSSAMER_LOG(level, ...)                                                                      \
  do {                                                                                                \
    if (::gossamer::log::enabled(::gossamer::log::Level::level)) {                                    \
      ::gossamer::log::write(::gossamer::log::Level::level, ::gossamer::detail::concat(__VA_ARGS__)); \
    }                                                                                                 \
  } while (0)
#define GOSSAMER_LOG_INFO(...) GOSSAMER_LOG(kInfo, __VA_ARGS__)
#define GOSSAMER_LOG_WARN(...) GOSSAMER_LOG(kWarning, __VA_ARGS__)
#define GOSSAMER_LOG_ERROR(...) GOSSAMER_LOG(kError, __VA_ARGS__)
#define GOSSAMER_LOG_DEBUG(...) GOSSAMER_LOG(kDebug, __VA_ARGS__)
