#pragma once
// Descriptor validation: how the host reads what a plugin's entry point returned, whatever 1.x
// header the plugin was compiled against.
#include <string>

#include "drift/plugin.h"

namespace drift {

// Copies the plugin's descriptor (its struct_size bytes at most) into a zeroed descriptor of
// this host's layout -- fields an older plugin lacks read as NULL, a newer plugin's extra tail
// is ignored -- then checks the ABI major, identity and the hooks each declared kind requires.
// Throws DriftError naming `where` (the library path) and what is wrong; a major mismatch names
// both versions.
drift_plugin_t adopt_descriptor(const drift_plugin_t* raw, const std::string& where);

// Name of the first hook the kinds require that `desc` lacks, or nullptr.
const char* missing_required_hook(const drift_plugin_t& desc);

}  // namespace drift
