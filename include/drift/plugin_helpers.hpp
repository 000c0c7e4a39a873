#ifndef DRIFT_PLUGIN_HELPERS_HPP
#define DRIFT_PLUGIN_HELPERS_HPP
// Optional C++17 convenience over the C ABI in drift/plugin.h, for plugin authors. Header-only,
// standard library only, nothing exported: the ABI stays the C header, and a plugin that does not
// include this file loses nothing. It covers what every C++ plugin otherwise writes again:
//   - guard():     runs a hook body; an exception becomes the ABI's status and one log line
//                  (no exception may cross the C boundary).
//   - Error, fail(), check(): a failure with its status; check() turns a host service's status
//                  into an Error naming the service.
//   - log():       host->log, prefixed with the plugin's name.
//   - Settings:    typed, range-checked reads of the plugin's TOML table (the settings_toml that
//                  create() receives); errors name the key and the value, unknown keys are errors.
//   - Tensor, view(), rows(): a tensor the plugin allocated, freed through the host; views of
//                  parts of one.
// Everything throws drift::plugin::Error (or a standard exception); call it inside guard().
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <map>
#include <new>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "drift/plugin.h"

namespace drift {
namespace plugin {

// A failure with the status the hook returns for it.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message, drift_status_t status = DRIFT_ERROR)
      : std::runtime_error(message), status_(status) {}
  drift_status_t status() const { return status_; }

 private:
  drift_status_t status_;
};

[[noreturn]] inline void fail(const std::string& message, drift_status_t status = DRIFT_ERROR) {
  throw Error(message, status);
}

// A host service's status: anything but DRIFT_OK throws an Error naming the service.
inline void check(drift_status_t status, const char* service) {
  if (status != DRIFT_OK)
    fail(std::string("host service ") + service + " returned status " + std::to_string(status), status);
}

// host->log with "<plugin>: " in front; quiet when the host has no log (an older or a test host).
inline void log(const drift_host_api_t* host, const char* plugin, int32_t level, const std::string& message) noexcept {
  if (!host || !DRIFT_HAS_FIELD(host, drift_host_api_t, log) || !host->log) return;
  try {
    host->log(host->ctx, level, (std::string(plugin) + ": " + message).c_str());
  } catch (...) {  // out of memory while formatting: the status still says what happened
  }
}

namespace detail {
template <typename Body>
drift_status_t run(Body& body) {
  if constexpr (std::is_same_v<decltype(body()), void>) {
    body();
    return DRIFT_OK;
  } else {
    return body();
  }
}
}  // namespace detail

// Runs a hook body (returning void, meaning DRIFT_OK, or a drift_status_t). An exception becomes
// a status and one DRIFT_LOG_ERROR line "<plugin>: <hook>: <what>": an Error its own status,
// std::bad_alloc DRIFT_ERROR_OUT_OF_MEMORY, any other exception DRIFT_ERROR. Never throws.
template <typename Body>
drift_status_t guard(const drift_host_api_t* host, const char* plugin, std::string_view hook, Body&& body) noexcept {
  try {
    return detail::run(body);
  } catch (const Error& e) {
    log(host, plugin, DRIFT_LOG_ERROR, std::string(hook) + ": " + e.what());
    return e.status();
  } catch (const std::bad_alloc&) {
    log(host, plugin, DRIFT_LOG_ERROR, std::string("out of memory in ").append(hook));
    return DRIFT_ERROR_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    log(host, plugin, DRIFT_LOG_ERROR, std::string(hook) + ": " + e.what());
    return DRIFT_ERROR;
  } catch (...) {
    log(host, plugin, DRIFT_LOG_ERROR, std::string(hook).append(" failed with an unknown exception"));
    return DRIFT_ERROR;
  }
}

// ---- Settings -------------------------------------------------------------------------------

// The plugin's own table, read from the TOML text create() receives (the host writes the
// [plugins.<name>] table there). Top-level keys with integer, float, boolean, string and
// (nested) array values are read; a sub-table or a dotted key counts as a key of its own that
// no typed read accepts. Each read names the key it knows; finish() then refuses every key that
// was never read ("setting 'x' is unknown (known: ...)"). Errors throw Error with
// DRIFT_ERROR_INVALID_ARGUMENT and a message "setting '<key>' = <value> must be ...".
class Settings {
 public:
  explicit Settings(const std::string& toml) { Parser(toml, values_).parse(); }

  bool has(const std::string& key) {
    known_.insert(key);
    return values_.count(key) > 0;
  }
  // The value as written ("2.5", "'bush'" for a string), for messages.
  std::string shown(const std::string& key) const {
    auto it = values_.find(key);
    return it == values_.end() ? "" : it->second.shown();
  }

  int64_t integer(const std::string& key, int64_t fallback, int64_t lo, int64_t hi) {
    if (!has(key)) return fallback;
    const Value& v = values_.at(key);
    if (v.kind != Value::Integer || v.integer < lo || v.integer > hi)
      bad(key, "must be an integer in " + std::to_string(lo) + ".." + std::to_string(hi));
    return v.integer;
  }
  double number(const std::string& key, double fallback, double lo, double hi) {
    if (!has(key)) return fallback;
    const Value& v = values_.at(key);
    const double d = v.kind == Value::Integer ? static_cast<double>(v.integer) : v.real;
    if ((v.kind != Value::Integer && v.kind != Value::Float) || !(d >= lo && d <= hi))
      bad(key, "must be a number in [" + number_text(lo) + ", " + number_text(hi) + "]");
    return d;
  }
  bool boolean(const std::string& key, bool fallback) {
    if (!has(key)) return fallback;
    const Value& v = values_.at(key);
    if (v.kind != Value::Bool) bad(key, "must be true or false");
    return v.boolean;
  }
  std::string string(const std::string& key, const std::string& fallback) {
    if (!has(key)) return fallback;
    const Value& v = values_.at(key);
    if (v.kind != Value::String) bad(key, "must be a string");
    return v.text;
  }
  // One of `choices`; `fallback` when absent.
  std::string choice(const std::string& key, const std::string& fallback, std::initializer_list<const char*> choices) {
    if (!has(key)) return fallback;
    const Value& v = values_.at(key);
    std::string listed;  // "a", "b" or "c"
    size_t i = 0;
    for (const char* c : choices) {
      if (v.kind == Value::String && v.text == c) return v.text;
      listed += std::string(i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ") + "\"" + c + "\"";
      ++i;
    }
    bad(key, "must be " + listed);
  }
  // A list of lists of integers in lo..hi, e.g. [[0], [1], [0, 0]]; empty when absent.
  std::vector<std::vector<int64_t>> integer_lists(const std::string& key, int64_t lo, int64_t hi) {
    std::vector<std::vector<int64_t>> out;
    if (!has(key)) return out;
    const Value& v = values_.at(key);
    const std::string why = "must be a list of lists of integers in " + std::to_string(lo) + ".." + std::to_string(hi);
    if (v.kind != Value::Array) bad(key, why);
    for (const Value& inner : v.items) {
      if (inner.kind != Value::Array) bad(key, why);
      auto& row = out.emplace_back();
      for (const Value& x : inner.items) {
        if (x.kind != Value::Integer || x.integer < lo || x.integer > hi) bad(key, why);
        row.push_back(x.integer);
      }
    }
    return out;
  }
  // Marks a key as known without reading it (one the plugin reads through the host instead, such
  // as a path through host->get_setting_path).
  void allow(const std::string& key) { known_.insert(key); }
  // Every key present must have been read (or allowed).
  void finish() const {
    for (const auto& kv : values_) {
      if (known_.count(kv.first)) continue;
      std::string known;
      for (const std::string& k : known_) known += (known.empty() ? "" : ", ") + k;
      throw Error("setting '" + kv.first + "' is unknown (known: " + known + ")", DRIFT_ERROR_INVALID_ARGUMENT);
    }
  }
  // The message of a setting's error, thrown the same way as the reads' own.
  [[noreturn]] void bad(const std::string& key, const std::string& why) const {
    const std::string value = shown(key);
    throw Error("setting '" + key + "' " + (value.empty() ? "" : "= " + value + " ") + why,
                DRIFT_ERROR_INVALID_ARGUMENT);
  }

 private:
  struct Value {
    enum Kind { Integer, Float, Bool, String, Array, Table } kind = Table;
    int64_t integer = 0;
    double real = 0.0;
    bool boolean = false;
    std::string text;  // a string's value
    std::string raw;   // as written
    std::vector<Value> items;
    std::string shown() const { return kind == String ? "'" + text + "'" : kind == Table ? "(a table)" : raw; }
  };

  static std::string number_text(double d) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", d);
    return buf;
  }

  // A small reader of the flat tables plugins take; anything it cannot read is "settings do not
  // parse", as an invalid file would be.
  class Parser {
   public:
    Parser(const std::string& text, std::map<std::string, Value>& out) : s_(text), out_(out) {}

    void parse() {
      while (skip_blank_lines(), pos_ < s_.size()) {
        if (s_[pos_] == '[') {
          table_header();
          continue;
        }
        std::string key = key_name();
        spaces();
        if (!eat('=')) error("expected '=' after key '" + key + "'");
        spaces();
        Value v = value();
        end_of_line();
        if (in_table_) continue;  // keys of a sub-table belong to it
        if (dotted_) v = Value{};
        if (!out_.emplace(key, std::move(v)).second && !dotted_) error("key '" + key + "' is given twice");
      }
    }

   private:
    [[noreturn]] void error(const std::string& why) const {
      size_t line = 1;
      for (size_t i = 0; i < pos_ && i < s_.size(); ++i) line += s_[i] == '\n';
      throw Error("settings do not parse: line " + std::to_string(line) + ": " + why, DRIFT_ERROR_INVALID_ARGUMENT);
    }
    bool at(char c) const { return pos_ < s_.size() && s_[pos_] == c; }
    bool eat(char c) { return at(c) ? (++pos_, true) : false; }
    void spaces() {
      while (at(' ') || at('\t')) ++pos_;
    }
    void comment() {
      if (at('#'))
        while (pos_ < s_.size() && s_[pos_] != '\n') ++pos_;
    }
    void skip_blank_lines() {
      for (;;) {
        spaces();
        comment();
        if (!eat('\n') && !eat('\r')) return;
      }
    }
    void end_of_line() {
      spaces();
      comment();
      eat('\r');
      if (pos_ < s_.size() && !eat('\n')) error("unexpected text after a value");
    }
    // A value inside an array may be followed by newlines and comments.
    void array_space() {
      for (;;) {
        spaces();
        comment();
        if (!eat('\n') && !eat('\r')) return;
      }
    }
    static bool bare(char c) {
      return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    }
    std::string one_key() {
      if (at('"') || at('\'')) return quoted();
      const size_t start = pos_;
      while (pos_ < s_.size() && bare(s_[pos_])) ++pos_;
      if (pos_ == start) error("expected a key");
      return s_.substr(start, pos_ - start);
    }
    // The first part of a (possibly dotted) key; dotted_ says whether more followed.
    std::string key_name() {
      std::string first = one_key();
      spaces();
      dotted_ = false;
      while (eat('.')) {
        spaces();
        one_key();
        spaces();
        dotted_ = true;
      }
      return first;
    }
    void table_header() {
      const bool array = s_.compare(pos_, 2, "[[") == 0;
      pos_ += array ? 2 : 1;
      spaces();
      std::string key = key_name();
      if (!eat(']') || (array && !eat(']'))) error("a table header must end with ']'");
      end_of_line();
      out_.emplace(key, Value{});
      in_table_ = true;
    }
    std::string quoted() {
      const char q = s_[pos_++];
      std::string out;
      while (pos_ < s_.size() && s_[pos_] != q && s_[pos_] != '\n') {
        char c = s_[pos_++];
        if (q == '"' && c == '\\' && pos_ < s_.size()) {
          const char e = s_[pos_++];
          c = e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e;
          if (e != 'n' && e != 't' && e != 'r' && e != '"' && e != '\\') error("unsupported escape in a string");
        }
        out += c;
      }
      if (!eat(q)) error("a string is not closed");
      return out;
    }
    Value value() {
      Value v;
      const size_t start = pos_;
      if (at('"') || at('\'')) {
        v.kind = Value::String;
        v.text = quoted();
      } else if (eat('[')) {
        v.kind = Value::Array;
        for (array_space(); !eat(']'); array_space()) {
          v.items.push_back(value());
          array_space();
          if (!eat(',') && !at(']')) error("expected ',' or ']' in an array");
        }
      } else {
        scalar(v);
      }
      v.raw = s_.substr(start, pos_ - start);
      return v;
    }
    void scalar(Value& v) {
      const size_t start = pos_;
      while (pos_ < s_.size() && (bare(s_[pos_]) || s_[pos_] == '+' || s_[pos_] == '.')) ++pos_;
      std::string word = s_.substr(start, pos_ - start);
      if (word.empty()) error("expected a value");
      if (word == "true" || word == "false") {
        v.kind = Value::Bool;
        v.boolean = word == "true";
        return;
      }
      std::string digits;
      for (char c : word)
        if (c != '_') digits += c;
      size_t used = 0;
      try {
        if (digits.find_first_of(".eEin") == std::string::npos) {
          v.kind = Value::Integer;
          v.integer = std::stoll(digits, &used, 10);
        } else {
          v.kind = Value::Float;
          v.real = std::stod(digits, &used);
        }
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != digits.size() || used == 0) error("'" + word + "' is not a value");
    }

    const std::string& s_;
    std::map<std::string, Value>& out_;
    size_t pos_ = 0;
    bool dotted_ = false;
    bool in_table_ = false;
  };

  std::map<std::string, Value> values_;
  std::set<std::string> known_;
};

// ---- Tensors --------------------------------------------------------------------------------

inline int64_t numel(const drift_tensor_t& t) {
  int64_t n = 1;
  for (int32_t d = 0; d < t.ndim; ++d) n *= t.shape[d];
  return n;
}

inline size_t element_size(int32_t dtype) {
  switch (dtype) {
    case DRIFT_DTYPE_F32:
    case DRIFT_DTYPE_I32:
      return 4;
    case DRIFT_DTYPE_F16:
    case DRIFT_DTYPE_BF16:
      return 2;
    default:
      return 0;
  }
}

// A contiguous view of `base`'s memory with another shape, starting `offset` elements in.
inline drift_tensor_t view(const drift_tensor_t& base, std::initializer_list<int64_t> shape, int64_t offset = 0) {
  if (shape.size() > static_cast<size_t>(DRIFT_MAX_DIMS)) fail("a view has more dimensions than a tensor holds");
  drift_tensor_t v = base;
  v.data = static_cast<char*>(base.data) + offset * static_cast<int64_t>(element_size(base.dtype));
  v.ndim = static_cast<int32_t>(shape.size());
  int64_t stride = 1;
  int32_t d = v.ndim;
  for (auto it = shape.end(); it != shape.begin();) {
    --it;
    --d;
    v.shape[d] = *it;
    v.strides[d] = stride;
    stride *= *it;
  }
  if (offset < 0 || offset + stride > numel(base)) fail("a view reaches outside its tensor");
  return v;
}

// Rows [first, first + count) of a tensor whose first dimension counts rows.
inline drift_tensor_t rows(const drift_tensor_t& base, int64_t first, int64_t count) {
  if (first < 0 || count < 0 || first + count > base.shape[0]) fail("rows outside their tensor");
  const int64_t row = base.shape[0] > 0 ? numel(base) / base.shape[0] : 0;
  drift_tensor_t v = base;
  v.shape[0] = count;
  v.data = static_cast<char*>(base.data) + first * row * static_cast<int64_t>(element_size(base.dtype));
  return v;
}

// A tensor the plugin allocated (host->tensor_alloc) or loaded (host->load_safetensors); freed
// through the host when destroyed. Move-only.
class Tensor {
 public:
  Tensor() = default;
  // Takes ownership of `t`, which `host` allocated.
  Tensor(const drift_host_api_t* host, drift_tensor_t t) : host_(host), t_(t) {}
  // Allocates through the host (throws Error when it cannot).
  Tensor(const drift_host_api_t* host, int32_t dtype, const std::vector<int64_t>& shape) : host_(host) {
    check(host->tensor_alloc(host->ctx, dtype, static_cast<int32_t>(shape.size()), shape.data(), &t_), "tensor_alloc");
  }
  ~Tensor() { reset(); }
  Tensor(Tensor&& other) noexcept : host_(other.host_), t_(other.t_) { other.t_ = {}; }
  Tensor& operator=(Tensor&& other) noexcept {
    if (this != &other) {
      reset();
      host_ = other.host_;
      t_ = other.t_;
      other.t_ = {};
    }
    return *this;
  }
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;

  const drift_tensor_t& get() const { return t_; }
  const drift_tensor_t* operator->() const { return &t_; }
  bool empty() const { return t_.data == nullptr; }
  int64_t numel() const { return t_.data ? plugin::numel(t_) : 0; }
  void reset() {
    if (host_ && t_.data) host_->tensor_free(host_->ctx, &t_);
    t_ = {};
  }

 private:
  const drift_host_api_t* host_ = nullptr;
  drift_tensor_t t_{};
};

}  // namespace plugin
}  // namespace drift

#endif  // DRIFT_PLUGIN_HELPERS_HPP
