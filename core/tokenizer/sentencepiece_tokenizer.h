#pragma once
// SentencePieceTokenizer: a checkpoint's `tokenizer.model` through libsentencepiece, so encoding
// is exactly sentencepiece's (what HF's slow LlamaTokenizer wraps).
#include <memory>
#include <string>

#include "core/tokenizer/tokenizer.h"

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace drift {

class SentencePieceTokenizer final : public Tokenizer {
 public:
  // Throws DriftError naming `model_path` when it cannot be read or parsed.
  explicit SentencePieceTokenizer(const std::string& model_path);
  ~SentencePieceTokenizer() override;

  // Plain sentencepiece encoding (no BOS/EOS).
  std::vector<int32_t> encode(std::string_view text) const override;
  // sentencepiece decoding: the dummy-prefix space of the first piece is dropped and control
  // tokens (<s>, </s>) decode to nothing; ids outside the vocabulary are skipped, as HF does.
  std::string decode(const std::vector<int32_t>& ids) const override;
  int32_t vocab_size() const override;
  std::optional<int32_t> token_to_id(std::string_view token) const override;
  // The piece with "▁" as spaces, a byte piece's byte; control, unknown and unused pieces have none.
  std::optional<std::string> token_bytes(int32_t id) const override;

 private:
  std::string path_;
  std::unique_ptr<sentencepiece::SentencePieceProcessor> processor_;
};

}  // namespace drift
