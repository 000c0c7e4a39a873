#include "core/tokenizer/added_tokens.h"

#include <utf8proc.h>

#include "core/error.h"
#include "core/tokenizer/json_fields.h"
#include "core/tokenizer/utf8.h"
#include "core/tokenizer/white_space.h"

namespace drift {

using nlohmann::json;

// Byte trie over token contents. Lookups are per start position; `first_bytes` lets the scan
// skip positions no token can start at (almost all of them in ordinary text).
struct AddedTokens::Trie {
  struct Node {
    std::unordered_map<unsigned char, int32_t> children;
    int32_t token = -1;  // index into tokens_ when a token ends here
  };
  std::vector<Node> nodes{Node{}};
  std::array<bool, 256> first_bytes{};

  void insert(std::string_view content, int32_t token_index) {
    int32_t node = 0;
    for (unsigned char c : content) {
      auto it = nodes[node].children.find(c);
      if (it == nodes[node].children.end()) {
        nodes.emplace_back();
        it = nodes[node].children.emplace(c, static_cast<int32_t>(nodes.size() - 1)).first;
      }
      node = it->second;
    }
    nodes[node].token = token_index;
    first_bytes[static_cast<unsigned char>(content[0])] = true;
  }

  // Longest token starting at text[pos]: (token index, length), or index -1.
  std::pair<int32_t, size_t> longest_at(std::string_view text, size_t pos) const {
    std::pair<int32_t, size_t> best{-1, 0};
    int32_t node = 0;
    for (size_t i = pos; i < text.size(); ++i) {
      auto it = nodes[node].children.find(static_cast<unsigned char>(text[i]));
      if (it == nodes[node].children.end()) break;
      node = it->second;
      if (nodes[node].token >= 0) best = {nodes[node].token, i + 1 - pos};
    }
    return best;
  }
};

AddedTokens::AddedTokens(const json& list, const std::string& field)
    : raw_trie_(std::make_unique<Trie>()), normalized_trie_(std::make_unique<Trie>()) {
  using namespace json_fields;
  if (list.is_null()) return;
  if (!list.is_array()) fail("{} must be a list, got {}", field, list.type_name());
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string where = fmt::format("{}[{}]", field, i);
    const json& id = require(list[i], "id", where);
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX)
      fail("{}.id must be a non-negative 32-bit integer, got {}", where, id.dump());
    AddedToken t;
    t.id = id.get<int32_t>();
    t.content = require_string(list[i], "content", where);
    if (t.content.empty()) fail("{}.content is empty", where);
    t.special = optional_bool(list[i], "special", where).value_or(false);
    t.normalized = optional_bool(list[i], "normalized", where).value_or(!t.special);
    t.lstrip = optional_bool(list[i], "lstrip", where).value_or(false);
    t.rstrip = optional_bool(list[i], "rstrip", where).value_or(false);
    t.single_word = optional_bool(list[i], "single_word", where).value_or(false);
    (t.normalized ? normalized_trie_ : raw_trie_)->insert(t.content, static_cast<int32_t>(tokens_.size()));
    by_id_[t.id] = tokens_.size();
    tokens_.push_back(std::move(t));
  }
}

AddedTokens::AddedTokens() = default;
AddedTokens::AddedTokens(AddedTokens&&) noexcept = default;
AddedTokens& AddedTokens::operator=(AddedTokens&&) noexcept = default;
AddedTokens::~AddedTokens() = default;

namespace {

// HF's single_word boundary test: alphanumeric (any Unicode letter or number) or '_'.
bool is_word_char(char32_t cp) {
  if (cp == '_') return true;
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
    case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL: case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM: case UTF8PROC_CATEGORY_LO: case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL: case UTF8PROC_CATEGORY_NO:
      return true;
    default:
      return false;
  }
}

// Code point ending at text[end) (valid UTF-8 assumed).
char32_t code_point_before(std::string_view text, size_t end) {
  size_t start = end - 1;
  while (start > 0 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
  return utf8::next_code_point(text, start);
}

// Offset where the run of whitespace ending at `end` starts (lstrip).
size_t whitespace_start_before(std::string_view text, size_t end, size_t floor) {
  while (end > floor) {
    size_t start = end - 1;
    while (start > floor && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
    size_t probe = start;
    if (!is_white_space(utf8::next_code_point(text, probe))) break;
    end = start;
  }
  return end;
}

// Offset where the run of whitespace starting at `begin` ends (rstrip).
size_t whitespace_end_after(std::string_view text, size_t begin) {
  while (begin < text.size()) {
    size_t next = begin;
    if (!is_white_space(utf8::next_code_point(text, next))) break;
    begin = next;
  }
  return begin;
}

}  // namespace

std::vector<Segment> AddedTokens::split(std::string_view text, bool normalized) const {
  const Trie* trie = (normalized ? normalized_trie_ : raw_trie_).get();
  std::vector<Segment> segments;
  size_t emitted = 0;  // text before this offset is already in `segments`
  size_t pos = 0;
  while (trie && pos < text.size()) {
    if (!trie->first_bytes[static_cast<unsigned char>(text[pos])]) {
      ++pos;
      continue;
    }
    auto [index, length] = trie->longest_at(text, pos);
    if (index < 0) {
      ++pos;
      continue;
    }
    const AddedToken& token = tokens_[index];
    size_t begin = pos, end = pos + length;
    if (token.single_word) {
      bool word_before = begin > 0 && is_word_char(code_point_before(text, begin));
      size_t after = end;
      bool word_after = end < text.size() && is_word_char(utf8::next_code_point(text, after));
      if (word_before || word_after) {
        ++pos;
        continue;
      }
    }
    if (token.lstrip) begin = whitespace_start_before(text, begin, emitted);
    if (token.rstrip) end = whitespace_end_after(text, end);
    if (emitted < begin) segments.push_back({emitted, begin, std::nullopt});
    segments.push_back({begin, end, token.id});
    emitted = pos = end;
  }
  if (emitted < text.size()) segments.push_back({emitted, text.size(), std::nullopt});
  return segments;
}

const AddedToken* AddedTokens::find_id(int32_t id) const {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &tokens_[it->second];
}

std::optional<int32_t> AddedTokens::find_content(std::string_view content) const {
  for (const AddedToken& t : tokens_)
    if (t.content == content) return t.id;
  return std::nullopt;
}

int32_t AddedTokens::max_id() const {
  int32_t max = -1;
  for (const AddedToken& t : tokens_) max = std::max(max, t.id);
  return max;
}

}  // namespace drift
