// libFuzzer target: a Hugging Face tokenizer.json (core/tokenizer/tokenizer_json_loader.h).
// The bytes are parsed as JSON by drift::parse_json_input (as load_tokenizer_json does), then
// loaded with drift::tokenizer_from_json; a DriftError is how the loader refuses a document. A
// tokenizer that loads then encodes a few fixed strings and a slice of the input, and decodes
// (whole and streamed) the resulting ids and some ids chosen from the input bytes in
// [0, vocab_size()). Any other exception, a crash or a sanitizer report is a finding.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_input.h"
#include "core/tokenizer/streaming_decoder.h"
#include "core/tokenizer/tokenizer.h"
#include "core/tokenizer/tokenizer_json_loader.h"

namespace {

void exercise(const drift::Tokenizer& tok, const uint8_t* data, size_t size) {
  static const char* const kTexts[] = {
      "", "Hello world", "  leading and trailing  ", "Once upon a time, there was a little girl.\n\n",
      "naïve café déjà vu – ½ ≠ 2 😀 \xE4\xBD\xA0\xE5\xA5\xBD", "<s>hi</s><|endoftext|><unk>",
      "12345 3.14 1e10 don't I'll we've", "\t\r\n \x01\x7f", "\xff\xfe invalid \xc3 utf-8 \xe2\x82"};
  std::vector<std::string_view> texts(std::begin(kTexts), std::end(kTexts));
  // A slice of the input itself (its tail: the head is mostly JSON syntax).
  texts.emplace_back(reinterpret_cast<const char*>(data) + size / 2, std::min<size_t>(size - size / 2, 256));

  const int32_t vocab = tok.vocab_size();
  for (std::string_view text : texts) {
    std::vector<int32_t> ids = tok.encode(text);
    (void)tok.decode(ids);
    (void)tok.encode_prompt(text);
    (void)tok.unsettled_tail_length(ids);
    (void)tok.token_to_id(text);
  }
  if (vocab <= 0) return;
  std::vector<int32_t> ids;
  for (size_t i = 0; i + 4 <= size && ids.size() < 64; i += 4) {
    uint32_t v = uint32_t(data[i]) | uint32_t(data[i + 1]) << 8 | uint32_t(data[i + 2]) << 16 |
                 uint32_t(data[i + 3]) << 24;
    ids.push_back(static_cast<int32_t>(v % static_cast<uint32_t>(vocab)));
  }
  ids.push_back(0);
  ids.push_back(vocab - 1);
  (void)tok.decode(ids);
  (void)tok.unsettled_tail_length(ids);
  drift::StreamingDecoder stream(tok);
  for (int32_t id : ids) (void)stream.push({id});
  (void)stream.finish();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The production path: load_tokenizer_json reads through parse_json_input (repeated keys and
  // runaway nesting refused), then tokenizer_from_json.
  std::unique_ptr<drift::Tokenizer> tok;
  try {
    const nlohmann::json doc =
        drift::parse_json_input(std::string_view(reinterpret_cast<const char*>(data), size), "tokenizer.json");
    tok = drift::tokenizer_from_json(doc, "tokenizer.json");
  } catch (const drift::DriftError&) {
    return 0;
  }
  try {
    exercise(*tok, data, size);
  } catch (const drift::DriftError&) {
  }
  return 0;
}
