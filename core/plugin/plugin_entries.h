#pragma once
// The [[plugins]] entries of a config file, read on their own (for `drift plugins list`).
// Same rules as the full config loader: name, path (relative to the config's folder) and the
// entry's sub-table named after the plugin ([plugins.<name>] right below it) as settings.
#include <string>
#include <vector>

#include "core/config.h"

namespace drift {

// Throws DriftError naming the file and the key when the file or an entry is malformed.
std::vector<PluginEntry> read_plugin_entries(const std::string& config_path);

}  // namespace drift
