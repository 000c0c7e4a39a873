#include "settings.h"

#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>

#include <toml++/toml.h>

namespace specpv {
namespace {

[[noreturn]] void bad(const std::string& key, const std::string& why) {
  throw std::invalid_argument("setting '" + key + "' " + why);
}

int64_t integer(const toml::table& t, const char* key, int64_t fallback, int64_t lo, int64_t hi) {
  const toml::node* node = t.get(key);
  if (!node) return fallback;
  const std::optional<int64_t> v = node->value_exact<int64_t>();
  if (!v || *v < lo || *v > hi) {
    std::ostringstream shown;
    node->visit([&](auto&& value) { shown << value; });
    bad(key, "= " + shown.str() + " must be an integer in " + std::to_string(lo) + ".." + std::to_string(hi));
  }
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
  static const std::set<std::string> known = {"block_size",           "n_sink_blocks",     "n_retrieval_blocks",
                                              "n_window_blocks",      "n_spec_tokens_buf", "partial_threshold",
                                              "full_refresh_interval"};
  for (const auto& [key, value] : t)
    if (!known.count(std::string(key.str())))
      bad(std::string(key.str()),
          "is unknown (known: block_size, n_sink_blocks, n_retrieval_blocks, n_window_blocks, n_spec_tokens_buf, "
          "partial_threshold, full_refresh_interval)");
  constexpr int64_t kMaxBlocks = int64_t{1} << 24;
  Settings s;
  s.block_size = integer(t, "block_size", 16, 1, 4096);
  s.n_sink_blocks = integer(t, "n_sink_blocks", 2, 0, kMaxBlocks);
  s.n_retrieval_blocks = integer(t, "n_retrieval_blocks", 256, 0, kMaxBlocks);
  s.n_window_blocks = integer(t, "n_window_blocks", 8, 0, kMaxBlocks);
  s.n_spec_tokens_buf = integer(t, "n_spec_tokens_buf", 20, 0, kMaxBlocks);
  s.partial_threshold = integer(t, "partial_threshold", 4096, 0, int64_t{1} << 40);
  s.full_refresh_interval = integer(t, "full_refresh_interval", 32, 1, int64_t{1} << 30);
  return s;
}

}  // namespace specpv
