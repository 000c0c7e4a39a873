#include "support/run_command.h"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <sys/wait.h>

#include "support/test_data.h"

namespace drift::test {

std::vector<nlohmann::json> json_lines(const std::string& out, nlohmann::json* summary) {
  std::vector<nlohmann::json> lines;
  std::istringstream s(out);
  for (std::string line; std::getline(s, line);) {
    if (line.empty()) continue;
    nlohmann::json j = nlohmann::json::parse(line);
    if (j.contains("summary")) {
      if (summary) *summary = j["summary"];
      continue;
    }
    lines.push_back(std::move(j));
  }
  return lines;
}

std::string shell_quote(const std::string& arg) {
  std::string q = "'";
  for (char c : arg) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string drift_in_source(const std::string& args) {
  // The repository's stories260K configs read the model from the shared data folder.
  if (args.find("configs/stories260k") != std::string::npos) test_data_path("models/stories260K");
  return "cd " + shell_quote(source_dir()) + " && " + drift_exe() + " " + args;
}

CommandResult run_command(const std::string& command) {
  const std::string dir = make_temp_dir("drift-cmd");
  const std::string err_path = dir + "/stderr";
  CommandResult r;
  FILE* pipe = popen((command + " 2>" + shell_quote(err_path)).c_str(), "r");
  if (!pipe) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) r.out.append(buf, n);
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream err(err_path);
  std::stringstream s;
  s << err.rdbuf();
  r.err = s.str();
  std::remove(err_path.c_str());
  std::remove(dir.c_str());
  return r;
}

}  // namespace drift::test
