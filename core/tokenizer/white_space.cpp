#include "core/tokenizer/white_space.h"

#include <string>

#include "core/tokenizer/regex.h"
#include "core/tokenizer/utf8.h"

namespace drift {

bool is_white_space(char32_t cp) {
  if (cp == ' ') return true;  // by far the most common case: skip the regex
  static const Regex white_space(R"(\p{White_Space})", false, "White_Space");
  std::string encoded;
  utf8::append_code_point(encoded, cp);
  return white_space.matches_whole(encoded);
}

}  // namespace drift
