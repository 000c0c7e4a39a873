#include "core/tokenizer/regex_dialect.h"

namespace drift {

std::string with_white_space_property(std::string_view pattern) {
  std::string out;
  out.reserve(pattern.size() + 32);
  size_t pos = 0;
  while (pos < pattern.size()) {
    if (pattern[pos] != '\\' || pos + 1 == pattern.size()) {
      out += pattern[pos++];
      continue;
    }
    const char escaped = pattern[pos + 1];
    if (escaped == 's') {
      out += "\\p{White_Space}";
    } else if (escaped == 'S') {
      out += "\\P{White_Space}";
    } else if (escaped == 'Q') {  // \Q...\E: literal text, copied up to and including \E
      size_t end = pattern.find("\\E", pos + 2);
      end = end == std::string_view::npos ? pattern.size() : end + 2;
      out.append(pattern.substr(pos, end - pos));
      pos = end;
      continue;
    } else {  // any other escape, "\\" included, stays as it is
      out.append(pattern.substr(pos, 2));
    }
    pos += 2;
  }
  return out;
}

}  // namespace drift
