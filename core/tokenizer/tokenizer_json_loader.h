#pragma once
// Loading a Hugging Face tokenizer.json into a JsonTokenizer. Every problem (missing model,
// unknown component type, bad merges) is a DriftError naming the file and the JSON field.
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "core/tokenizer/tokenizer.h"

namespace drift {

std::unique_ptr<Tokenizer> load_tokenizer_json(const std::string& path);
// Same from an already parsed document; `source` names it in errors.
std::unique_ptr<Tokenizer> tokenizer_from_json(const nlohmann::json& doc, const std::string& source);

}  // namespace drift
