#include "settings.h"

#include "drift/plugin_helpers.hpp"

namespace eagle3 {
namespace {

TreeKind tree_kind(drift::plugin::Settings& t) {
  const std::string kind = t.choice("tree", "chain", {"chain", "static", "dynamic"});
  return kind == "static" ? TreeKind::Static : kind == "dynamic" ? TreeKind::Dynamic : TreeKind::Chain;
}

std::vector<std::vector<int32_t>> choices(drift::plugin::Settings& t) {
  if (!t.has("choices"))
    t.bad("choices", "(a list of paths such as [[0], [1], [0, 0]]) is required with tree = \"static\"");
  std::vector<std::vector<int32_t>> out;
  for (const std::vector<int64_t>& path : t.integer_lists("choices", 0, 4096))
    out.emplace_back(path.begin(), path.end());
  if (std::string why = validate_choices(out); !why.empty()) t.bad("choices", "is not a tree: " + why);
  return out;
}

// A path setting is resolved by the host (relative to the config file's folder), so it is read
// through host->get_setting_path rather than from the table's text.
std::string checkpoint_path(const Host& host, const drift::plugin::Settings& t) {
  const drift_host_api_t* api = host.api();
  char buf[4096];
  size_t len = 0;
  const drift_status_t status = api->get_setting_path(api->ctx, "checkpoint", buf, sizeof buf, &len);
  if (status == DRIFT_ERROR_NOT_FOUND) t.bad("checkpoint", "(the EAGLE-3 head's folder) is required");
  if (status != DRIFT_OK) t.bad("checkpoint", "must be a string naming the EAGLE-3 head's folder");
  if (len >= sizeof buf) t.bad("checkpoint", "is longer than " + std::to_string(sizeof buf - 1) + " bytes");
  return std::string(buf, len);
}

}  // namespace

Settings read_settings(const Host& host, const std::string& settings_toml) {
  drift::plugin::Settings t(settings_toml);
  t.allow("checkpoint");
  Settings s;
  s.checkpoint = checkpoint_path(host, t);
  s.shape.kind = tree_kind(t);
  s.shape.depth = static_cast<int32_t>(t.integer("depth", s.shape.kind == TreeKind::Dynamic ? 5 : 4, 1, 4096));
  s.shape.topk = static_cast<int32_t>(t.integer("topk", 4, 1, 4096));
  s.shape.num_nodes = static_cast<int32_t>(t.integer("num_nodes", 0, 0, 4096));
  if (s.shape.kind == TreeKind::Static) s.shape.choices = choices(t);
  t.allow("choices");  // read only with tree = "static"
  s.extension_rows = t.integer("extension_rows", 2048, 1, int64_t{1} << 24);
  s.keep_logits = t.boolean("keep_logits", false);
  t.finish();
  return s;
}

}  // namespace eagle3
