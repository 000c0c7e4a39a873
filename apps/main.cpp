// drift: the DriftEngine command-line tool. Dispatches to registered subcommands; every error
// that reaches here is printed as one line naming what is wrong, with a non-zero exit code.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "apps/command_registry.h"

namespace drift::app {

std::map<std::string, Command>& command_registry() {
  static std::map<std::string, Command> registry;
  return registry;
}

CommandRegistrar::CommandRegistrar(Command command) {
  std::string name = command.name;
  command_registry().emplace(std::move(name), std::move(command));
}

namespace {
void print_usage() {
  std::printf("usage: drift <command> [options]\n\ncommands:\n");
  for (const auto& [name, command] : command_registry())
    std::printf("  %-10s %s\n", name.c_str(), command.summary.c_str());
  std::printf("\n`drift <command> --help` describes a command's options.\n");
}
}  // namespace

}  // namespace drift::app

int main(int argc, char** argv) {
  using namespace drift::app;
  // Logs go to stderr so stdout carries only results (text, JSON) that scripts can parse.
  spdlog::set_default_logger(spdlog::stderr_color_mt("drift"));
  spdlog::set_pattern("[%H:%M:%S.%e] [%^%l%$] %v");
  if (const char* level = std::getenv("DRIFT_LOG_LEVEL")) spdlog::set_level(spdlog::level::from_str(level));
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
    print_usage();
    return argc < 2 ? 2 : 0;
  }
  auto it = command_registry().find(argv[1]);
  if (it == command_registry().end()) {
    std::fprintf(stderr, "drift: unknown command '%s'\n", argv[1]);
    print_usage();
    return 2;
  }
  std::vector<std::string> args(argv + 2, argv + argc);
  try {
    return it->second.run(args);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "drift %s: error: %s\n", argv[1], e.what());
    return 1;
  }
}
