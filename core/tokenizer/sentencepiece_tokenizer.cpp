#include "core/tokenizer/sentencepiece_tokenizer.h"

#include <sentencepiece_processor.h>

#include "core/error.h"
#include "core/tokenizer/utf8.h"

namespace drift {

SentencePieceTokenizer::SentencePieceTokenizer(const std::string& model_path)
    : path_(model_path), processor_(std::make_unique<sentencepiece::SentencePieceProcessor>()) {
  auto status = processor_->Load(model_path);
  if (!status.ok()) fail("cannot load SentencePiece model {}: {}", model_path, status.ToString());
  // The HF default the engine follows for a bare SentencePiece model (LlamaTokenizer): add BOS.
  // tokenizer_config.json may override this (see special_tokens.cpp).
  SpecialTokens defaults;
  if (processor_->bos_id() >= 0) defaults.bos_id = processor_->bos_id();
  if (processor_->eos_id() >= 0) defaults.eos_ids.push_back(processor_->eos_id());
  if (processor_->pad_id() >= 0) defaults.pad_id = processor_->pad_id();
  defaults.add_bos = defaults.bos_id.has_value();
  set_special_tokens(std::move(defaults));
}

SentencePieceTokenizer::~SentencePieceTokenizer() = default;

std::vector<int32_t> SentencePieceTokenizer::encode(std::string_view text) const {
  // sentencepiece silently mangles invalid UTF-8; reject it with a clear message instead.
  utf8::require_valid(text, "text to encode");
  std::vector<int> ids;
  auto status = processor_->Encode(absl::string_view(text.data(), text.size()), &ids);
  if (!status.ok()) fail("SentencePiece encode failed ({}): {}", path_, status.ToString());
  return {ids.begin(), ids.end()};
}

std::string SentencePieceTokenizer::decode(const std::vector<int32_t>& ids) const {
  const int32_t size = vocab_size();
  std::vector<int> known;
  known.reserve(ids.size());
  for (int32_t id : ids)
    if (id >= 0 && id < size) known.push_back(id);
  std::string text;
  auto status = processor_->Decode(known, &text);
  if (!status.ok()) fail("SentencePiece decode failed ({}): {}", path_, status.ToString());
  return text;
}

std::optional<std::string> SentencePieceTokenizer::token_bytes(int32_t id) const {
  if (id < 0 || id >= vocab_size()) return std::nullopt;
  if (processor_->IsControl(id) || processor_->IsUnknown(id) || processor_->IsUnused(id)) return std::nullopt;
  const std::string piece = processor_->IdToPiece(id);
  if (processor_->IsByte(id)) return std::string(1, static_cast<char>(std::stoi(piece.substr(3, 2), nullptr, 16)));
  std::string text;
  static constexpr std::string_view kSpace = "\xE2\x96\x81";
  for (size_t i = 0; i < piece.size();) {
    if (piece.compare(i, kSpace.size(), kSpace) == 0) {
      text += ' ';
      i += kSpace.size();
    } else {
      text += piece[i++];
    }
  }
  return text;
}

int32_t SentencePieceTokenizer::vocab_size() const { return processor_->GetPieceSize(); }

std::optional<int32_t> SentencePieceTokenizer::token_to_id(std::string_view token) const {
  int id = processor_->PieceToId(absl::string_view(token.data(), token.size()));
  // PieceToId answers unk_id for unknown pieces; only the unk piece itself maps there honestly.
  if (id == processor_->unk_id() && processor_->IdToPiece(id) != token) return std::nullopt;
  return id;
}

}  // namespace drift
