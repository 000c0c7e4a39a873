#pragma once
// Reading a whole input file (a config, config.json, a tokenizer or index file) with errors that
// name it: `what` says which file it is meant to be ("config file", "safetensors index").
#include <string>

namespace drift {

// The file's bytes. A missing or unreadable file, or a directory, is a DriftError naming `what`
// and the path.
std::string read_text_file(const std::string& path, const std::string& what);

}  // namespace drift
