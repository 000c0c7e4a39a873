#include "settings.h"

#include "drift/plugin_helpers.hpp"

namespace suffix {

Settings read_settings(const std::string& settings_toml) {
  drift::plugin::Settings t(settings_toml);
  Settings s;
  s.max_depth = static_cast<int32_t>(t.integer("max_depth", 24, 2, 256));
  s.max_cached_requests = t.integer("max_cached_requests", 1000, 0, 1000000);
  s.draft.max_spec_tokens = static_cast<int32_t>(t.integer("max_spec_tokens", 16, 1, 4096));
  s.draft.alpha = t.number("alpha", 1.0, 0.0, 1e6);
  s.draft.beta = t.number("beta", 0.0, -1e6, 1e6);
  s.draft.min_token_prob = t.number("min_token_prob", 0.1, 0.0, 1.0);
  s.draft.tree = t.choice("draft", "tree", {"tree", "chain"}) == "tree";
  t.finish();
  return s;
}

}  // namespace suffix
