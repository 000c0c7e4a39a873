#pragma once
// tokenizer.json decoders: turn the token strings of an id sequence back into text. Supported:
// ByteLevel (Llama-3, Qwen), and for SentencePiece-style files Metaspace, Replace, ByteFallback,
// Fuse, Strip, plus Sequence. Each step maps a list of strings to a list of strings, as HF's
// decode_chain does; the final list is concatenated.
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace drift {

class Decoder {
 public:
  virtual ~Decoder() = default;
  virtual void decode_chain(std::vector<std::string>& tokens) const = 0;
  // decode_chain without turning invalid UTF-8 into U+FFFD (a token may hold part of a
  // character: Tokenizer::token_bytes wants its bytes).
  virtual void decode_chain_raw(std::vector<std::string>& tokens) const { decode_chain(tokens); }
  // Whether the text of `token` can depend on the tokens that follow it (a byte of a
  // ByteFallback run); see Tokenizer::unsettled_tail_length.
  virtual bool depends_on_following(const std::string& /*token*/) const { return false; }
};

// Builds the decoder described by `spec` (null -> nullptr). `field` names it in errors.
std::unique_ptr<Decoder> make_decoder(const nlohmann::json& spec, const std::string& field);

}  // namespace drift
