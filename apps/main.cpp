// The gossamer binary: dispatches to the sub-command named by argv[1].
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <string>

#include "command.h"
#include "core/error.h"

namespace gossamer::app {

std::map<std::string, CommandInfo>& command_table() {
  static std::map<std::string, CommandInfo> table;
  return table;
}

std::string read_input(const std::string& path) {
  if (path == "-") return std::string(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  std::ifstream in(path, std::ios::binary);
  GOSSAMER_CHECK(in.good(), "cannot open input file '", path, "'");
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

void check_output_directory(const std::string& flag, const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  std::error_code error;
  GOSSAMER_CHECK(path.empty() || parent.empty() || std::filesystem::is_directory(parent, error), flag, " ", path,
                 ": no directory ", parent.string());
}

std::map<std::string, CommandInfo>& bench_table() {
  static std::map<std::string, CommandInfo> table;
  return table;
}

namespace {
void register_into(std::map<std::string, CommandInfo>& table, const std::string& kind, const std::string& name,
                   const std::string& summary, CommandFn run) {
  if (!table.emplace(name, CommandInfo{summary, std::move(run)}).second) {
    std::fprintf(stderr, "gossamer: internal error: %s '%s' registered twice\n", kind.c_str(), name.c_str());
    std::abort();
  }
}

int run_bench(int argc, char** argv) {
  const auto& table = bench_table();
  const auto found = argc >= 2 ? table.find(argv[1]) : table.end();
  if (found == table.end()) {
    std::fprintf(stderr, "usage: gossamer bench <name> [options]\n\nbenchmarks:\n");
    for (const auto& [name, info] : table) std::fprintf(stderr, "  %-10s %s\n", name.c_str(), info.summary.c_str());
    return argc >= 2 && std::string(argv[1]) != "--help" ? 2 : 0;
  }
  return found->second.run(argc - 1, argv + 1);
}
}  // namespace

CommandRegistrar::CommandRegistrar(const std::string& name, const std::string& summary, CommandFn run) {
  register_into(command_table(), "command", name, summary, std::move(run));
}

BenchRegistrar::BenchRegistrar(const std::string& name, const std::string& summary, CommandFn run) {
  register_into(bench_table(), "benchmark", name, summary, std::move(run));
}

GOSSAMER_REGISTER_COMMAND("bench", "benchmarks: serve (load generator), prefill, decode", run_bench);

}  // namespace gossamer::app

namespace {
void print_usage() {
  std::fprintf(stderr,
               "usage: gossamer <command> [options]   (gossamer <command> --help for its options)\n\ncommands:\n");
  for (const auto& [name, info] : gossamer::app::command_table()) {
    std::fprintf(stderr, "  %-14s %s\n", name.c_str(), info.summary.c_str());
  }
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
    print_usage();
    return argc < 2 ? 2 : 0;
  }
  const auto& table = gossamer::app::command_table();
  const auto found = table.find(argv[1]);
  if (found == table.end()) {
    std::fprintf(stderr, "gossamer: unknown command '%s'\n\n", argv[1]);
    print_usage();
    return 2;
  }
  try {
    return found->second.run(argc - 1, argv + 1);
  } catch (const gossamer::Error& error) {
    std::fprintf(stderr, "gossamer %s: error: %s\n", argv[1], error.what());
    return 1;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "gossamer %s: error: %s\n", argv[1], error.what());
    return 1;
  }
}
