#include "core/tokenizer/decoder.h"

#include "core/error.h"
#include "core/tokenizer/byte_level.h"
#include "core/tokenizer/json_fields.h"
#include "core/tokenizer/regex.h"
#include "core/tokenizer/utf8.h"

namespace drift {
namespace {

using nlohmann::json;

// Alphabet characters back to bytes; a token with any character outside the alphabet (an added
// token such as "<|im_start|>" with a space, say) is taken as its raw UTF-8, like HF does.
class ByteLevelDecoder final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string bytes;
    for (const std::string& token : tokens) append_token(token, bytes);
    tokens.assign(1, utf8::to_valid_lossy(bytes));
  }
  void decode_chain_raw(std::vector<std::string>& tokens) const override {
    std::string bytes;
    for (const std::string& token : tokens) append_token(token, bytes);
    tokens.assign(1, std::move(bytes));
  }

 private:
  static void append_token(const std::string& token, std::string& bytes) {
    size_t mark = bytes.size();
    size_t pos = 0;
    while (pos < token.size()) {
      auto byte = byte_level::char_to_byte(utf8::next_code_point(token, pos));
      if (!byte) {
        bytes.resize(mark);
        bytes += token;
        return;
      }
      bytes += static_cast<char>(*byte);
    }
  }
};

// "▁" back to spaces; the prepended one of the first token is dropped.
class MetaspaceDecoder final : public Decoder {
 public:
  MetaspaceDecoder(std::string replacement, bool strip_first)
      : replacement_(std::move(replacement)), strip_first_(strip_first) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string out;
      std::string_view t = tokens[i];
      for (size_t pos = 0; pos < t.size();) {
        if (t.substr(pos).starts_with(replacement_)) {
          // HF drops every replacement character of the first token, not just the leading one.
          if (!(i == 0 && strip_first_)) out += ' ';
          pos += replacement_.size();
        } else {
          out += t[pos++];
        }
      }
      tokens[i] = std::move(out);
    }
  }

 private:
  std::string replacement_;
  bool strip_first_;
};

class ReplaceDecoder final : public Decoder {
 public:
  ReplaceDecoder(std::unique_ptr<Regex> pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (std::string& token : tokens) {
      std::string out;
      size_t pos = 0;
      for (auto [begin, end] : pattern_->find_all(token)) {
        out.append(token, pos, begin - pos);
        out += content_;
        pos = end;
      }
      out.append(token, pos);
      token = std::move(out);
    }
  }

 private:
  std::unique_ptr<Regex> pattern_;
  std::string content_;
};

// "<0xE2>" style tokens: runs of them become their bytes when those form valid UTF-8, else one
// U+FFFD per byte (HF's rule).
class ByteFallbackDecoder final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::vector<std::string> out;
    std::string bytes;
    size_t pending = 0;
    auto flush = [&] {
      if (pending == 0) return;
      if (utf8::first_invalid(bytes) == bytes.size()) {
        out.push_back(bytes);
      } else {
        for (size_t i = 0; i < pending; ++i) out.emplace_back("\xEF\xBF\xBD");
      }
      bytes.clear();
      pending = 0;
    };
    for (std::string& token : tokens) {
      if (auto byte = parse_byte_token(token)) {
        bytes += static_cast<char>(*byte);
        ++pending;
        continue;
      }
      flush();
      out.push_back(std::move(token));
    }
    flush();
    tokens = std::move(out);
  }
  void decode_chain_raw(std::vector<std::string>& tokens) const override {
    for (std::string& token : tokens)
      if (auto byte = parse_byte_token(token)) token.assign(1, static_cast<char>(*byte));
  }

  bool depends_on_following(const std::string& token) const override { return parse_byte_token(token).has_value(); }

 private:
  static std::optional<uint8_t> parse_byte_token(const std::string& token) {
    if (token.size() != 6 || !token.starts_with("<0x") || token.back() != '>') return std::nullopt;
    unsigned value = 0;
    for (char c : token.substr(3, 2)) {
      int digit = std::isdigit(static_cast<unsigned char>(c)) ? c - '0'
                  : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                  : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
      if (digit < 0) return std::nullopt;
      value = value * 16 + static_cast<unsigned>(digit);
    }
    return static_cast<uint8_t>(value);
  }
};

class FuseDecoder final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string all;
    for (const std::string& t : tokens) all += t;
    tokens.assign(1, std::move(all));
  }
};

// Removes up to `start` leading and `stop` trailing copies of one character from each token.
class StripDecoder final : public Decoder {
 public:
  StripDecoder(std::string content, size_t start, size_t stop)
      : content_(std::move(content)), start_(start), stop_(stop) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (std::string& token : tokens) {
      std::string_view t = token;
      for (size_t i = 0; i < start_ && t.starts_with(content_); ++i) t.remove_prefix(content_.size());
      for (size_t i = 0; i < stop_ && t.ends_with(content_); ++i) t.remove_suffix(content_.size());
      token = std::string(t);
    }
  }

 private:
  std::string content_;
  size_t start_, stop_;
};

class SequenceDecoder final : public Decoder {
 public:
  explicit SequenceDecoder(std::vector<std::unique_ptr<Decoder>> steps) : steps_(std::move(steps)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (const auto& step : steps_) step->decode_chain(tokens);
  }
  void decode_chain_raw(std::vector<std::string>& tokens) const override {
    for (const auto& step : steps_) step->decode_chain_raw(tokens);
  }
  bool depends_on_following(const std::string& token) const override {
    for (const auto& step : steps_)
      if (step->depends_on_following(token)) return true;
    return false;
  }

 private:
  std::vector<std::unique_ptr<Decoder>> steps_;
};

size_t read_count(const json& spec, const char* key, const std::string& field) {
  auto it = spec.find(key);
  if (it == spec.end() || it->is_null()) return 0;
  if (!it->is_number_unsigned()) fail("{}.{} must be a non-negative integer, got {}", field, key, it->dump());
  return it->get<size_t>();
}

std::unique_ptr<Decoder> make_metaspace(const json& spec, const std::string& field) {
  using namespace json_fields;
  std::string replacement = optional_string(spec, "replacement", field).value_or("\xE2\x96\x81");
  bool strip_first;
  if (auto scheme = optional_string(spec, "prepend_scheme", field)) strip_first = *scheme != "never";
  else strip_first = optional_bool(spec, "add_prefix_space", field).value_or(true);
  return std::make_unique<MetaspaceDecoder>(std::move(replacement), strip_first);
}

}  // namespace

std::unique_ptr<Decoder> make_decoder(const json& spec, const std::string& field) {
  using namespace json_fields;
  if (spec.is_null()) return nullptr;
  const std::string type = type_of(spec, field);
  if (type == "ByteLevel") return std::make_unique<ByteLevelDecoder>();
  if (type == "Metaspace") return make_metaspace(spec, field);
  if (type == "Replace")
    return std::make_unique<ReplaceDecoder>(make_pattern(require(spec, "pattern", field), field + ".pattern"),
                                            require_string(spec, "content", field));
  if (type == "ByteFallback") return std::make_unique<ByteFallbackDecoder>();
  if (type == "Fuse") return std::make_unique<FuseDecoder>();
  if (type == "Strip")
    return std::make_unique<StripDecoder>(require_string(spec, "content", field), read_count(spec, "start", field),
                                          read_count(spec, "stop", field));
  if (type == "Sequence") {
    const json& list = require(spec, "decoders", field);
    if (!list.is_array()) fail("{}.decoders must be a list", field);
    std::vector<std::unique_ptr<Decoder>> steps;
    for (size_t i = 0; i < list.size(); ++i)
      if (auto step = make_decoder(list[i], fmt::format("{}.decoders[{}]", field, i)))
        steps.push_back(std::move(step));
    return std::make_unique<SequenceDecoder>(std::move(steps));
  }
  unknown_type(field, type, "ByteLevel, Metaspace, Replace, ByteFallback, Fuse, Strip, Sequence");
}

}  // namespace drift
