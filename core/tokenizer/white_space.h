#pragma once
// Unicode White_Space, the property HF tokenizers strips with (Rust's char::is_whitespace: Strip
// normalizer, added-token lstrip/rstrip). Answered by PCRE2's \p{White_Space}, the same tables
// the pre-tokenizer regexes use, rather than a list written here.
namespace drift {

bool is_white_space(char32_t cp);

}  // namespace drift
