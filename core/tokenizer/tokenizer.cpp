#include "core/tokenizer/tokenizer.h"

#include <filesystem>

#include "core/error.h"
#include "core/tokenizer/sentencepiece_tokenizer.h"
#include "core/tokenizer/tokenizer_json_loader.h"

namespace drift {

std::vector<int32_t> Tokenizer::encode_prompt(std::string_view text) const {
  std::vector<int32_t> ids;
  if (special_.add_bos) {
    if (!special_.bos_id) fail("the tokenizer is set to add a BOS token but no BOS token id is known");
    ids.push_back(*special_.bos_id);
  }
  std::vector<int32_t> body = encode(text);
  ids.insert(ids.end(), body.begin(), body.end());
  if (special_.add_eos) {
    if (special_.eos_ids.empty()) fail("the tokenizer is set to add an EOS token but no EOS token id is known");
    ids.push_back(special_.eos_ids.front());
  }
  return ids;
}

std::unique_ptr<Tokenizer> load_tokenizer(const std::string& dir) {
  namespace fs = std::filesystem;
  const fs::path root(dir);
  if (!fs::is_directory(root)) fail("tokenizer directory {} does not exist", dir);
  std::unique_ptr<Tokenizer> tokenizer;
  // tokenizer.json wins: it is what HF's fast tokenizer (the default) loads when both exist.
  if (fs::exists(root / "tokenizer.json")) {
    tokenizer = load_tokenizer_json((root / "tokenizer.json").string());
  } else if (fs::exists(root / "tokenizer.model")) {
    tokenizer = std::make_unique<SentencePieceTokenizer>((root / "tokenizer.model").string());
  } else {
    fail("no tokenizer in {}: expected tokenizer.json or tokenizer.model", dir);
  }
  tokenizer->set_special_tokens(load_special_tokens(dir, *tokenizer));
  return tokenizer;
}

std::unique_ptr<Tokenizer> load_tokenizer_if_present(const std::string& dir) {
  namespace fs = std::filesystem;
  if (!fs::exists(fs::path(dir) / "tokenizer.json") && !fs::exists(fs::path(dir) / "tokenizer.model")) return nullptr;
  return load_tokenizer(dir);
}

SpecialTokens checkpoint_special_tokens(const std::string& dir, const Tokenizer* tokenizer) {
  return tokenizer ? tokenizer->special_tokens() : load_special_tokens(dir);
}

}  // namespace drift
