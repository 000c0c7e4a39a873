#include "core/model_path.h"

#include <filesystem>
#include <system_error>

namespace drift {

std::string check_model_path(const std::string& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (std::filesystem::is_directory(status)) return "";
  if (std::filesystem::is_regular_file(status))
    return "is a file, not a checkpoint folder (give the folder that holds config.json and the *.safetensors)";
  if (std::filesystem::exists(status)) return "is not a folder (a checkpoint is a folder holding config.json)";
  return "the model directory does not exist";
}

}  // namespace drift
