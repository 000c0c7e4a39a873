#include "core/tokenizer/tokenizer_json_loader.h"

#include <fstream>
#include <sstream>

#include "core/error.h"
#include "core/json_input.h"
#include "core/tokenizer/bpe_model.h"
#include "core/tokenizer/json_fields.h"
#include "core/tokenizer/json_tokenizer.h"
#include "core/tokenizer/post_processor.h"

namespace drift {

using nlohmann::json;

namespace {

const json& field_or_null(const json& doc, const char* key) {
  static const json null_value;
  auto it = doc.find(key);
  return it == doc.end() ? null_value : *it;
}

std::unique_ptr<BpeModel> make_model(const json& doc) {
  // Not "tokenizer.model is missing": that reads as the SentencePiece file of the same name.
  const json& model = field_or_null(doc, "model");
  if (model.is_null()) fail("top-level field 'model' is missing");
  // Old files omit model.type; HF then recognises BPE by its "merges" field.
  std::string type = model.is_object() && model.contains("type") ? json_fields::type_of(model, "model")
                     : model.is_object() && model.contains("merges") ? "BPE" : json_fields::type_of(model, "model");
  if (type != "BPE") json_fields::unknown_type("model", type, "BPE");
  return std::make_unique<BpeModel>(model, "model");
}

}  // namespace

std::unique_ptr<Tokenizer> tokenizer_from_json(const json& doc, const std::string& source) {
  try {
    if (!doc.is_object()) fail("top level must be a JSON object, got {}", doc.type_name());
    JsonTokenizerParts parts;
    parts.model = make_model(doc);
    parts.added = AddedTokens(field_or_null(doc, "added_tokens"), "added_tokens");
    const int64_t id_limit = token_id_limit(static_cast<size_t>(parts.model->size()) + parts.added.size());
    if (parts.added.max_id() >= id_limit)
      fail("added_tokens: id {} is too large: ids of this {}-token vocabulary must be below {}", parts.added.max_id(),
           static_cast<size_t>(parts.model->size()) + parts.added.size(), id_limit);
    parts.normalizer = make_normalizer(field_or_null(doc, "normalizer"), "normalizer");
    parts.pre_tokenizer = make_pre_tokenizer(field_or_null(doc, "pre_tokenizer"), "pre_tokenizer");
    parts.decoder = make_decoder(field_or_null(doc, "decoder"), "decoder");
    SpecialTokens defaults = special_tokens_from_post_processor(field_or_null(doc, "post_processor"), "post_processor");
    auto tokenizer = std::make_unique<JsonTokenizer>(std::move(parts));
    tokenizer->set_special_tokens(std::move(defaults));
    return tokenizer;
  } catch (const DriftError& e) {
    fail("{}: {}", source, e.what());
  }
}

std::unique_ptr<Tokenizer> load_tokenizer_json(const std::string& path) {
  return tokenizer_from_json(read_json_file(path), path);
}

}  // namespace drift
