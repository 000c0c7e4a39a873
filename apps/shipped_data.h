#pragma once
// Files that ship with DriftEngine (e.g. datasets/mt_bench.jsonl, drift bench's default prompt
// set), found relative to the running executable rather than the working directory: beside the
// build tree (build/apps/drift -> the checkout's datasets/) or the install tree
// (PREFIX/bin/drift -> PREFIX/share/drift/datasets/).
#include <string>

namespace drift::app {

// The first existing candidate for `relative` (e.g. "datasets/mt_bench.jsonl"); when none exists,
// the build-tree candidate, so the caller's "cannot open" error names a real place to look.
std::string shipped_data_file(const std::string& relative);

}  // namespace drift::app
