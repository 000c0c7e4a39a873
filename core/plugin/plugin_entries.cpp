#include "core/plugin/plugin_entries.h"

#include <filesystem>
#include <sstream>

#include <toml++/toml.h>

#include "core/error.h"

namespace drift {
namespace {

PluginEntry read_entry(const toml::table& entry, const std::string& source,
                       const std::filesystem::path& base_dir) {
  PluginEntry plugin;
  const toml::node* name = entry.get("name");
  if (!name || !name->is_string()) fail("{}: a [[plugins]] entry has no string 'name'", source);
  plugin.name = name->as_string()->get();
  for (const auto& [key, value] : entry) {
    if (key == "name") continue;
    if (key == "path") {
      if (!value.is_string()) fail("{}: plugins.{}.path must be a string", source, plugin.name);
      std::filesystem::path path = value.as_string()->get();
      plugin.path = path.is_absolute() ? path.string() : (base_dir / path).lexically_normal().string();
    } else if (key == plugin.name && value.is_table()) {
      std::ostringstream text;
      text << *value.as_table();
      plugin.settings_toml = text.str();
    } else {
      fail("{}: unknown key 'plugins.{}.{}'", source, plugin.name, key.str());
    }
  }
  return plugin;
}

}  // namespace

std::vector<PluginEntry> read_plugin_entries(const std::string& config_path) {
  toml::table root;
  try {
    root = toml::parse_file(config_path);
  } catch (const toml::parse_error& e) {
    fail("{}: {} (line {})", config_path, e.description(), e.source().begin.line);
  }
  std::vector<PluginEntry> entries;
  const toml::node* list = root.get("plugins");
  if (!list) return entries;
  if (!list->is_array_of_tables())
    fail("{}: 'plugins' must be an array of tables ([[plugins]])", config_path);
  std::filesystem::path base_dir = std::filesystem::path(config_path).parent_path();
  for (const toml::node& node : *list->as_array())
    entries.push_back(read_entry(*node.as_table(), config_path, base_dir));
  return entries;
}

}  // namespace drift
