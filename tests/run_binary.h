// Runs the built `gossamer` binary (GOSSAMER_BINARY) in a shell and captures its stdout + stderr.
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

// `arguments` are appended to the binary's path; `stdin_bytes`, when given, are fed on standard input.
inline BinaryResult run_gossamer(const std::string& arguments, const std::string* stdin_bytes = nullptr) {
  std::string command = std::string(GOSSAMER_BINARY) + " " + arguments;
  std::filesystem::path input;
  if (stdin_bytes != nullptr) {
    input = std::filesystem::temp_directory_path() / ("gossamer_stdin." + std::to_string(::getpid()));
    std::ofstream(input, std::ios::binary) << *stdin_bytes;
    command += " < " + input.string();
  }
  command += " 2>&1";
  BinaryResult result;
  FILE* pipe = ::popen(command.c_str(), "r");
  std::array<char, 4096> buffer{};
  size_t read = 0;
  while ((read = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) result.output.append(buffer.data(), read);
  result.status = ::pclose(pipe);
  if (!input.empty()) std::filesystem::remove(input);
  return result;
}

}  // namespace gossamer::testing
