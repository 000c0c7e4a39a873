#pragma once
// tokenizer.json pre-tokenizers: cut a normalized segment into words that the model encodes
// independently. Supported: Split (the file's own regex), ByteLevel, Metaspace, Digits,
// Sequence - what Llama-3, Qwen and SentencePiece-style files use.
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace drift {

struct PreToken {
  std::string text;
  bool at_input_start = false;  // begins at offset 0 of the input (Metaspace prepend "first")
};

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Replaces every piece by its sub-pieces (empty pieces are dropped), as HF's split() does.
  virtual void pre_tokenize(std::vector<PreToken>& pieces) const = 0;
};

// Builds the pre-tokenizer described by `spec` (null -> nullptr). `field` names it in errors.
std::unique_ptr<PreTokenizer> make_pre_tokenizer(const nlohmann::json& spec, const std::string& field);

}  // namespace drift
