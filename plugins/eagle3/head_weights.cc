#include "head_weights.h"

#include <algorithm>
#include <map>
#include <set>

#include "checkpoint_header.h"

namespace eagle3 {
namespace {

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// The names the head's layer uses, under the prefix the file spells (vLLM reads both).
struct Layout {
  std::string layer;                                     // "midlayer." or "layers.0."
  std::map<std::string, std::vector<int64_t>> expected;  // required tensor -> shape
};

Layout expected_layout(const std::map<std::string, StoredTensor>& stored, const HeadConfig& c) {
  Layout l;
  l.layer = stored.count("layers.0.self_attn.q_proj.weight") ? "layers.0." : "midlayer.";
  const int64_t h = c.hidden_size, q = c.num_heads * c.head_dim, kv = c.num_kv_heads * c.head_dim;
  const int64_t i = c.intermediate_size;
  l.expected = {
      {"fc.weight", {h, 3 * c.target_hidden_size}},
      {l.layer + "input_layernorm.weight", {h}},
      {l.layer + "hidden_norm.weight", {h}},
      {l.layer + "self_attn.q_proj.weight", {q, 2 * h}},
      {l.layer + "self_attn.k_proj.weight", {kv, 2 * h}},
      {l.layer + "self_attn.v_proj.weight", {kv, 2 * h}},
      {l.layer + "self_attn.o_proj.weight", {h, q}},
      {l.layer + "post_attention_layernorm.weight", {h}},
      {l.layer + "mlp.gate_proj.weight", {i, h}},
      {l.layer + "mlp.up_proj.weight", {i, h}},
      {l.layer + "mlp.down_proj.weight", {h, i}},
      {"norm.weight", {h}},
  };
  return l;
}

void check_layout(const std::map<std::string, StoredTensor>& stored, const Layout& l, const HeadConfig& c,
                  const std::string& file) {
  for (const auto& [name, shape] : l.expected) {
    auto it = stored.find(name);
    if (it == stored.end())
      fail(file + ": tensor '" + name + "' is missing (expected shape " + shape_text(shape) + ")");
    if (it->second.shape != shape)
      fail(file + ": tensor '" + name + "' has shape " + shape_text(it->second.shape) + ", expected " +
           shape_text(shape));
  }
  const std::map<std::string, std::vector<int64_t>> optional = {{"lm_head.weight", {c.draft_vocab_size, c.hidden_size}},
                                                                {"embed_tokens.weight", {c.vocab_size, c.hidden_size}},
                                                                {"d2t", {c.draft_vocab_size}},
                                                                {"t2d", {c.vocab_size}}};
  for (const auto& [name, tensor] : stored) {
    if (l.expected.count(name)) continue;
    auto it = optional.find(name);
    if (it == optional.end()) fail(file + ": tensor '" + name + "' is not part of an EAGLE-3 head this plugin can run");
    if (tensor.shape != it->second)
      fail(file + ": tensor '" + name + "' has shape " + shape_text(tensor.shape) + ", expected " +
           shape_text(it->second));
  }
}

// target id = draft id + d2t[draft id]; without d2t the vocabularies must be the same.
std::vector<int32_t> draft_to_target(const Host& host, const std::string& file, bool has_d2t, const HeadConfig& c) {
  std::vector<int32_t> map(static_cast<size_t>(c.draft_vocab_size));
  if (!has_d2t) {
    if (c.draft_vocab_size != c.vocab_size)
      fail(file + ": draft_vocab_size " + std::to_string(c.draft_vocab_size) + " < vocab_size " +
           std::to_string(c.vocab_size) + " needs a 'd2t' tensor, and there is none");
    for (size_t d = 0; d < map.size(); ++d) map[d] = static_cast<int32_t>(d);
    return map;
  }
  std::vector<Tensor> loaded = host.load(file, {"d2t"});
  std::vector<int32_t> offsets(map.size());
  drift_tensor_t dst = host_ints(offsets);
  host.copy(loaded[0].get(), dst);
  std::set<int32_t> seen;
  for (size_t d = 0; d < map.size(); ++d) {
    const int64_t target = static_cast<int64_t>(d) + offsets[d];
    if (target < 0 || target >= c.vocab_size || !seen.insert(static_cast<int32_t>(target)).second)
      fail(file + ": d2t[" + std::to_string(d) + "] = " + std::to_string(offsets[d]) + " maps draft id " +
           std::to_string(d) + " to target id " + std::to_string(target) +
           (target < 0 || target >= c.vocab_size ? ", outside the vocabulary" : ", which another draft id maps to"));
    map[d] = static_cast<int32_t>(target);
  }
  return map;
}

}  // namespace

HeadWeights load_head_weights(const Host& host, const std::string& dir, const HeadConfig& c) {
  const std::string file = dir + "/model.safetensors";
  const std::map<std::string, StoredTensor> stored = read_checkpoint_header(file);
  const Layout layout = expected_layout(stored, c);
  check_layout(stored, layout, c, file);

  std::vector<std::string> names;
  for (const char* n : {"fc.weight"}) names.push_back(n);
  for (const char* n :
       {"input_layernorm.weight", "hidden_norm.weight", "self_attn.q_proj.weight", "self_attn.k_proj.weight",
        "self_attn.v_proj.weight", "self_attn.o_proj.weight", "post_attention_layernorm.weight", "mlp.gate_proj.weight",
        "mlp.up_proj.weight", "mlp.down_proj.weight"})
    names.push_back(layout.layer + n);
  names.push_back("norm.weight");
  std::vector<Tensor> t = host.load(file, names);
  HeadWeights w;
  w.fc = std::move(t[0]);
  w.input_norm = std::move(t[1]);
  w.hidden_norm = std::move(t[2]);
  w.q = std::move(t[3]);
  w.k = std::move(t[4]);
  w.v = std::move(t[5]);
  w.o = std::move(t[6]);
  w.post_norm = std::move(t[7]);
  w.gate = std::move(t[8]);
  w.up = std::move(t[9]);
  w.down = std::move(t[10]);
  w.norm = std::move(t[11]);

  if (stored.count("embed_tokens.weight")) {
    w.own_embed = std::move(host.load(file, {"embed_tokens.weight"})[0]);
    w.embed = w.own_embed.get();
  } else if (!host.model_weight("model.embed_tokens.weight", w.embed)) {
    fail(file + ": the head has no 'embed_tokens.weight' and the target shares no embedding");
  } else if (w.embed.ndim != 2 || w.embed.shape[1] != c.hidden_size) {
    fail(file + ": the head has no 'embed_tokens.weight', and the target's embedding is " +
         std::to_string(w.embed.shape[1]) + " wide, not the head's hidden_size " + std::to_string(c.hidden_size));
  }
  if (stored.count("lm_head.weight")) {
    w.own_lm_head = std::move(host.load(file, {"lm_head.weight"})[0]);
    w.lm_head = w.own_lm_head.get();
  } else {
    // gpt-oss-120b-Eagle3 style: the head predicts with the target's own LM head.
    if (c.draft_vocab_size != c.vocab_size)
      fail(file +
           ": the head has no 'lm_head.weight', so it drafts with the target's head, which needs "
           "draft_vocab_size == vocab_size (got " +
           std::to_string(c.draft_vocab_size) + ")");
    if (!host.model_weight("lm_head.weight", w.lm_head))
      fail(file + ": the head has no 'lm_head.weight' and the target shares no LM head");
    if (w.lm_head.ndim != 2 || w.lm_head.shape[1] != c.hidden_size)
      fail(file + ": the head has no 'lm_head.weight', and the target's is " + std::to_string(w.lm_head.shape[1]) +
           " wide, not the head's hidden_size " + std::to_string(c.hidden_size));
  }
  w.draft_to_target = draft_to_target(host, file, stored.count("d2t") > 0, c);
  return w;
}

}  // namespace eagle3
