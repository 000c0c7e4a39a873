#pragma once
// JsonTokenizer: a Hugging Face tokenizer.json (BPE model) run the way HF tokenizers runs it:
//   added tokens (raw) -> normalizer -> added tokens (normalized) -> pre-tokenizer -> BPE,
// and for decoding: token strings -> decoder chain -> concatenation.
#include <memory>
#include <string>

#include "core/tokenizer/added_tokens.h"
#include "core/tokenizer/bpe_model.h"
#include "core/tokenizer/decoder.h"
#include "core/tokenizer/normalizer.h"
#include "core/tokenizer/pre_tokenizer.h"
#include "core/tokenizer/tokenizer.h"

namespace drift {

struct JsonTokenizerParts {
  AddedTokens added;
  std::unique_ptr<Normalizer> normalizer;      // may be null
  std::unique_ptr<PreTokenizer> pre_tokenizer;  // may be null
  std::unique_ptr<BpeModel> model;
  std::unique_ptr<Decoder> decoder;             // may be null: tokens are joined with spaces
};

class JsonTokenizer final : public Tokenizer {
 public:
  explicit JsonTokenizer(JsonTokenizerParts parts);

  std::vector<int32_t> encode(std::string_view text) const override;
  // Ids unknown to both the model and the added tokens are skipped, as HF does.
  std::string decode(const std::vector<int32_t>& ids) const override;
  int32_t vocab_size() const override;
  std::optional<int32_t> token_to_id(std::string_view token) const override;
  // The trailing run of tokens the decoder may still render differently (ByteFallback bytes).
  size_t unsettled_tail_length(const std::vector<int32_t>& ids) const override;
  // The decoder chain over {"a", token} (an anchor, so strip-first rules act on it, not the
  // token), raw, minus the anchor's "a". Special added tokens have none.
  std::optional<std::string> token_bytes(int32_t id) const override;

 private:
  // The string the decoder sees for `id` (added token content or vocabulary entry), or nullptr
  // for an id the tokenizer does not know.
  const std::string* token_string(int32_t id) const;
  void encode_text(std::string_view text, bool at_input_start, std::vector<int32_t>& out) const;

  JsonTokenizerParts parts_;
};

}  // namespace drift
