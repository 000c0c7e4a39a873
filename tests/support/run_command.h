#pragma once
// Runs a shell command (the built `drift` binary) and captures stdout, stderr and exit code.
#include <string>

namespace drift::test {

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

CommandResult run_command(const std::string& command);
// Quotes an argument for /bin/sh.
std::string shell_quote(const std::string& arg);

}  // namespace drift::test
