#pragma once
// Subcommands of the `drift` binary. Each apps/<name>_command.cpp defines one and registers it
// with a static DRIFT_REGISTER_COMMAND, so adding a subcommand touches no other file.
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace drift::app {

struct Command {
  std::string name;
  std::string summary;                                    // one line for `drift --help`
  std::function<int(const std::vector<std::string>&)> run;  // args after the subcommand name
};

std::map<std::string, Command>& command_registry();

struct CommandRegistrar {
  explicit CommandRegistrar(Command command);
};

}  // namespace drift::app

#define DRIFT_REGISTER_COMMAND(ident, ...) \
  static const ::drift::app::CommandRegistrar drift_command_registrar_##ident{::drift::app::Command{__VA_ARGS__}}
