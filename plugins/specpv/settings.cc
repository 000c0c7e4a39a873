#include "settings.h"

#include "drift/plugin_helpers.hpp"

namespace specpv {

Settings read_settings(const std::string& settings_toml) {
  drift::plugin::Settings t(settings_toml);
  constexpr int64_t kMaxBlocks = int64_t{1} << 24;
  Settings s;
  s.block_size = t.integer("block_size", 16, 1, 4096);
  s.n_sink_blocks = t.integer("n_sink_blocks", 2, 0, kMaxBlocks);
  s.n_retrieval_blocks = t.integer("n_retrieval_blocks", 256, 0, kMaxBlocks);
  s.n_window_blocks = t.integer("n_window_blocks", 8, 0, kMaxBlocks);
  s.n_spec_tokens_buf = t.integer("n_spec_tokens_buf", 20, 0, kMaxBlocks);
  s.partial_threshold = t.integer("partial_threshold", 4096, 0, int64_t{1} << 40);
  s.full_refresh_interval = t.integer("full_refresh_interval", 32, 1, int64_t{1} << 30);
  t.finish();
  return s;
}

}  // namespace specpv
