// The gossamer binary: dispatches to the sub-command named by argv[1].
#include <cstdio>
#include <exception>
#include <string>

#include "command.h"
#include "core/error.h"

namespace gossamer::app {

std::map<std::string, CommandInfo>& command_table() {
  static std::map<std::string, CommandInfo> table;
  return table;
}

CommandRegistrar::CommandRegistrar(const std::string& name, const std::string& summary, CommandFn run) {
  command_table()[name] = CommandInfo{summary, std::move(run)};
}

}  // namespace gossamer::app

namespace {
void print_usage() {
  std::fprintf(stderr, "usage: gossamer <command> [options]   (gossamer <command> --help for its options)\n\ncommands:\n");
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
