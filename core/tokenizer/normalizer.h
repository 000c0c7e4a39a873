#pragma once
// tokenizer.json normalizers: rewrite a text segment before pre-tokenization. Supported are the
// ones real checkpoints use: NFC/NFD/NFKC/NFKD (Qwen), Prepend + Replace (SentencePiece-style
// BPE such as Llama-2/Mistral tokenizer.json), Strip, and Sequence of these.
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

namespace drift {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  virtual void normalize(std::string& text) const = 0;
};

// Builds the normalizer described by `spec` (null -> nullptr). `field` names it in errors.
std::unique_ptr<Normalizer> make_normalizer(const nlohmann::json& spec, const std::string& field);

}  // namespace drift
