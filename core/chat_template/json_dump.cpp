#include "core/chat_template/json_dump.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/chat_template/py_text.h"
#include "core/chat_template/value_ops.h"

namespace drift::jinja {
namespace {

void append_escaped(std::string& out, const std::string& s, bool ensure_ascii) {
  out.push_back('"');
  for (char32_t c : to_code_points(s)) {
    switch (c) {
      case '"':
        out += "\\\"";
        continue;
      case '\\':
        out += "\\\\";
        continue;
      case '\n':
        out += "\\n";
        continue;
      case '\r':
        out += "\\r";
        continue;
      case '\t':
        out += "\\t";
        continue;
      case '\b':
        out += "\\b";
        continue;
      case '\f':
        out += "\\f";
        continue;
      default:
        break;
    }
    if (c < 0x20 || (ensure_ascii && c >= 0x7F)) {
      if (c >= 0x10000) {  // a surrogate pair, as Python writes astral characters
        const char32_t v = c - 0x10000;
        out += fmt::format("\\u{:04x}\\u{:04x}", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF));
      } else {
        out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
      }
    } else {
      append_code_point(out, c);
    }
  }
  out.push_back('"');
}

std::string float_text(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
  return float_repr(d);
}

std::string key_text(const Value& key) {
  switch (key.kind()) {
    case Value::Kind::kString:
      return key.as_string();
    case Value::Kind::kFloat:
      return float_text(key.as_float());
    case Value::Kind::kBool:
      return key.as_bool() ? "true" : "false";
    case Value::Kind::kNone:
      return "null";
    case Value::Kind::kInt:
      return std::to_string(key.as_int());
    default:
      raise(ErrorType::kType, fmt::format("keys must be str, int, float, bool or None, not {}", type_name(key)));
  }
}

class Writer {
 public:
  explicit Writer(const JsonOptions& options)
      : options_(options), item_separator_(options.item_separator.value_or(options.indent ? "," : ", ")) {}

  void write(const Value& v, int depth) {
    switch (v.kind()) {
      case Value::Kind::kNone:
        out_ += "null";
        return;
      case Value::Kind::kBool:
        out_ += v.as_bool() ? "true" : "false";
        return;
      case Value::Kind::kInt:
        out_ += std::to_string(v.as_int());
        return;
      case Value::Kind::kFloat:
        out_ += float_text(v.as_float());
        return;
      case Value::Kind::kString:
        append_escaped(out_, v.as_string(), options_.ensure_ascii);
        return;
      case Value::Kind::kList:
        if (v.is_iterator()) break;
        write_list(v.items(), depth);
        return;
      case Value::Kind::kDict:
        write_dict(v.as_dict(), depth);
        return;
      default:
        break;
    }
    raise(ErrorType::kType, fmt::format("Object of type {} is not JSON serializable", type_name(v)));
  }

  std::string take() { return std::move(out_); }

 private:
  void newline(int depth) {
    if (!options_.indent) return;
    out_.push_back('\n');
    for (int i = 0; i < depth; ++i) out_ += *options_.indent;
  }

  void write_list(const ValueList& items, int depth) {
    if (items.empty()) {
      out_ += "[]";
      return;
    }
    out_.push_back('[');
    for (size_t i = 0; i < items.size(); ++i) {
      if (i) out_ += item_separator_;
      newline(depth + 1);
      write(items[i], depth + 1);
    }
    newline(depth);
    out_.push_back(']');
  }

  void write_dict(const Dict& dict, int depth) {
    if (dict.empty()) {
      out_ += "{}";
      return;
    }
    std::vector<const Dict::Entry*> entries;
    for (const Dict::Entry& e : dict.entries()) entries.push_back(&e);
    if (options_.sort_keys)
      std::stable_sort(entries.begin(), entries.end(), [](const Dict::Entry* a, const Dict::Entry* b) {
        return py_compare(a->first, b->first, "<") < 0;
      });
    out_.push_back('{');
    for (size_t i = 0; i < entries.size(); ++i) {
      if (i) out_ += item_separator_;
      newline(depth + 1);
      append_escaped(out_, key_text(entries[i]->first), options_.ensure_ascii);
      out_ += options_.key_separator;
      write(entries[i]->second, depth + 1);
    }
    newline(depth);
    out_.push_back('}');
  }

  const JsonOptions& options_;
  std::string item_separator_;
  std::string out_;
};

}  // namespace

std::string json_dumps(const Value& value, const JsonOptions& options) {
  Writer writer(options);
  writer.write(value, 0);
  return writer.take();
}

}  // namespace drift::jinja
