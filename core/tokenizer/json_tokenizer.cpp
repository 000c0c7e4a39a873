#include "core/tokenizer/json_tokenizer.h"

#include "core/error.h"
#include "core/tokenizer/utf8.h"

namespace drift {

JsonTokenizer::JsonTokenizer(JsonTokenizerParts parts) : parts_(std::move(parts)) {
  DRIFT_CHECK(parts_.model != nullptr, "JsonTokenizer needs a model");
}

std::vector<int32_t> JsonTokenizer::encode(std::string_view text) const {
  // Validated once here so the regex engine can skip its own per-call UTF-8 checks.
  utf8::require_valid(text, "text to encode");
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 4);
  for (const Segment& seg : parts_.added.split(text, /*normalized=*/false)) {
    if (seg.token_id) ids.push_back(*seg.token_id);
    else encode_text(text.substr(seg.begin, seg.end - seg.begin), seg.begin == 0, ids);
  }
  return ids;
}

// One stretch of text between raw-matched added tokens.
void JsonTokenizer::encode_text(std::string_view text, bool at_input_start, std::vector<int32_t>& out) const {
  std::string normalized(text);
  if (parts_.normalizer) parts_.normalizer->normalize(normalized);
  std::vector<PreToken> pieces;
  for (const Segment& seg : parts_.added.split(normalized, /*normalized=*/true)) {
    if (seg.token_id) {
      out.push_back(*seg.token_id);
      continue;
    }
    pieces.assign(1, {normalized.substr(seg.begin, seg.end - seg.begin), at_input_start && seg.begin == 0});
    if (parts_.pre_tokenizer) parts_.pre_tokenizer->pre_tokenize(pieces);
    for (const PreToken& piece : pieces) parts_.model->encode_word(piece.text, out);
  }
}

const std::string* JsonTokenizer::token_string(int32_t id) const {
  if (const AddedToken* added = parts_.added.find_id(id)) return &added->content;
  return parts_.model->id_to_token(id);
}

std::string JsonTokenizer::decode(const std::vector<int32_t>& ids) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int32_t id : ids)
    if (const std::string* token = token_string(id)) tokens.push_back(*token);
  if (!parts_.decoder) {
    std::string joined;
    for (size_t i = 0; i < tokens.size(); ++i) {
      if (i) joined += ' ';
      joined += tokens[i];
    }
    return joined;
  }
  parts_.decoder->decode_chain(tokens);
  std::string text;
  for (const std::string& t : tokens) text += t;
  return text;
}

size_t JsonTokenizer::unsettled_tail_length(const std::vector<int32_t>& ids) const {
  if (!parts_.decoder) return 0;
  size_t unsettled = 0;
  for (size_t i = ids.size(); i-- > 0;) {
    const std::string* token = token_string(ids[i]);
    if (!token) continue;  // unknown ids are dropped before decoding, so they do not end a run
    if (!parts_.decoder->depends_on_following(*token)) break;
    unsettled = ids.size() - i;
  }
  return unsettled;
}

std::optional<std::string> JsonTokenizer::token_bytes(int32_t id) const {
  if (const AddedToken* added = parts_.added.find_id(id); added && added->special) return std::nullopt;
  const std::string* token = token_string(id);
  if (!token) return std::nullopt;
  if (!parts_.decoder) return *token;
  std::vector<std::string> pieces{"a", *token};
  parts_.decoder->decode_chain_raw(pieces);
  std::string text;
  for (const std::string& p : pieces) text += p;
  if (!text.starts_with('a')) return std::nullopt;  // a decoder that rewrites the anchor: no safe answer
  return text.substr(1);
}

int32_t JsonTokenizer::vocab_size() const {
  return std::max(parts_.model->size(), parts_.added.max_id() + 1);
}

std::optional<int32_t> JsonTokenizer::token_to_id(std::string_view token) const {
  if (auto id = parts_.added.find_content(token)) return id;
  return parts_.model->token_to_id(token);
}

}  // namespace drift
