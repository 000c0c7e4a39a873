#include "core/tokenizer/post_processor.h"

#include "core/error.h"
#include "core/tokenizer/json_fields.h"

namespace drift {
namespace {

using nlohmann::json;

// Id of a template's {"SpecialToken": {"id": "<s>"}} entry via the "special_tokens" table.
int32_t special_token_id(const json& processor, const json& item, const std::string& field) {
  using namespace json_fields;
  const std::string name = require_string(item["SpecialToken"], "id", field);
  const json& table = require(processor, "special_tokens", field);
  const json& entry = require(table, name, field + ".special_tokens");
  const json& ids = require(entry, "ids", fmt::format("{}.special_tokens['{}']", field, name));
  if (!ids.is_array() || ids.size() != 1 || !ids[0].is_number_integer())
    fail("{}.special_tokens['{}'].ids must hold exactly one id, got {}", field, name, ids.dump());
  return ids[0].get<int32_t>();
}

SpecialTokens from_template(const json& processor, const std::string& field) {
  using namespace json_fields;
  const json& single = require(processor, "single", field);
  if (!single.is_array()) fail("{}.single must be a list", field);
  SpecialTokens out;
  bool seen_sequence = false;
  for (size_t i = 0; i < single.size(); ++i) {
    const json& item = single[i];
    const std::string where = fmt::format("{}.single[{}]", field, i);
    if (item.is_object() && item.contains("Sequence")) {
      seen_sequence = true;
    } else if (item.is_object() && item.contains("SpecialToken")) {
      int32_t id = special_token_id(processor, item, where);
      if (!seen_sequence && !out.add_bos) {
        out.bos_id = id;
        out.add_bos = true;
      } else if (seen_sequence && !out.add_eos) {
        out.eos_ids = {id};
        out.add_eos = true;
      }
    } else {
      fail("{} must be {{\"SpecialToken\": ...}} or {{\"Sequence\": ...}}, got {}", where, item.dump());
    }
  }
  return out;
}

}  // namespace

SpecialTokens special_tokens_from_post_processor(const json& spec, const std::string& field) {
  using namespace json_fields;
  if (spec.is_null()) return {};
  const std::string type = type_of(spec, field);
  if (type == "TemplateProcessing") return from_template(spec, field);
  if (type == "Sequence") {  // e.g. Llama-3: [ByteLevel, TemplateProcessing]
    const json& list = require(spec, "processors", field);
    if (!list.is_array()) fail("{}.processors must be a list", field);
    for (size_t i = 0; i < list.size(); ++i) {
      SpecialTokens found = special_tokens_from_post_processor(list[i], fmt::format("{}.processors[{}]", field, i));
      if (found.add_bos || found.add_eos) return found;
    }
    return {};
  }
  // ByteLevel, RobertaProcessing, BertProcessing...: only TemplateProcessing matters for
  // decoder-only checkpoints; the others add nothing the engine feeds a causal LM.
  return {};
}

}  // namespace drift
