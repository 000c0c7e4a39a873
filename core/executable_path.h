#pragma once
// The running executable's own path. What ships with drift (its plugins, its default prompt set)
// is found relative to it, so an installed, moved or copied tree works wherever it lands: no
// build or install path is compiled in.
#include <filesystem>

namespace drift {

// /proc/self/exe with links resolved; empty when it cannot be read (then nothing is found
// beside the executable, and callers fall back to what the environment says).
std::filesystem::path executable_path();

}  // namespace drift
