#pragma once
// A SentencePiece-style tokenizer.json (Prepend/Replace normalizer, BPE with byte_fallback,
// Replace/ByteFallback/Fuse/Strip decoder) built from a SentencePiece model the way HF's
// LlamaConverter does: vocab = pieces, merges = splits of each piece into two pieces, ordered by
// the merged piece's score. No such file is in ../shared; tests build one from
// llama2/tokenizer.model.
#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <sentencepiece_processor.h>

#include "core/tokenizer/tokenizer_json_loader.h"
#include "core/tokenizer/utf8.h"
#include "support/test_data.h"

namespace drift::test {

namespace sentencepiece_style_detail {

using nlohmann::json;

// Character boundaries of a UTF-8 piece (HF splits merges by characters, not bytes).
inline std::vector<size_t> char_boundaries(const std::string& piece) {
  std::vector<size_t> cuts;
  size_t pos = 0;
  while (pos < piece.size()) {
    utf8::next_code_point(piece, pos);
    if (pos < piece.size()) cuts.push_back(pos);
  }
  return cuts;
}

inline json merges_of(const sentencepiece::SentencePieceProcessor& sp, const json& vocab) {
  std::vector<int> order;  // normal pieces by descending score (stable on ties)
  for (int id = 0; id < sp.GetPieceSize(); ++id)
    if (!sp.IsControl(id) && !sp.IsUnknown(id) && !sp.IsByte(id)) order.push_back(id);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return sp.GetScore(a) > sp.GetScore(b); });
  json merges = json::array();
  for (int id : order) {
    const std::string piece = sp.IdToPiece(id);
    std::vector<std::pair<int, int>> local;
    for (size_t cut : char_boundaries(piece)) {
      std::string left = piece.substr(0, cut), right = piece.substr(cut);
      if (vocab.contains(left) && vocab.contains(right)) local.emplace_back(vocab[left].get<int>(), vocab[right].get<int>());
    }
    std::sort(local.begin(), local.end());
    for (auto [l, r] : local) merges.push_back(json::array({sp.IdToPiece(l), sp.IdToPiece(r)}));
  }
  return merges;
}

}  // namespace sentencepiece_style_detail

// The tokenizer.json document HF would write for `sp`.
inline nlohmann::json sentencepiece_style_json(const sentencepiece::SentencePieceProcessor& sp) {
  using namespace sentencepiece_style_detail;
  json vocab = json::object();
  for (int id = 0; id < sp.GetPieceSize(); ++id) vocab[sp.IdToPiece(id)] = id;
  json doc = json::parse(R"({
    "added_tokens": [],
    "normalizer": {"type": "Sequence", "normalizers": [
      {"type": "Prepend", "prepend": "▁"}, {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]},
    "pre_tokenizer": null, "post_processor": null,
    "decoder": {"type": "Sequence", "decoders": [
      {"type": "Replace", "pattern": {"String": "▁"}, "content": " "}, {"type": "ByteFallback"},
      {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
    "model": {"type": "BPE", "unk_token": "<unk>", "fuse_unk": true, "byte_fallback": true}
  })");
  doc["model"]["merges"] = merges_of(sp, vocab);
  doc["model"]["vocab"] = std::move(vocab);
  return doc;
}

// llama2/tokenizer.model converted to a SentencePiece-style tokenizer.json, loaded once.
inline const Tokenizer& llama2_as_tokenizer_json() {
  static const std::unique_ptr<Tokenizer> tokenizer = [] {
    sentencepiece::SentencePieceProcessor sp;
    const std::string path = test_data_path("tokenizers/llama2/tokenizer.model");
    if (!sp.Load(path).ok()) throw std::runtime_error("cannot load " + path);
    return tokenizer_from_json(sentencepiece_style_json(sp), "llama2-converted");
  }();
  return *tokenizer;
}

}  // namespace drift::test
