#include "core/tokenizer/normalizer.h"

#include <cstdlib>
#include <vector>

#include <utf8proc.h>

#include "core/error.h"
#include "core/tokenizer/json_fields.h"
#include "core/tokenizer/regex.h"
#include "core/tokenizer/utf8.h"
#include "core/tokenizer/white_space.h"

namespace drift {
namespace {

using nlohmann::json;

bool is_ascii(const std::string& text) {
  for (char c : text)
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  return true;
}

// Unicode normalisation forms through utf8proc (no hand-written tables).
class UnicodeForm final : public Normalizer {
 public:
  explicit UnicodeForm(utf8proc_option_t options) : options_(options) {}
  void normalize(std::string& text) const override {
    if (is_ascii(text)) return;  // every normal form of ASCII is itself
    utf8proc_uint8_t* out = nullptr;
    auto len = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                            static_cast<utf8proc_ssize_t>(text.size()), &out,
                            static_cast<utf8proc_option_t>(options_ | UTF8PROC_STABLE));
    if (len < 0) fail("Unicode normalisation failed: {}", utf8proc_errmsg(len));
    text.assign(reinterpret_cast<const char*>(out), static_cast<size_t>(len));
    std::free(out);
  }

 private:
  utf8proc_option_t options_;
};

class Prepend final : public Normalizer {
 public:
  explicit Prepend(std::string prefix) : prefix_(std::move(prefix)) {}
  void normalize(std::string& text) const override {
    if (!text.empty()) text.insert(0, prefix_);  // HF leaves an empty segment empty
  }

 private:
  std::string prefix_;
};

class Replace final : public Normalizer {
 public:
  Replace(std::unique_ptr<Regex> pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  void normalize(std::string& text) const override {
    auto matches = pattern_->find_all(text);
    if (matches.empty()) return;
    std::string out;
    size_t pos = 0;
    for (auto [begin, end] : matches) {
      out.append(text, pos, begin - pos);
      out += content_;
      pos = end;
    }
    out.append(text, pos);
    text = std::move(out);
  }

 private:
  std::unique_ptr<Regex> pattern_;
  std::string content_;
};

class Strip final : public Normalizer {
 public:
  Strip(bool left, bool right) : left_(left), right_(right) {}
  void normalize(std::string& text) const override {
    size_t begin = 0, end = text.size();
    while (left_ && begin < end) {
      size_t next = begin;
      if (!is_white_space(utf8::next_code_point(text, next))) break;
      begin = next;
    }
    while (right_ && end > begin) {
      size_t start = end - 1;
      while (start > begin && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
      size_t probe = start;
      if (!is_white_space(utf8::next_code_point(text, probe))) break;
      end = start;
    }
    text = text.substr(begin, end - begin);
  }

 private:
  bool left_, right_;
};

class Sequence final : public Normalizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<Normalizer>> steps) : steps_(std::move(steps)) {}
  void normalize(std::string& text) const override {
    for (const auto& step : steps_) step->normalize(text);
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> steps_;
};

}  // namespace

std::unique_ptr<Normalizer> make_normalizer(const json& spec, const std::string& field) {
  using namespace json_fields;
  if (spec.is_null()) return nullptr;
  const std::string type = type_of(spec, field);
  if (type == "NFC") return std::make_unique<UnicodeForm>(UTF8PROC_COMPOSE);
  if (type == "NFD") return std::make_unique<UnicodeForm>(UTF8PROC_DECOMPOSE);
  if (type == "NFKC") return std::make_unique<UnicodeForm>(static_cast<utf8proc_option_t>(UTF8PROC_COMPOSE | UTF8PROC_COMPAT));
  if (type == "NFKD") return std::make_unique<UnicodeForm>(static_cast<utf8proc_option_t>(UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT));
  if (type == "Prepend") return std::make_unique<Prepend>(require_string(spec, "prepend", field));
  if (type == "Replace")
    return std::make_unique<Replace>(make_pattern(require(spec, "pattern", field), field + ".pattern"),
                                     require_string(spec, "content", field));
  if (type == "Strip")
    return std::make_unique<Strip>(optional_bool(spec, "strip_left", field).value_or(true),
                                   optional_bool(spec, "strip_right", field).value_or(true));
  if (type == "Sequence") {
    const json& list = require(spec, "normalizers", field);
    if (!list.is_array()) fail("{}.normalizers must be a list", field);
    std::vector<std::unique_ptr<Normalizer>> steps;
    for (size_t i = 0; i < list.size(); ++i)
      if (auto step = make_normalizer(list[i], fmt::format("{}.normalizers[{}]", field, i)))
        steps.push_back(std::move(step));
    return std::make_unique<Sequence>(std::move(steps));
  }
  unknown_type(field, type, "NFC, NFD, NFKC, NFKD, Prepend, Replace, Strip, Sequence");
}

}  // namespace drift
