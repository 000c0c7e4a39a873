// libFuzzer target: the special-token files of a checkpoint directory, read by
// drift::load_special_tokens(dir) (core/tokenizer/tokenizer.h).
//
// Input layout: the first byte is a mask of the files to write (its low bits, so a digit works
// in hand-written seeds: '7' = all three JSON files, '?' = those plus an empty tokenizer.model),
//   bit 0 config.json, bit 1 generation_config.json, bit 2 tokenizer_config.json,
//   bit 3 tokenizer.model (empty; it only switches the add_bos default),
// and the rest is split on the separator line "\n----\n" into the documents of the selected
// JSON files, in that order (missing documents are empty files, extra text stays in the last).
// The files live in one temporary directory per process, rewritten for every input.
// A DriftError is how the loader refuses input; anything else is a finding.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "core/error.h"
#include "core/tokenizer/tokenizer.h"

namespace {

namespace fs = std::filesystem;

// Created on first use and removed at exit. The path is never destroyed: a function-local static
// object would be destroyed before an atexit handler registered during its construction runs.
const fs::path& work_dir() {
  static const fs::path* const dir = [] {
    std::string pattern = (fs::temp_directory_path() / "drift-fuzz-special-XXXXXX").string();
    if (!mkdtemp(pattern.data())) std::abort();
    return new fs::path(pattern);
  }();
  static const bool cleanup_registered = [] {
    return std::atexit([] {
      std::error_code ec;
      fs::remove_all(*dir, ec);
    }) == 0;
  }();
  (void)cleanup_registered;
  return *dir;
}

void write_file(const fs::path& path, std::string_view text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const fs::path& dir = work_dir();
  const unsigned mask = data[0];
  std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
  constexpr std::string_view kSeparator = "\n----\n";
  static const char* const kFiles[] = {"config.json", "generation_config.json", "tokenizer_config.json"};

  int selected = 0;
  for (int i = 0; i < 3; ++i) selected += (mask >> i) & 1;
  for (int i = 0; i < 3; ++i) {
    const fs::path path = dir / kFiles[i];
    if (!((mask >> i) & 1)) {
      fs::remove(path);
      continue;
    }
    std::string_view doc = rest;
    if (--selected > 0) {  // not the last selected file: cut at the next separator
      size_t cut = rest.find(kSeparator);
      doc = rest.substr(0, cut);
      rest = cut == std::string_view::npos ? std::string_view() : rest.substr(cut + kSeparator.size());
    }
    write_file(path, doc);
  }
  if (mask & 8)
    write_file(dir / "tokenizer.model", "");
  else
    fs::remove(dir / "tokenizer.model");

  try {
    drift::SpecialTokens special = drift::load_special_tokens(dir.string());
    (void)special;
  } catch (const drift::DriftError&) {
  }
  return 0;
}
