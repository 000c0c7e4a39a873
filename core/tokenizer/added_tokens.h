#pragma once
// AddedTokens: tokenizer.json's "added_tokens" (special tokens such as <|begin_of_text|> and
// extra vocabulary). They are found in the text before the model runs and are never split:
// leftmost-longest matching as HF's AddedVocabulary does, with its lstrip/rstrip/single_word
// rules. Tokens with "normalized": false match the raw text, the others the normalized text.
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

namespace drift {

struct AddedToken {
  int32_t id = 0;
  std::string content;
  bool special = false;
  bool normalized = false;
  bool lstrip = false;
  bool rstrip = false;
  bool single_word = false;
};

// A piece of the input: either plain text [begin, end) or an added token.
struct Segment {
  size_t begin = 0, end = 0;
  std::optional<int32_t> token_id;
};

class AddedTokens {
 public:
  AddedTokens();
  // From the "added_tokens" list; `field` names it in errors.
  AddedTokens(const nlohmann::json& list, const std::string& field);
  AddedTokens(AddedTokens&&) noexcept;
  AddedTokens& operator=(AddedTokens&&) noexcept;
  ~AddedTokens();

  // Splits `text` around the tokens of one pass: `normalized` false -> tokens matched on raw
  // text, true -> tokens matched after normalization.
  std::vector<Segment> split(std::string_view text, bool normalized) const;

  const AddedToken* find_id(int32_t id) const;
  std::optional<int32_t> find_content(std::string_view content) const;
  bool empty() const { return tokens_.empty(); }
  size_t size() const { return tokens_.size(); }
  int32_t max_id() const;

 private:
  struct Trie;
  std::vector<AddedToken> tokens_;
  std::unordered_map<int32_t, size_t> by_id_;
  std::unique_ptr<Trie> raw_trie_, normalized_trie_;
};

}  // namespace drift
