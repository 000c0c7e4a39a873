#include "apps/engine_options.h"

#include <charconv>
#include <iostream>
#include <limits>

#include <spdlog/spdlog.h>

#include "core/error.h"
#include "core/model_path.h"

namespace po = boost::program_options;

namespace drift::app {

void add_engine_options(po::options_description& desc, EngineSource& source) {
  desc.add_options()("config", po::value(&source.config_path), "engine config (TOML, schema_version = 1)")(
      "model", po::value(&source.model_dir), "checkpoint directory (overrides the config's [model] path)")(
      "backend", po::value(&source.backend), "cpu | cuda (overrides the config's engine.backend)")(
      "tensor-parallel-size", po::value(&source.tensor_parallel_size),
      "ranks the model is split over (overrides the config's engine.tensor_parallel_size)")(
      "adaptive", po::value(&source.adaptive),
      "on | off: adaptive speculation (per-step draft budgets) or max_draft_tokens every step (overrides the "
      "config's [speculative] adaptive)")("log-level", po::value(&source.log_level),
                                          "trace | debug | info | warn | error | off");
}

EngineConfig resolve_engine_config(const EngineSource& source) {
  if (!source.log_level.empty()) {
    const auto level = spdlog::level::from_str(source.log_level);
    if (level == spdlog::level::off && source.log_level != "off")
      fail("--log-level '{}' is not a level (trace, debug, info, warn, error, off)", source.log_level);
    spdlog::set_level(level);
  }
  if (source.config_path.empty() && source.model_dir.empty()) fail("give --config FILE or --model DIR");
  EngineConfig config = source.config_path.empty() ? EngineConfig{} : load_config(source.config_path);
  if (!source.model_dir.empty()) {
    if (const std::string why = check_model_path(source.model_dir); !why.empty())
      fail("--model '{}': {}", source.model_dir, why);
    config.model.path = source.model_dir;
  }
  if (!source.backend.empty()) {
    if (std::string bad = check_backend_name(source.backend); !bad.empty()) fail("--backend {}: {}", source.backend, bad);
    config.engine.backend = source.backend;
  }
  if (source.tensor_parallel_size != 0) {
    if (source.tensor_parallel_size < 1 || source.tensor_parallel_size > limits::kMaxTensorParallel)
      fail("--tensor-parallel-size {}: must be in [1, {}]", source.tensor_parallel_size, limits::kMaxTensorParallel);
    config.engine.tensor_parallel_size = source.tensor_parallel_size;
  }
  if (!source.adaptive.empty()) {
    if (source.adaptive != "on" && source.adaptive != "off") fail("--adaptive {}: must be on or off", source.adaptive);
    config.speculative.adaptive = source.adaptive == "on";
  }
  validate_config(config);
  return config;
}

std::vector<int32_t> parse_id_list(const std::string& text, const std::string& option) {
  std::vector<int32_t> ids;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    std::string item = text.substr(start, end - start);
    while (!item.empty() && item.front() == ' ') item.erase(item.begin());
    while (!item.empty() && item.back() == ' ') item.pop_back();
    int32_t value = 0;
    auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
    if (item.empty() || ec != std::errc() || ptr != item.data() + item.size())
      fail("{} '{}': '{}' is not a token id (expected comma-separated integers)", option, text, item);
    ids.push_back(value);
    start = end + 1;
  }
  return ids;
}

uint64_t parse_uint64(const std::string& text, const std::string& option) {
  uint64_t value = 0;
  // from_chars refuses a sign for unsigned types and reports overflow, unlike a stream cast.
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size())
    fail("{} {}: must be an integer in [0, {}]", option, text, std::numeric_limits<uint64_t>::max());
  return value;
}

bool parse_command_line(const std::vector<std::string>& args, const po::options_description& desc,
                        po::variables_map& vm, const std::string& usage, std::vector<po::option>* ordered) {
  try {
    po::parsed_options parsed = po::command_line_parser(args).options(desc).run();
    if (ordered) *ordered = parsed.options;
    po::store(parsed, vm);
    if (vm.count("help")) {
      std::cout << usage << "\n\n" << desc << "\n";
      return false;
    }
    po::notify(vm);
  } catch (const po::error& e) {
    fail("{}", e.what());
  }
  return true;
}

}  // namespace drift::app
