#include "core/text_file.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace drift {

std::string read_text_file(const std::string& path, const std::string& what) {
  // An ifstream opens a directory without complaint and then reads nothing, which would surface
  // as a confusing parse error (or an empty, default config) far from the cause.
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) fail("{} '{}' is a directory, not a file", what, path);
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot open {} '{}'", what, path);
  std::stringstream text;
  text << in.rdbuf();
  if (in.bad()) fail("cannot read {} '{}'", what, path);
  return text.str();
}

}  // namespace drift
