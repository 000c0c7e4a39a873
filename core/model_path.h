#pragma once
// What a model path (model.path, --model) names, for errors that say what is wrong with it.
#include <string>

namespace drift {

// "" when `path` is a folder (a checkpoint's), else what it is instead: missing, or a file (a
// common slip: the path of model.safetensors or config.json instead of their folder). Callers
// put the key or option and the value in front.
std::string check_model_path(const std::string& path);

}  // namespace drift
