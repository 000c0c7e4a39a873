#pragma once
// Tokenizer: text <-> token ids, exactly as the checkpoint's Hugging Face tokenizer does.
// Implementations: SentencePiece `tokenizer.model` (libsentencepiece) and `tokenizer.json`
// (BPE). `load_tokenizer(dir)` picks one from the files present in a checkpoint directory.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace drift {

// Special tokens and BOS/EOS policy, merged from config.json, generation_config.json and
// tokenizer_config.json (later files refine earlier ones; see special_tokens.cpp).
struct SpecialTokens {
  std::optional<int32_t> bos_id;
  std::vector<int32_t> eos_ids;  // generation stops at any of these
  std::optional<int32_t> pad_id;
  bool add_bos = false;          // prepend BOS when encoding a prompt for the model
  bool add_eos = false;
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  // Plain encoding, no special tokens added (HF add_special_tokens=False).
  virtual std::vector<int32_t> encode(std::string_view text) const = 0;
  // Text of a whole id sequence (HF decode, skip_special_tokens=False semantics for ids that are
  // ordinary tokens; special/control tokens decode to their content or nothing as HF does).
  virtual std::string decode(const std::vector<int32_t>& ids) const = 0;
  virtual int32_t vocab_size() const = 0;
  // Id of a token given by its text (vocabulary entry or added/special token content), used to
  // resolve tokenizer_config.json's bos_token/eos_token strings. Default: unknown.
  virtual std::optional<int32_t> token_to_id(std::string_view /*token*/) const { return std::nullopt; }
  // How many of the last `ids` may still decode to different text once more ids follow, apart
  // from a truncated UTF-8 character at the end (the decoded text itself shows that one). For
  // the streaming decoder: HF's ByteFallback decoder turns a whole run of byte tokens into one
  // U+FFFD per byte as soon as any byte of the run is invalid, so the text of a run is only
  // known once a token that is not a byte ends it. Default: none.
  virtual size_t unsettled_tail_length(const std::vector<int32_t>& /*ids*/) const { return 0; }
  // The bytes token `id` adds to the text in the middle of an output, raw (a byte token's byte, a
  // piece of a UTF-8 character as it is), or nullopt for a special or control token and an
  // unknown id: what a grammar constrains (core/grammar). Default: none.
  virtual std::optional<std::string> token_bytes(int32_t /*id*/) const { return std::nullopt; }

  const SpecialTokens& special_tokens() const { return special_; }
  void set_special_tokens(SpecialTokens special) { special_ = std::move(special); }

  // What the engine feeds the model for a prompt: BOS/EOS added as the checkpoint says.
  std::vector<int32_t> encode_prompt(std::string_view text) const;

 protected:
  SpecialTokens special_;
};

// Loads the tokenizer of a checkpoint directory: tokenizer.json if present, else tokenizer.model.
// Throws DriftError naming the directory when neither exists or a file is malformed.
std::unique_ptr<Tokenizer> load_tokenizer(const std::string& dir);
// The same, or nullptr when the directory holds no tokenizer file (a model run on token ids).
std::unique_ptr<Tokenizer> load_tokenizer_if_present(const std::string& dir);
// The special tokens a checkpoint directory's engine uses: its tokenizer's when it has one
// (token strings resolved through it), else those of its config files.
SpecialTokens checkpoint_special_tokens(const std::string& dir, const Tokenizer* tokenizer);

// Reads config.json / generation_config.json / tokenizer_config.json of `dir` (each optional).
// Token strings in tokenizer_config.json are resolved through its added_tokens_decoder only.
SpecialTokens load_special_tokens(const std::string& dir);
// Same, starting from `tokenizer.special_tokens()` (the defaults its files imply, e.g. a
// SentencePiece model adds BOS) and resolving token strings through the tokenizer.
SpecialTokens load_special_tokens(const std::string& dir, const Tokenizer& tokenizer);

}  // namespace drift
