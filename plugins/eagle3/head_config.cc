#include "head_config.h"

#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "host.h"

namespace eagle3 {
namespace {

using nlohmann::json;

struct Reader {
  const json& j;
  std::string file;

  [[noreturn]] void bad(const std::string& key, const std::string& why) const { fail(file + ": '" + key + "' " + why); }
  bool has(const std::string& key) const { return j.contains(key) && !j.at(key).is_null(); }
  int64_t integer(const std::string& key, int64_t fallback, bool required = false) const {
    if (!has(key)) {
      if (required) bad(key, "is missing");
      return fallback;
    }
    if (!j.at(key).is_number_integer() || j.at(key).get<int64_t>() <= 0)
      bad(key, "= " + j.at(key).dump() + " must be a positive integer");
    return j.at(key).get<int64_t>();
  }
  double number(const std::string& key, double fallback) const {
    if (!has(key)) return fallback;
    if (!j.at(key).is_number()) bad(key, "= " + j.at(key).dump() + " must be a number");
    return j.at(key).get<double>();
  }
  bool flag(const std::string& key) const {
    if (!has(key)) return false;
    if (!j.at(key).is_boolean()) bad(key, "= " + j.at(key).dump() + " must be true or false");
    return j.at(key).get<bool>();
  }
};

json parse_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail("cannot open " + path + " (the EAGLE-3 head's config)");
  try {
    return json::parse(in);
  } catch (const json::exception& e) {
    fail(path + ": not valid JSON: " + e.what());
  }
}

// The rope theta the head was trained with: top-level rope_theta or rope_parameters.rope_theta.
double rope_theta(const Reader& r) {
  if (r.j.contains("rope_parameters") && r.j.at("rope_parameters").is_object()) {
    const Reader inner{r.j.at("rope_parameters"), r.file};
    if (inner.has("rope_theta")) return inner.number("rope_theta", 0);
  }
  return r.number("rope_theta", 10000.0);
}

std::vector<int32_t> aux_layers(const Reader& r, int64_t target_layers) {
  const json* ids = nullptr;
  std::string key = "eagle_aux_hidden_state_layer_ids";
  if (r.has(key)) {
    ids = &r.j.at(key);
  } else if (r.j.contains("eagle_config") && r.j.at("eagle_config").is_object() &&
             r.j.at("eagle_config").contains(key)) {
    ids = &r.j.at("eagle_config").at(key);
    key = "eagle_config." + key;
  }
  // vLLM's default: a low, a middle and a high layer.
  if (!ids) return {2, static_cast<int32_t>(target_layers / 2), static_cast<int32_t>(target_layers - 3)};
  if (!ids->is_array() || ids->size() != 3) r.bad(key, "= " + ids->dump() + " must list 3 layer ids");
  std::vector<int32_t> out;
  for (const json& id : *ids) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= target_layers)
      r.bad(key, "= " + ids->dump() + ": each id must be a target layer in 0.." + std::to_string(target_layers - 1));
    out.push_back(id.get<int32_t>());
  }
  return out;
}

void check_supported(const Reader& r) {
  if (r.integer("num_hidden_layers", 1) != 1)
    r.bad("num_hidden_layers", "= " + r.j.at("num_hidden_layers").dump() + ": an EAGLE-3 head has one decoder layer");
  if (r.has("hidden_act") && r.j.at("hidden_act") != "silu")
    r.bad("hidden_act", "= " + r.j.at("hidden_act").dump() + " is not supported (only silu)");
  for (const char* bias : {"attention_bias", "mlp_bias"})
    if (r.flag(bias)) r.bad(bias, "= true is not supported (the head's projections have no bias)");
  const Reader eagle{r.j.contains("eagle_config") ? r.j.at("eagle_config") : json::object(), r.file};
  if (eagle.has("use_aux_hidden_state") && !eagle.flag("use_aux_hidden_state"))
    eagle.bad("eagle_config.use_aux_hidden_state",
              "= false: an EAGLE-1/2 head (no aux hidden states) is not supported");
}

void check_against_target(const Reader& r, const HeadConfig& c, double theta, const drift_model_info_t& t) {
  if (c.target_hidden_size != t.hidden_size)
    r.bad("target_hidden_size", "= " + std::to_string(c.target_hidden_size) +
                                    " differs from the target's hidden_size " + std::to_string(t.hidden_size));
  if (c.vocab_size != t.vocab_size)
    r.bad("vocab_size", "= " + std::to_string(c.vocab_size) + " differs from the target's vocabulary of " +
                            std::to_string(t.vocab_size));
  // The draft's rotary embedding runs through the host's rope service, which uses the target's.
  if (c.head_dim != t.head_dim)
    r.bad("head_dim", "= " + std::to_string(c.head_dim) + " differs from the target's " + std::to_string(t.head_dim) +
                          " (the draft uses the target's rotary embedding)");
  if (std::abs(theta - t.rope_theta) > 1e-6 * std::max(1.0, t.rope_theta))
    r.bad("rope_theta", "= " + std::to_string(theta) + " differs from the target's " + std::to_string(t.rope_theta) +
                            " (the draft uses the target's rotary embedding)");
  if (c.num_heads % c.num_kv_heads != 0)
    r.bad("num_key_value_heads", "= " + std::to_string(c.num_kv_heads) + " does not divide num_attention_heads " +
                                     std::to_string(c.num_heads));
  if (c.draft_vocab_size > c.vocab_size)
    r.bad("draft_vocab_size",
          "= " + std::to_string(c.draft_vocab_size) + " exceeds vocab_size " + std::to_string(c.vocab_size));
}

}  // namespace

HeadConfig read_head_config(const std::string& dir, const drift_model_info_t& target) {
  const std::string file = dir + "/config.json";
  const json j = parse_file(file);
  if (!j.is_object()) fail(file + ": expected a JSON object");
  const Reader r{j, file};
  check_supported(r);
  HeadConfig c;
  c.hidden_size = r.integer("hidden_size", 0, true);
  c.intermediate_size = r.integer("intermediate_size", 0, true);
  c.num_heads = r.integer("num_attention_heads", 0, true);
  c.num_kv_heads = r.integer("num_key_value_heads", c.num_heads);
  c.head_dim = r.integer("head_dim", c.hidden_size / c.num_heads);
  c.vocab_size = r.integer("vocab_size", target.vocab_size);
  c.draft_vocab_size = r.integer("draft_vocab_size", c.vocab_size);
  c.target_hidden_size = r.integer("target_hidden_size", c.hidden_size);
  c.rms_norm_eps = r.number("rms_norm_eps", 1e-6);
  c.norm_before_residual = r.flag("norm_before_residual");
  c.aux_layer_ids = aux_layers(r, target.num_layers);
  check_against_target(r, c, rope_theta(r), target);
  return c;
}

}  // namespace eagle3
