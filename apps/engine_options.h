#pragma once
// Options shared by the subcommands that build an engine (generate, chat, score, serve, bench):
// where the config and model come from, which backend runs it and how, plus the parsing of id
// lists.
#include <cstdint>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "core/config.h"

namespace drift::app {

struct EngineSource {
  std::string config_path;
  std::string model_dir;
  std::string backend;
  std::string log_level;
  int64_t tensor_parallel_size = 0;  // 0: the config's
  std::string adaptive;              // "on" / "off": overrides [speculative] adaptive; "": the config's
};

void add_engine_options(boost::program_options::options_description& desc, EngineSource& source);
// The config file (or defaults) with --model / --backend / --tensor-parallel-size / --adaptive
// applied. Throws DriftError when neither
// a config nor a model is given, or naming --model / --backend when their value is bad.
EngineConfig resolve_engine_config(const EngineSource& source);

// "1,2,3" -> {1, 2, 3}; DriftError naming the option and the bad element otherwise.
std::vector<int32_t> parse_id_list(const std::string& text, const std::string& option);
// A non-negative 64-bit integer; DriftError naming the option and the value otherwise (a
// program_options uint64_t would silently wrap "-1").
uint64_t parse_uint64(const std::string& text, const std::string& option);

// Parses args into vm; --help prints usage and returns false. Bad options throw DriftError
// naming the option. `ordered`, when given, receives every option in command-line order.
bool parse_command_line(const std::vector<std::string>& args, const boost::program_options::options_description& desc,
                        boost::program_options::variables_map& vm, const std::string& usage,
                        std::vector<boost::program_options::option>* ordered = nullptr);

}  // namespace drift::app
