#pragma once
// Splitting a string by pattern matches with HF's SplitDelimiterBehavior, shared by the Split,
// ByteLevel (use_regex), Metaspace and Digits pre-tokenizers.
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/tokenizer/regex.h"

namespace drift {

enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

// Parses "Removed", "Isolated", ... ; `field` names the value in errors.
SplitBehavior parse_split_behavior(const std::string& name, const std::string& field);

// Byte ranges [begin, end) of the non-empty pieces of `text`.
std::vector<std::pair<size_t, size_t>> split_by_pattern(std::string_view text, const Regex& pattern,
                                                        SplitBehavior behavior, bool invert = false);

}  // namespace drift
