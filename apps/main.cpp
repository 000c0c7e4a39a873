// drift: the DriftEngine command-line tool. Dispatches to registered subcommands; every error
// that reaches here is printed as one line naming what is wrong, with a non-zero exit code.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "apps/command_registry.h"
#include "apps/version.h"

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

// DRIFT_LOG_LEVEL is checked as strictly as --log-level: spdlog maps an unknown name to "off",
// which would silently hide every warning and [fallback] line.
void apply_log_level_from_environment() {
  const char* level = std::getenv("DRIFT_LOG_LEVEL");
  if (!level || !*level) return;
  const auto parsed = spdlog::level::from_str(level);
  if (parsed == spdlog::level::off && std::string(level) != "off")
    throw std::runtime_error(std::string("DRIFT_LOG_LEVEL='") + level +
                             "' is not a level (trace, debug, info, warn, error, off)");
  spdlog::set_level(parsed);
}

// Results are worthless if they never reached their reader (a full disk, a closed pipe): a write
// error on stdout is the command's error too.
void check_stdout_written() {
  errno = 0;
  if (std::fflush(stdout) != 0 || std::ferror(stdout))
    throw std::runtime_error(std::string("writing to standard output failed: ") +
                             (errno ? std::strerror(errno) : "write error"));
}

void print_usage() {
  std::printf("usage: drift <command> [options]\n\ncommands:\n");
  for (const auto& [name, command] : command_registry())
    std::printf("  %-10s %s\n", name.c_str(), command.summary.c_str());
  std::printf("\n`drift <command> --help` describes a command's options; `drift --version` names the build.\n");
}
}  // namespace

}  // namespace drift::app

int main(int argc, char** argv) {
  using namespace drift::app;
  // Logs go to stderr so stdout carries only results (text, JSON) that scripts can parse.
  spdlog::set_default_logger(spdlog::stderr_color_mt("drift"));
  spdlog::set_pattern("[%H:%M:%S.%e] [%^%l%$] %v");
  try {
    apply_log_level_from_environment();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "drift: error: %s\n", e.what());
    return 2;
  }
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
    print_usage();
    return argc < 2 ? 2 : 0;
  }
  if (std::string(argv[1]) == "--version" || std::string(argv[1]) == "-V") {
    std::fputs(version_text().c_str(), stdout);
    return 0;
  }
  auto it = command_registry().find(argv[1]);
  if (it == command_registry().end()) {
    std::fprintf(stderr, "drift: unknown command '%s'\n", argv[1]);
    print_usage();
    return 2;
  }
  std::vector<std::string> args(argv + 2, argv + argc);
  try {
    const int status = it->second.run(args);
    check_stdout_written();
    return status;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "drift %s: error: %s\n", argv[1], e.what());
    return 1;
  }
}
