// Runs a shell command, or the built `gossamer` binary (GOSSAMER_BINARY), and captures its stdout + stderr.
#pragma once

#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace gossamer::testing {

struct BinaryResult {
  int status = 0;      // pclose() status; 0 = exit 0
  std::string output;  // stdout + stderr
};

// `command` in a shell, its stderr joined to its stdout.
inline BinaryResult run_shell(const std::string& command) {
  BinaryResult result;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return {-1, "popen failed: " + command};
  std::array<char, 4096> buffer{};
  size_t read = 0;
  while ((read = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) result.output.append(buffer.data(), read);
  result.status = ::pclose(pipe);
  return result;
}

// `arguments` are appended to the binary's path; `stdin_bytes`, when given, are fed on standard input.
inline BinaryResult run_gossamer(const std::string& arguments, const std::string* stdin_bytes = nullptr) {
  std::string command = std::string(GOSSAMER_BINARY) + " " + arguments;
  std::filesystem::path input;
  if (stdin_bytes != nullptr) {
    input = std::filesystem::temp_directory_path() / ("gossamer_stdin." + std::to_string(::getpid()));
    std::ofstream(input, std::ios::binary) << *stdin_bytes;
    command += " < " + input.string();
  }
  BinaryResult result = run_shell(command);
  if (!input.empty()) std::filesystem::remove(input);
  return result;
}

}  // namespace gossamer::testing
