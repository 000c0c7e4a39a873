#include "core/tokenizer/bpe_model.h"

#include <queue>

#include <fmt/format.h>

#include "core/error.h"
#include "core/tokenizer/json_fields.h"
#include "core/tokenizer/utf8.h"

namespace drift {

using nlohmann::json;

BpeModel::BpeModel(const json& spec, const std::string& field) {
  using namespace json_fields;
  if (auto dropout = spec.find("dropout"); dropout != spec.end() && !dropout->is_null() &&
                                           !(dropout->is_number() && dropout->get<double>() == 0.0))
    fail("{}.dropout = {} is not supported (BPE dropout makes encoding random)", field, dropout->dump());
  continuing_subword_prefix_ = optional_string(spec, "continuing_subword_prefix", field).value_or("");
  end_of_word_suffix_ = optional_string(spec, "end_of_word_suffix", field).value_or("");
  byte_fallback_ = optional_bool(spec, "byte_fallback", field).value_or(false);
  fuse_unk_ = optional_bool(spec, "fuse_unk", field).value_or(false);
  ignore_merges_ = optional_bool(spec, "ignore_merges", field).value_or(false);
  load_vocab(require(spec, "vocab", field), field + ".vocab");
  load_merges(require(spec, "merges", field), field + ".merges");
  if (auto unk = optional_string(spec, "unk_token", field)) {
    unk_id_ = token_to_id(*unk);
    if (!unk_id_) fail("{}.unk_token '{}' is not in {}.vocab", field, *unk, field);
  }
  load_byte_fallback_ids();
  load_char_ids();
}

void BpeModel::load_vocab(const json& vocab, const std::string& field) {
  if (!vocab.is_object()) fail("{} must be an object mapping token to id, got {}", field, vocab.type_name());
  vocab_.reserve(vocab.size());
  const int64_t id_limit = token_id_limit(vocab.size());
  for (const auto& [token, id] : vocab.items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX)
      fail("{}['{}'] must be a non-negative integer id, got {}", field, token, id.dump());
    auto value = id.get<int32_t>();
    if (value >= id_limit)
      fail("{}['{}'] = {}: ids of a {}-token vocabulary must be below {} (gaps are allowed up to 4x its size)", field,
           token, value, vocab.size(), id_limit);
    vocab_.emplace(token, value);
    if (static_cast<size_t>(value) >= id_to_token_.size()) id_to_token_.resize(value + 1);
    id_to_token_[value] = token;
  }
}

void BpeModel::load_merges(const json& merges, const std::string& field) {
  if (!merges.is_array()) fail("{} must be a list, got {}", field, merges.type_name());
  // Most lookups while merging ask for pairs that are not merges. With mostly empty buckets such
  // a miss costs one memory access instead of a walk along a chain of nodes: cold encoding
  // (words not in the cache) got about 20% faster for a few MB more per tokenizer.
  merges_.max_load_factor(0.25f);
  merges_.reserve(merges.size());
  std::string merged;  // reused: a merge list has ~10^5 entries
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const json& m = merges[rank];
    std::string_view left, right;
    // Two spellings exist: "a b" (older files, split on the single space) and ["a", "b"].
    if (m.is_string()) {
      const std::string_view s = m.get_ref<const std::string&>();
      const size_t space = s.find(' ');
      if (space == std::string_view::npos || s.find(' ', space + 1) != std::string_view::npos)
        fail("{}[{}] = '{}' must be two tokens separated by one space", field, rank, s);
      left = s.substr(0, space);
      right = s.substr(space + 1);
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      left = m[0].get_ref<const std::string&>();
      right = m[1].get_ref<const std::string&>();
    } else {
      fail("{}[{}] must be \"left right\" or [\"left\", \"right\"], got {}", field, rank, m.dump());
    }
    auto left_id = token_to_id(left), right_id = token_to_id(right);
    if (!left_id || !right_id)
      fail("{}[{}]: token '{}' is not in the vocabulary", field, rank, left_id ? right : left);
    // The merged token drops the right part's continuing-subword prefix, as HF builds it.
    if (!continuing_subword_prefix_.empty() && right.starts_with(continuing_subword_prefix_))
      right.remove_prefix(continuing_subword_prefix_.size());
    merged.assign(left);
    merged.append(right);
    auto new_id = token_to_id(merged);
    if (!new_id) fail("{}[{}]: merged token '{}' is not in the vocabulary", field, rank, merged);
    // A repeated pair keeps its last rank, as HF's HashMap collect does.
    merges_.insert_or_assign(pair_key(*left_id, *right_id), Merge{static_cast<uint32_t>(rank), *new_id});
  }
}

void BpeModel::load_byte_fallback_ids() {
  byte_ids_.assign(256, -1);
  for (int b = 0; b < 256; ++b)
    if (auto id = token_to_id(fmt::format("<0x{:02X}>", b))) byte_ids_[b] = *id;
}

void BpeModel::load_char_ids() {
  if (!continuing_subword_prefix_.empty() || !end_of_word_suffix_.empty()) return;
  constexpr char32_t kTableSize = 0x800;  // one- and two-byte UTF-8 characters
  char_ids_.assign(kTableSize, -1);
  std::string character;
  for (char32_t cp = 0; cp < kTableSize; ++cp) {
    character.clear();
    utf8::append_code_point(character, cp);
    if (auto id = token_to_id(character)) char_ids_[cp] = *id;
  }
}

std::optional<int32_t> BpeModel::token_to_id(std::string_view token) const {
  auto it = vocab_.find(token);
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

const std::string* BpeModel::id_to_token(int32_t id) const {
  if (id < 0 || id >= size()) return nullptr;
  const std::string& token = id_to_token_[id];
  if (token.empty()) return vocab_.count(token) ? &token : nullptr;  // a hole in the id range
  return &token;
}

void BpeModel::encode_word(std::string_view word, std::vector<int32_t>& out) const {
  if (word.empty()) return;
  if (ignore_merges_) {  // Llama-3: a word that is itself a token is never split
    if (auto id = token_to_id(word)) {
      out.push_back(*id);
      return;
    }
  }
  const bool cacheable = word.size() <= kMaxCachedWordBytes;
  if (cacheable) {
    std::lock_guard lock(cache_mutex_);
    if (auto it = cache_.find(word); it != cache_.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::vector<int32_t> ids = merge_word(word);
  out.insert(out.end(), ids.begin(), ids.end());
  if (cacheable) {
    std::lock_guard lock(cache_mutex_);
    if (cache_.size() < kCacheCapacity) cache_.emplace(std::string(word), std::move(ids));
  }
}

namespace {

struct Symbol {
  int32_t id;
  int32_t prev, next;  // linked list over the symbols still alive
  bool alive = true;
};

struct QueuedMerge {
  uint32_t rank;
  int32_t pos;
  int32_t new_id;
  // std::priority_queue pops the largest: invert so the lowest rank, then leftmost, comes first.
  bool operator<(const QueuedMerge& other) const {
    return rank != other.rank ? rank > other.rank : pos > other.pos;
  }
};

}  // namespace

std::vector<int32_t> BpeModel::merge_word(std::string_view word) const {
  // 1. Characters to initial symbols (HF merge_word).
  std::vector<Symbol> symbols;
  std::optional<int32_t> pending_unk;
  auto add = [&](int32_t id) {
    int32_t index = static_cast<int32_t>(symbols.size());
    if (!symbols.empty()) symbols.back().next = index;
    symbols.push_back({id, index - 1, -1});
  };
  size_t pos = 0;
  std::string piece;
  while (pos < word.size()) {
    size_t begin = pos;
    const char32_t cp = utf8::next_code_point(word, pos);
    if (cp < char_ids_.size() && char_ids_[cp] >= 0) {  // the common case, see char_ids_
      if (pending_unk) add(*std::exchange(pending_unk, std::nullopt));
      add(char_ids_[cp]);
      continue;
    }
    piece.assign(word.substr(begin, pos - begin));
    if (begin > 0) piece.insert(0, continuing_subword_prefix_);
    if (pos == word.size()) piece += end_of_word_suffix_;
    if (auto id = token_to_id(piece)) {
      if (pending_unk) add(*std::exchange(pending_unk, std::nullopt));
      add(*id);
      continue;
    }
    if (byte_fallback_) {
      bool all = true;
      for (char c : piece) all = all && byte_ids_[static_cast<uint8_t>(c)] >= 0;
      if (all) {  // HF leaves a pending unk in place here; so do we
        for (char c : piece) add(byte_ids_[static_cast<uint8_t>(c)]);
        continue;
      }
    }
    if (unk_id_) {
      if (pending_unk && !fuse_unk_) add(*pending_unk);
      pending_unk = unk_id_;
    }
  }
  if (pending_unk) add(*pending_unk);

  // 2. Merge lowest-rank pairs (HF Word::merge_all without dropout).
  std::priority_queue<QueuedMerge> queue;
  auto push_pair = [&](int32_t left) {
    int32_t right = symbols[left].next;
    if (right < 0) return;
    auto it = merges_.find(pair_key(symbols[left].id, symbols[right].id));
    if (it != merges_.end()) queue.push({it->second.rank, left, it->second.new_id});
  };
  for (int32_t i = 0; i + 1 < static_cast<int32_t>(symbols.size()); ++i) push_pair(i);
  while (!queue.empty()) {
    QueuedMerge top = queue.top();
    queue.pop();
    Symbol& left = symbols[top.pos];
    if (!left.alive || left.next < 0) continue;
    Symbol& right = symbols[left.next];
    // Skip entries made stale by an earlier merge of either symbol.
    auto it = merges_.find(pair_key(left.id, right.id));
    if (it == merges_.end() || it->second.new_id != top.new_id) continue;
    left.id = top.new_id;
    right.alive = false;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = top.pos;
    if (left.prev >= 0) push_pair(left.prev);
    push_pair(top.pos);
  }
  std::vector<int32_t> ids;
  ids.reserve(symbols.size());
  for (const Symbol& s : symbols)
    if (s.alive) ids.push_back(s.id);
  return ids;
}

}  // namespace drift
