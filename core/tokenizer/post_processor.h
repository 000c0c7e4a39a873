#pragma once
// What tokenizer.json's post-processor adds around a single sequence (HF add_special_tokens=True):
// a TemplateProcessing "single" template such as [<|begin_of_text|>, $A] means "add BOS". The
// engine models that as SpecialTokens defaults; tokenizer_config.json can still override them.
#include <string>

#include <nlohmann/json.hpp>

#include "core/tokenizer/tokenizer.h"

namespace drift {

// Defaults implied by `spec` (the "post_processor" value; null or ByteLevel add nothing).
SpecialTokens special_tokens_from_post_processor(const nlohmann::json& spec, const std::string& field);

}  // namespace drift
