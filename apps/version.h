#pragma once
// `drift --version`: what a bug report needs to name the build.
#include <string>

namespace drift::app {

// Four lines: "drift <version>", "commit: <hash>[-dirty] | unknown", "plugin ABI: <major>.<minor>",
// "CUDA: yes (architectures <list>) | no".
std::string version_text();

}  // namespace drift::app
