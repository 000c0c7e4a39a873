#pragma once
// The built-in `full` verification policy: every sequence verifies against its whole block
// table, and full verification is therefore always what runs. Written against the same C
// interface as external plugins (a static descriptor), so PluginHost treats it like one.
#include <string_view>

#include "drift/plugin.h"

namespace drift {

// The descriptor of a built-in plugin by name ("full"), or nullptr.
const drift_plugin_t* builtin_plugin(std::string_view name);

}  // namespace drift
