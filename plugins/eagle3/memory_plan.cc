#include "memory_plan.h"

#include <algorithm>

#include "checkpoint_header.h"
#include "host.h"

namespace eagle3 {
namespace {

int64_t count(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// What load_head_weights loads: every stored tensor but t2d, floats in the activation dtype,
// d2t as I32 (freed once read, but held while it is).
int64_t weight_bytes(const std::string& checkpoint, int32_t act) {
  int64_t bytes = 0;
  for (const auto& [name, tensor] : read_checkpoint_header(checkpoint + "/model.safetensors")) {
    if (name == "t2d") continue;
    bytes += count(tensor.shape) * static_cast<int64_t>(name == "d2t" ? 4 : element_size(act));
  }
  return bytes;
}

// What one sequence's draft tree can ask of the head, by its shape (TreeSearch):
//  - level_nodes: nodes expanded in one level (a chain's newest node; a dynamic tree's topk best
//    of its newest level, whatever the verify budget; a static tree's nodes of one depth);
//  - rows: rows written past the committed ones (every node expanded);
//  - top_k: the widest top-k a node asks for (a static tree's largest child rank + 1).
struct TreeBounds {
  int64_t level_nodes = 1, rows = 1, top_k = 1;
};

TreeBounds tree_bounds(const TreeShape& shape) {
  switch (shape.kind) {
    case TreeKind::Chain:
      return {1, shape.depth, 1};
    case TreeKind::Dynamic:
      return {shape.topk, static_cast<int64_t>(shape.depth) * shape.topk, shape.topk};
    case TreeKind::Static: {
      TreeBounds b{1, static_cast<int64_t>(shape.choices.size()), 1};
      std::vector<int64_t> per_depth;
      for (const auto& path : shape.choices) {
        if (path.empty()) continue;
        if (per_depth.size() < path.size()) per_depth.resize(path.size(), 0);
        b.level_nodes = std::max(b.level_nodes, ++per_depth[path.size() - 1]);
        b.top_k = std::max<int64_t>(b.top_k, path.back() + 1);
      }
      return b;
    }
  }
  return {};
}

std::vector<WorkspaceRole> workspace_roles(const HeadConfig& c, const Settings& s, const drift_model_info_t& m) {
  const int32_t act = m.activation_dtype;
  const int64_t H = c.hidden_size, I = c.intermediate_size, V = c.draft_vocab_size, tH = c.target_hidden_size;
  const int64_t Q = c.num_heads * c.head_dim, KV = c.num_kv_heads * c.head_dim;
  const int64_t batch = std::max<int64_t>(m.max_batch_size, 1);
  const int64_t ext = s.extension_rows;  // an extension window
  const TreeBounds tree = tree_bounds(s.shape);
  const int64_t level = batch * tree.level_nodes;
  const int64_t forward = std::max(ext, level);   // rows of one head forward
  const int64_t picked = std::max(batch, level);  // rows of one top-k: the roots, or a level
  const int64_t k = std::min(tree.top_k, V);
  std::vector<WorkspaceRole> roles = {
      {"emb", act, forward * H},
      {"emb_n", act, forward * H},
      {"h_n", act, forward * H},
      {"a", act, forward * 2 * H},
      {"q", act, forward * Q},
      {"k", act, forward * KV},
      {"v", act, forward * KV},
      {"attn", act, forward * Q},
      {"r_n", act, forward * H},
      {"gate", act, forward * I},
      {"up", act, forward * I},
      {"ext.h", act, ext * H},
      {"ext.r", act, ext * H},
      {"ext.y", act, ext * H},
      {"ext.aux", DRIFT_DTYPE_F32, ext * 3 * tH},
      {"lvl0.r", act, level * H},
      {"lvl0.y", act, level * H},
      {"lvl1.r", act, level * H},
      {"lvl1.y", act, level * H},
      {"parents", act, level * H},
      {"root.y", act, batch * H},
      {"picked", act, picked * H},
      {"logits", DRIFT_DTYPE_F32, picked * V},
      {"topk.values", DRIFT_DTYPE_F32, picked * k},
      {"topk.indices", DRIFT_DTYPE_I32, picked * k},
  };
  // Aux layer 0 reads the target's embeddings of the rows' own tokens.
  for (size_t i = 0; i < c.aux_layer_ids.size(); ++i)
    if (c.aux_layer_ids[i] <= 0) roles.push_back({"aux0." + std::to_string(i), DRIFT_DTYPE_F32, ext * tH});
  return roles;
}

}  // namespace

int64_t MemoryPlan::workspace_bytes() const {
  int64_t bytes = 0;
  for (const WorkspaceRole& role : workspace) bytes += role.elements * static_cast<int64_t>(element_size(role.dtype));
  return bytes;
}

int64_t MemoryPlan::fixed_bytes() const {
  return weight_bytes + workspace_bytes() + scratch_pages * kv_block_size * kv_bytes_per_token;
}

MemoryPlan plan_memory(const HeadConfig& config, const Settings& settings, const drift_model_info_t& model,
                       const std::string& checkpoint) {
  MemoryPlan plan;
  plan.weight_bytes = weight_bytes(checkpoint, model.activation_dtype);
  plan.workspace = workspace_roles(config, settings, model);
  plan.kv_block_size = std::max<int64_t>(model.block_size, 1);
  plan.kv_bytes_per_token =
      2 * config.num_kv_heads * config.head_dim * static_cast<int64_t>(element_size(model.activation_dtype));
  // Per sequence (one more than a batch: the engine's scoring probe): its draft tree's rows past the
  // committed ones, and a page for where its committed rows start inside a page of the engine's
  // (a cached prefix the head never saw) and end in another.
  const int64_t tree_pages = (tree_bounds(settings.shape).rows + plan.kv_block_size - 1) / plan.kv_block_size;
  plan.scratch_pages = (std::max<int64_t>(model.max_batch_size, 1) + 1) * (tree_pages + 1);
  return plan;
}

}  // namespace eagle3
