#include "settings.h"

#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>

#include <toml++/toml.h>

namespace suffix {
namespace {

[[noreturn]] void bad(const std::string& key, const std::string& why) {
  throw std::invalid_argument("setting '" + key + "' " + why);
}

std::string shown(const toml::node& node) {
  std::ostringstream out;
  node.visit([&](auto&& value) { out << value; });
  return out.str();
}

int64_t integer(const toml::table& t, const char* key, int64_t fallback, int64_t lo, int64_t hi) {
  const toml::node* node = t.get(key);
  if (!node) return fallback;
  const std::optional<int64_t> v = node->value_exact<int64_t>();
  if (!v || *v < lo || *v > hi)
    bad(key, "= " + shown(*node) + " must be an integer in " + std::to_string(lo) + ".." + std::to_string(hi));
  return *v;
}

double number(const toml::table& t, const char* key, double fallback, double lo, double hi) {
  const toml::node* node = t.get(key);
  if (!node) return fallback;
  const std::optional<double> v = node->is_number() ? node->value<double>() : std::nullopt;
  if (!v || !(*v >= lo && *v <= hi))
    bad(key, "= " + shown(*node) + " must be a number in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return *v;
}

}  // namespace

Settings read_settings(const std::string& settings_toml) {
  toml::table t;
  try {
    t = toml::parse(settings_toml);
  } catch (const toml::parse_error& e) {
    throw std::invalid_argument(std::string("settings do not parse: ") + std::string(e.description()));
  }
  static const std::set<std::string> known = {"max_depth",      "max_spec_tokens",     "alpha", "beta",
                                              "min_token_prob", "max_cached_requests", "draft"};
  for (const auto& [key, value] : t)
    if (!known.count(std::string(key.str())))
      bad(std::string(key.str()),
          "is unknown (known: max_depth, max_spec_tokens, alpha, beta, min_token_prob, "
          "max_cached_requests, draft)");
  Settings s;
  s.max_depth = static_cast<int32_t>(integer(t, "max_depth", 24, 2, 256));
  s.max_cached_requests = integer(t, "max_cached_requests", 1000, 0, 1000000);
  s.draft.max_spec_tokens = static_cast<int32_t>(integer(t, "max_spec_tokens", 16, 1, 4096));
  s.draft.alpha = number(t, "alpha", 1.0, 0.0, 1e6);
  s.draft.beta = number(t, "beta", 0.0, -1e6, 1e6);
  s.draft.min_token_prob = number(t, "min_token_prob", 0.1, 0.0, 1.0);
  if (const toml::node* draft = t.get("draft")) {
    const std::optional<std::string> v = draft->value_exact<std::string>();
    if (v != "tree" && v != "chain") bad("draft", "= " + shown(*draft) + " must be \"tree\" or \"chain\"");
    s.draft.tree = *v == "tree";
  } else {
    s.draft.tree = true;
  }
  return s;
}

}  // namespace suffix
