#include "core/tokenizer/pre_tokenizer.h"

#include "core/error.h"
#include "core/tokenizer/byte_level.h"
#include "core/tokenizer/json_fields.h"
#include "core/tokenizer/split_pattern.h"

namespace drift {
namespace {

using nlohmann::json;

// GPT-2's pattern, used by ByteLevel when use_regex is true.
constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// Replaces each piece by its sub-pieces; only the first sub-piece keeps `at_input_start`.
template <typename SplitFn>
void split_each(std::vector<PreToken>& pieces, SplitFn&& split) {
  std::vector<PreToken> out;
  out.reserve(pieces.size());
  for (PreToken& piece : pieces) {
    bool first = piece.at_input_start;
    for (auto [begin, end] : split(piece)) {
      out.push_back({piece.text.substr(begin, end - begin), first && begin == 0});
    }
  }
  pieces = std::move(out);
}

std::string prefixed_with_space(const std::string& text) {
  std::string out;
  out.reserve(text.size() + 1);
  out += ' ';
  out += text;
  return out;
}

class Split final : public PreTokenizer {
 public:
  Split(std::unique_ptr<Regex> pattern, SplitBehavior behavior, bool invert)
      : pattern_(std::move(pattern)), behavior_(behavior), invert_(invert) {}
  void pre_tokenize(std::vector<PreToken>& pieces) const override {
    split_each(pieces, [&](const PreToken& p) { return split_by_pattern(p.text, *pattern_, behavior_, invert_); });
  }

 private:
  std::unique_ptr<Regex> pattern_;
  SplitBehavior behavior_;
  bool invert_;
};

// Optionally prefixes a space and splits with GPT-2's regex, then maps every byte to the
// byte-level alphabet the vocabulary is written in.
class ByteLevel final : public PreTokenizer {
 public:
  ByteLevel(bool add_prefix_space, bool use_regex) : add_prefix_space_(add_prefix_space) {
    if (use_regex) regex_ = std::make_unique<Regex>(kGpt2Pattern, false, "ByteLevel");
  }
  void pre_tokenize(std::vector<PreToken>& pieces) const override {
    if (add_prefix_space_)
      for (PreToken& p : pieces)
        if (!p.text.starts_with(' ')) p.text = prefixed_with_space(p.text);
    if (regex_)
      split_each(pieces, [&](const PreToken& p) { return split_by_pattern(p.text, *regex_, SplitBehavior::kIsolated); });
    for (PreToken& p : pieces) p.text = byte_level::encode(p.text);
  }

 private:
  bool add_prefix_space_;
  std::unique_ptr<Regex> regex_;
};

enum class PrependScheme { kAlways, kFirst, kNever };

// SentencePiece-style: spaces become the replacement character ("▁"), one is prepended, and
// words are split before each replacement character.
class Metaspace final : public PreTokenizer {
 public:
  Metaspace(std::string replacement, PrependScheme scheme, bool split)
      : replacement_(std::move(replacement)), scheme_(scheme) {
    if (split) splitter_ = std::make_unique<Regex>(replacement_, true, "Metaspace");
  }
  void pre_tokenize(std::vector<PreToken>& pieces) const override {
    for (PreToken& p : pieces) {
      std::string replaced;
      for (char c : p.text) {
        if (c == ' ') replaced += replacement_;
        else replaced += c;
      }
      bool prepend = scheme_ == PrependScheme::kAlways || (scheme_ == PrependScheme::kFirst && p.at_input_start);
      if (prepend && !replaced.starts_with(replacement_)) replaced.insert(0, replacement_);
      p.text = std::move(replaced);
    }
    if (splitter_)
      split_each(pieces, [&](const PreToken& p) { return split_by_pattern(p.text, *splitter_, SplitBehavior::kMergedWithNext); });
  }

 private:
  std::string replacement_;
  PrependScheme scheme_;
  std::unique_ptr<Regex> splitter_;
};

// A pattern with a fixed behaviour: Digits, Whitespace, WhitespaceSplit.
class PatternSplit final : public PreTokenizer {
 public:
  PatternSplit(const char* pattern, SplitBehavior behavior, bool invert, const std::string& field)
      : regex_(pattern, false, field), behavior_(behavior), invert_(invert) {}
  void pre_tokenize(std::vector<PreToken>& pieces) const override {
    split_each(pieces, [&](const PreToken& p) { return split_by_pattern(p.text, regex_, behavior_, invert_); });
  }

 private:
  Regex regex_;
  SplitBehavior behavior_;
  bool invert_;
};

class Sequence final : public PreTokenizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<PreTokenizer>> steps) : steps_(std::move(steps)) {}
  void pre_tokenize(std::vector<PreToken>& pieces) const override {
    for (const auto& step : steps_) step->pre_tokenize(pieces);
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> steps_;
};

PrependScheme metaspace_scheme(const json& spec, const std::string& field) {
  using namespace json_fields;
  if (auto scheme = optional_string(spec, "prepend_scheme", field)) {
    if (*scheme == "always") return PrependScheme::kAlways;
    if (*scheme == "first") return PrependScheme::kFirst;
    if (*scheme == "never") return PrependScheme::kNever;
    fail("{}.prepend_scheme '{}' is not one of always, first, never", field, *scheme);
  }
  // Files written before prepend_scheme existed use add_prefix_space.
  return optional_bool(spec, "add_prefix_space", field).value_or(true) ? PrependScheme::kAlways
                                                                      : PrependScheme::kNever;
}

std::unique_ptr<PreTokenizer> make_split(const json& spec, const std::string& field) {
  using namespace json_fields;
  return std::make_unique<Split>(make_pattern(require(spec, "pattern", field), field + ".pattern"),
                                 parse_split_behavior(require_string(spec, "behavior", field), field + ".behavior"),
                                 optional_bool(spec, "invert", field).value_or(false));
}

}  // namespace

std::unique_ptr<PreTokenizer> make_pre_tokenizer(const json& spec, const std::string& field) {
  using namespace json_fields;
  if (spec.is_null()) return nullptr;
  const std::string type = type_of(spec, field);
  if (type == "Split") return make_split(spec, field);
  if (type == "ByteLevel")
    return std::make_unique<ByteLevel>(optional_bool(spec, "add_prefix_space", field).value_or(true),
                                       optional_bool(spec, "use_regex", field).value_or(true));
  if (type == "Metaspace")
    return std::make_unique<Metaspace>(optional_string(spec, "replacement", field).value_or("\xE2\x96\x81"),
                                       metaspace_scheme(spec, field),
                                       optional_bool(spec, "split", field).value_or(true));
  if (type == "Digits") {
    bool individual = optional_bool(spec, "individual_digits", field).value_or(false);
    return std::make_unique<PatternSplit>(R"(\p{N})", individual ? SplitBehavior::kIsolated : SplitBehavior::kContiguous, false, field);
  }
  // Whitespace keeps the regex matches (HF splits on the inverted pattern, removing the rest).
  if (type == "Whitespace")
    return std::make_unique<PatternSplit>(R"(\w+|[^\w\s]+)", SplitBehavior::kRemoved, true, field);
  if (type == "WhitespaceSplit") return std::make_unique<PatternSplit>(R"(\s+)", SplitBehavior::kRemoved, false, field);
  if (type == "Sequence") {
    const json& list = require(spec, "pretokenizers", field);
    if (!list.is_array()) fail("{}.pretokenizers must be a list", field);
    std::vector<std::unique_ptr<PreTokenizer>> steps;
    for (size_t i = 0; i < list.size(); ++i)
      if (auto step = make_pre_tokenizer(list[i], fmt::format("{}.pretokenizers[{}]", field, i)))
        steps.push_back(std::move(step));
    return std::make_unique<Sequence>(std::move(steps));
  }
  unknown_type(field, type, "Split, ByteLevel, Metaspace, Digits, Whitespace, WhitespaceSplit, Sequence");
}

}  // namespace drift
