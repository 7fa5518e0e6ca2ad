#include "core/log.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>
#include <nlohmann/json.hpp>

namespace gossamer::log {

namespace {
std::atomic<Level> g_level{Level::kInfo};
std::atomic<Format> g_format{Format::kText};
std::mutex g_mutex;

const char* level_name(Level level) {
  switch (level) {
    case Level::kDebug: return "DEBUG";
    case Level::kInfo: return "INFO";
    case Level::kWarning: return "WARNING";
    case Level::kError: return "ERROR";
  }
  return "INFO";
}

std::string timestamp() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  const auto millis = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm parts{};
  gmtime_r(&seconds, &parts);
  char text[64];
  std::snprintf(text, sizeof(text), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", parts.tm_year + 1900, parts.tm_mon + 1,
                parts.tm_mday, parts.tm_hour, parts.tm_min, parts.tm_sec, static_cast<int>(millis));
  return text;
}
}  // namespace

void set_level(Level level) {
  g_level = level;
}
void set_format(Format format) {
  g_format = format;
}
bool enabled(Level level) {
  return level >= g_level.load(std::memory_order_relaxed);
}

void write(Level level, std::string_view message) {
  std::string line;
  if (g_format.load(std::memory_order_relaxed) == Format::kJson) {
    nlohmann::json record = {{"ts", timestamp()}, {"level", level_name(level)}, {"msg", std::string(message)}};
    line = record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  } else {
    line = timestamp() + " " + level_name(level) + " " + std::string(message);
  }
  std::lock_guard<std::mutex> lock(g_mutex);
  std::fprintf(stderr, "%s\n", line.c_str());
  std::fflush(stderr);
}

}  // namespace gossamer::log
