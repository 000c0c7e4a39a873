#include "apps/plugin_stats_json.h"

namespace drift::app {

nlohmann::json plugin_stats_json(const Engine& engine) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [name, text] : engine.plugin_stats()) {
    nlohmann::json parsed = nlohmann::json::parse(text, nullptr, false);
    out[name] = parsed.is_discarded() ? nlohmann::json(text) : parsed;
  }
  return out;
}

nlohmann::json plugin_memory_json(const Engine& engine) {
  nlohmann::json out = nlohmann::json::object();
  for (const PluginInfo& info : engine.plugin_infos())
    if (info.enabled && info.memory_limit >= 0)
      out[info.name] = {{"declared_bytes", info.memory_limit}, {"peak_bytes", info.memory_peak}};
  return out;
}

}  // namespace drift::app
