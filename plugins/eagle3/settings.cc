#include "settings.h"

#include <set>
#include <sstream>

#include <toml++/toml.h>

namespace eagle3 {
namespace {

[[noreturn]] void bad(const std::string& key, const std::string& why) { fail("setting '" + key + "' " + why); }

std::string shown(const toml::node& node) {
  std::ostringstream out;
  node.visit([&](auto&& value) { out << value; });
  return out.str();
}

int32_t positive(const toml::table& t, const char* key, int32_t fallback, int32_t minimum) {
  const toml::node* node = t.get(key);
  if (!node) return fallback;
  const std::optional<int64_t> v = node->value_exact<int64_t>();
  if (!v || *v < minimum || *v > 4096) {
    bad(key, "= " + shown(*node) + " must be an integer in " + std::to_string(minimum) + "..4096");
  }
  return static_cast<int32_t>(*v);
}

TreeKind tree_kind(const toml::table& t) {
  const toml::node* node = t.get("tree");
  if (!node) return TreeKind::Chain;
  const std::optional<std::string> v = node->value_exact<std::string>();
  if (v == "chain") return TreeKind::Chain;
  if (v == "static") return TreeKind::Static;
  if (v == "dynamic") return TreeKind::Dynamic;
  bad("tree", "= " + shown(*node) + " must be \"chain\", \"static\" or \"dynamic\"");
}

std::vector<std::vector<int32_t>> choices(const toml::table& t) {
  const toml::array* list = t.get_as<toml::array>("choices");
  if (!list) bad("choices", "(a list of paths such as [[0], [1], [0, 0]]) is required with tree = \"static\"");
  std::vector<std::vector<int32_t>> out;
  for (const toml::node& path : *list) {
    const toml::array* ranks = path.as_array();
    if (!ranks) bad("choices", "must be a list of lists of child ranks, e.g. [[0], [1], [0, 0]]");
    auto& p = out.emplace_back();
    for (const toml::node& r : *ranks) {
      const std::optional<int64_t> v = r.value_exact<int64_t>();
      if (!v || *v < 0 || *v > 4096) bad("choices", "must hold integer ranks in 0..4096");
      p.push_back(static_cast<int32_t>(*v));
    }
  }
  if (std::string why = validate_choices(out); !why.empty()) bad("choices", "is not a tree: " + why);
  return out;
}

std::string checkpoint_path(const Host& host) {
  const drift_host_api_t* api = host.api();
  char buf[4096];
  size_t len = 0;
  const drift_status_t status = api->get_setting_path(api->ctx, "checkpoint", buf, sizeof buf, &len);
  if (status == DRIFT_ERROR_NOT_FOUND) bad("checkpoint", "(the EAGLE-3 head's folder) is required");
  if (status != DRIFT_OK) bad("checkpoint", "must be a string naming the EAGLE-3 head's folder");
  if (len >= sizeof buf) bad("checkpoint", "is longer than " + std::to_string(sizeof buf - 1) + " bytes");
  return std::string(buf, len);
}

}  // namespace

Settings read_settings(const Host& host, const std::string& settings_toml) {
  toml::table t;
  try {
    t = toml::parse(settings_toml);
  } catch (const toml::parse_error& e) {
    fail(std::string("settings do not parse: ") + std::string(e.description()));
  }
  static const std::set<std::string> known = {"checkpoint", "tree",    "depth",      "topk",
                                              "num_nodes",  "choices", "keep_logits"};
  for (const auto& [key, value] : t)
    if (!known.count(std::string(key.str())))
      bad(std::string(key.str()), "is unknown (known: checkpoint, tree, depth, topk, num_nodes, choices, keep_logits)");
  Settings s;
  s.checkpoint = checkpoint_path(host);
  s.shape.kind = tree_kind(t);
  s.shape.depth = positive(t, "depth", s.shape.kind == TreeKind::Dynamic ? 5 : 4, 1);
  s.shape.topk = positive(t, "topk", 4, 1);
  s.shape.num_nodes = positive(t, "num_nodes", 0, 0);
  if (s.shape.kind == TreeKind::Static) s.shape.choices = choices(t);
  if (const toml::node* keep = t.get("keep_logits")) {
    if (!keep->is_boolean()) bad("keep_logits", "must be true or false");
    s.keep_logits = keep->as_boolean()->get();
  }
  return s;
}

}  // namespace eagle3
