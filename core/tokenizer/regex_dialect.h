#pragma once
// tokenizer.json regexes are written for Oniguruma / Rust regex (what HF tokenizers runs); the
// engine runs them with PCRE2. The two agree on the constructs real files use except `\s`:
// PCRE2 with UCP also matches U+180E MONGOLIAN VOWEL SEPARATOR (a legacy space, no longer
// White_Space since Unicode 6.3), so Llama-3/Qwen text holding it would split differently.
#include <string>
#include <string_view>

namespace drift {

// `pattern` with every `\s` / `\S` escape (inside character classes too) replaced by
// `\p{White_Space}` / `\P{White_Space}`. Escaped backslashes (`\\s` is a backslash then "s")
// and `\Q...\E` quoted text are left alone.
std::string with_white_space_property(std::string_view pattern);

}  // namespace drift
