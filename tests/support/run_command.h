#pragma once
// Runs a shell command (the built `drift` binary) and captures stdout, stderr and exit code.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace drift::test {

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

CommandResult run_command(const std::string& command);
// The JSON objects of `drift ... --json` output, one per non-empty line -- except `drift generate`'s
// closing {"summary": ...} line, which goes to `summary` when given.
std::vector<nlohmann::json> json_lines(const std::string& out, nlohmann::json* summary = nullptr);
// A shell command running `drift ARGS` in the source tree (where configs/ paths resolve).
std::string drift_in_source(const std::string& args);
// Quotes an argument for /bin/sh.
std::string shell_quote(const std::string& arg);

}  // namespace drift::test
