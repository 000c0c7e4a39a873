#pragma once
// BpeModel: HF tokenizers' BPE model. A word is split into characters (with byte_fallback /
// unk for characters outside the vocabulary), then adjacent pairs are merged lowest rank first
// (leftmost on ties) until no ranked pair remains - the same priority-queue algorithm as HF, so
// results match it exactly. Results are cached per word.
#include <algorithm>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

namespace drift {

// The largest token id (exclusive) a tokenizer.json with `entries` tokens may use. Ids may leave
// gaps, but tables are indexed by id, so one absurd id (10^8 in a 3-token file) must not cost
// gigabytes: gaps are allowed up to 4x the entry count (at least 65536), far beyond any real
// vocabulary's.
inline int64_t token_id_limit(size_t entries) {
  return std::max<int64_t>(65536, 4 * static_cast<int64_t>(entries));
}

class BpeModel {
 public:
  // Builds from tokenizer.json's "model" object; `field` ("model") names it in errors.
  BpeModel(const nlohmann::json& spec, const std::string& field);

  // Appends the ids of one pre-tokenized word.
  void encode_word(std::string_view word, std::vector<int32_t>& out) const;

  std::optional<int32_t> token_to_id(std::string_view token) const;
  // The vocabulary string of `id`, or nullptr when the model has no such id.
  const std::string* id_to_token(int32_t id) const;
  int32_t size() const { return static_cast<int32_t>(id_to_token_.size()); }

 private:
  struct Merge {
    uint32_t rank;
    int32_t new_id;
  };
  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  using StringMap = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

  static uint64_t pair_key(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
  }
  void load_vocab(const nlohmann::json& vocab, const std::string& field);
  void load_merges(const nlohmann::json& merges, const std::string& field);
  void load_byte_fallback_ids();
  void load_char_ids();
  std::vector<int32_t> merge_word(std::string_view word) const;

  StringMap vocab_;
  std::vector<std::string> id_to_token_;
  std::unordered_map<uint64_t, Merge> merges_;
  std::optional<int32_t> unk_id_;
  std::string continuing_subword_prefix_;
  std::string end_of_word_suffix_;
  bool byte_fallback_ = false;
  bool fuse_unk_ = false;
  bool ignore_merges_ = false;
  std::vector<int32_t> byte_ids_;  // "<0xXX>" tokens for byte_fallback, -1 when absent
  // Ids of the single-character tokens below U+0800 (-1: none), indexed by code point: splitting
  // a word into characters starts every uncached merge, and a table spares a string hash per
  // character. Covers the whole byte-level alphabet (up to U+0143). Empty when a subword prefix
  // or suffix makes a character's token depend on its position.
  std::vector<int32_t> char_ids_;

  // Cache of merge_word results: words repeat heavily in real text. Bounded so a long-running
  // server cannot grow it without limit (HF uses the same kind of cap).
  static constexpr size_t kCacheCapacity = 1 << 17;
  static constexpr size_t kMaxCachedWordBytes = 256;
  mutable std::mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<int32_t>, StringHash, std::equal_to<>> cache_;
};

}  // namespace drift
