// Sub-command registry of the gossamer binary.
//
// Each apps/cmd_*.cpp defines one sub-command and registers it with GOSSAMER_REGISTER_COMMAND. A command
// receives argv with its own name as argv[0] and returns the process exit code. Commands print JSON or
// files on success; on a gossamer::Error, main() prints the message to stderr and exits 1.
#pragma once

#include <functional>
#include <map>
#include <string>

namespace gossamer::app {

using CommandFn = std::function<int(int argc, char** argv)>;

struct CommandInfo {
  std::string summary;
  CommandFn run;
};

// Name → command, sorted for `gossamer --help`.
std::map<std::string, CommandInfo>& command_table();

// The whole content of a file; "-" reads stdin. Throws gossamer::Error naming the path.
std::string read_input(const std::string& path);
// Checks an output path before any work: throws gossamer::Error "<flag> <path>: no directory <folder>" when
// `path` names a folder that does not exist. An empty path (the output not asked for) passes.
void check_output_directory(const std::string& flag, const std::string& path);

// `gossamer bench <name> ...` sub-commands (serve, prefill, decode): argv[0] is the bench name.
std::map<std::string, CommandInfo>& bench_table();

// Registering a name twice aborts at start-up (two files claiming one command is a bug).
struct CommandRegistrar {
  CommandRegistrar(const std::string& name, const std::string& summary, CommandFn run);
};
struct BenchRegistrar {
  BenchRegistrar(const std::string& name, const std::string& summary, CommandFn run);
};

}  // namespace gossamer::app

#define GOSSAMER_REGISTER_COMMAND(name, summary, function) \
  static ::gossamer::app::CommandRegistrar gossamer_command_registrar_##function(name, summary, function)
// Registers `gossamer bench <name>`; do not register "bench" itself (apps/main.cpp owns it).
#define GOSSAMER_REGISTER_BENCH(name, summary, function) \
  static ::gossamer::app::BenchRegistrar gossamer_bench_registrar_##function(name, summary, function)
