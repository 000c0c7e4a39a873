// `drift plugins list [--config F] [--plugin PATH ...]`: loads the plugins a config names (and
// any given by path) exactly as the engine would, and prints one row per plugin: name, version,
// ABI, kinds, how it was found (FOUND: "install tree" / "build tree" beside the drift binary,
// "DRIFT_PLUGIN_PATH", an explicit "path", "built-in") and the library. A plugin that fails to
// load prints the reason and the command exits 1. When the config names a model, plugins are
// created seeing that model (host->model_info, compute primitives, checkpoint loading) as in
// the engine (the target's shared weights included); only the KV pool (num_pages 0), the model's
// layers and engine state do not exist. With neither --config nor --plugin it lists every plugin a
// config could name without a path (the search folders of core/plugin/plugin_search.h), loaded
// and validated but not created: creating needs the settings only a config gives.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include <boost/program_options.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "apps/command_registry.h"
#include "core/config.h"
#include "core/model/model_config.h"
#include "core/model/model_weights.h"
#include "core/model/rope_frequencies.h"
#include "core/plugin/backend_callbacks.h"
#include "core/plugin/model_weight_service.h"
#include "core/plugin/plugin_host.h"
#include "core/plugin/plugin_search.h"

namespace drift::app {
namespace {

namespace po = boost::program_options;

std::vector<std::string> row(const PluginInfo& p) {
  const std::string found = p.found.empty() ? "-" : p.found;
  if (!p.enabled && p.plugin_name.empty()) return {p.name, "-", "-", "-", found, p.path.empty() ? "-" : p.path};
  return {p.name, p.version, fmt::format("{}.{}", p.abi_major, p.abi_minor), kinds_string(p.kinds), found, p.path};
}

// Prints an aligned table; failed plugins get their reason on the following line.
void print_table(const std::vector<PluginInfo>& plugins) {
  std::vector<std::vector<std::string>> rows = {{"NAME", "VERSION", "ABI", "KINDS", "FOUND", "PATH"}};
  for (const PluginInfo& p : plugins) rows.push_back(row(p));
  std::vector<size_t> width(rows[0].size(), 0);
  for (const auto& r : rows)
    for (size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], r[c].size());
  for (size_t i = 0; i < rows.size(); ++i) {
    std::string line;
    for (size_t c = 0; c < rows[i].size(); ++c)
      line += c + 1 < rows[i].size() ? fmt::format("{:<{}}  ", rows[i][c], width[c]) : rows[i][c];
    std::printf("%s\n", line.c_str());
    if (i > 0 && !plugins[i - 1].error.empty())
      std::printf("  error: %s\n", plugins[i - 1].error.c_str());
  }
}

// What create() sees of the config's model, as the engine would show it (no KV pool yet): the
// compute services and the target's shared weights (host->model_weight: an EAGLE-3 head without
// its own embedding or LM head reads the target's), loaded into `shared` alone, not the layers.
void describe_model(PluginHost& host, const EngineConfig& config, std::unique_ptr<Backend>& backend,
                    ModelWeights& shared) {
  const std::string& dir = config.model.path;
  if (dir.empty()) return;
  const ModelConfig model = load_model_config(dir);
  const auto tokenizer = load_tokenizer_if_present(dir);
  backend = create_backend(config);
  install_compute_callbacks(host.callbacks(), *backend, model, compute_rope_frequencies(model.rope, model.head_dim));
  shared = load_shared_weights(dir, model, *backend);
  install_model_weight_service(host.callbacks(), shared);
  host.set_model_info(make_model_info(model, checkpoint_special_tokens(dir, tokenizer.get()), config.kv_cache.block_size,
                                      0, to_drift_device(backend->device()), to_drift_dtype(backend->compute_dtype())));
}

int list(const std::vector<std::string>& args) {
  po::options_description options(
      "drift plugins list [--config F] [--plugin PATH ...]\n(neither: every plugin drift finds by name)");
  options.add_options()("help,h", "show this help")(
      "config,c", po::value<std::string>(), "config file whose [[plugins]] to load")(
      "plugin,p", po::value<std::vector<std::string>>()->composing(), "a plugin library path (repeatable)");
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(options).run(), vm);
  po::notify(vm);
  if (vm.count("help")) {
    std::cout << options << "\n";
    return 0;
  }
  EngineConfig config;
  if (vm.count("config")) config = load_config(vm["config"].as<std::string>());
  std::vector<PluginEntry> entries = config.plugins;
  if (vm.count("plugin"))
    for (const std::string& path : vm["plugin"].as<std::vector<std::string>>())
      entries.push_back(PluginEntry{"", path, "", false, ""});
  const bool discover = !vm.count("config") && !vm.count("plugin");
  if (discover)
    for (const std::string& name : plugin_names_in(plugin_search_dirs()))
      entries.push_back(PluginEntry{name, "", "", false, ""});

  // The table carries every reason; the engine's [fallback] log lines would only repeat them.
  auto level = spdlog::get_level();
  spdlog::set_level(spdlog::level::off);
  std::vector<PluginInfo> plugins;
  {
    std::unique_ptr<Backend> backend;  // outlives the host: plugins may compute in destroy
    ModelWeights shared;               // the same: the weight service's views are into it
    PluginHost host;
    describe_model(host, config, backend, shared);
    host.load_all(entries, /*create=*/!discover);
    plugins = host.plugins();
  }
  for (const PluginInfo& builtin : PluginHost::builtin_plugins()) plugins.push_back(builtin);
  spdlog::set_level(level);

  print_table(plugins);
  bool failed = std::any_of(plugins.begin(), plugins.end(), [](const PluginInfo& p) { return !p.enabled; });
  return failed ? 1 : 0;
}

int run(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::printf("usage: drift plugins list [--config F] [--plugin PATH ...]\n");
    return args.empty() ? 2 : 0;
  }
  if (args[0] != "list") {
    std::fprintf(stderr, "drift plugins: unknown action '%s' (expected 'list')\n", args[0].c_str());
    return 2;
  }
  return list(std::vector<std::string>(args.begin() + 1, args.end()));
}

}  // namespace

DRIFT_REGISTER_COMMAND(plugins, "plugins", "list plugins: name, version, ABI, kinds, where found", run);

}  // namespace drift::app
