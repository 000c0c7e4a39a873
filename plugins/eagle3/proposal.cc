// on_propose: each sequence's tree grows level by level from its root distribution. A level is
// one draft forward over the nodes every sequence expands (TreeSearch decides which), batched
// across sequences. A node expanded at depth d runs at position root + d - 1 with its parent's
// output y as h (the root's parent output is the extension's last row), writes its K/V into the
// sequence's draft cache past the committed rows, and sees every committed row, its ancestors'
// rows and its own. Those tree rows are never committed: the next extension overwrites them.
#include <algorithm>

#include "eagle3_state.h"

namespace eagle3 {
namespace {

struct Drafting {
  Drafting(drift_draft_tree_t* t, Request* r, const TreeShape& shape) : tree(t), request(r), search(shape, t->budget) {}
  drift_draft_tree_t* tree;
  Request* request;
  TreeSearch search;
  std::vector<int32_t> level_row;  // per node: its row in the level that expanded it
  std::vector<int32_t> cache_row;  // per node: its tree row (0-based past the committed rows)
  int32_t tree_rows = 0;
};

// Adds x's expansions of this level to the batch; false when x has none left.
bool add_expansions(Drafting& x, DraftBatch& b, std::vector<int32_t>& parent_rows,
                    std::vector<std::pair<Drafting*, int32_t>>& expanded) {
  const std::vector<int32_t> expand = x.search.next_expansions();
  if (expand.empty()) return false;
  // A draft KV pool too full for this level's rows: the tree stops growing (what it has stands).
  DraftCache& cache = x.request->cache;
  if (!cache.reserve(x.tree_rows + static_cast<int64_t>(expand.size()))) return false;
  const auto& nodes = x.search.nodes();
  x.level_row.resize(nodes.size(), -1);
  x.cache_row.resize(nodes.size(), -1);
  SeqRows s;
  s.cache = &cache;
  s.first_row = static_cast<int64_t>(b.tokens.size());
  s.count = static_cast<int64_t>(expand.size());
  s.cache_row = cache.length() + x.tree_rows;
  s.tree = true;
  const int64_t width = x.tree_rows + s.count;
  s.mask.assign(static_cast<size_t>(s.count * width), 0);
  for (size_t j = 0; j < expand.size(); ++j) {
    const int32_t node = expand[j];
    x.cache_row[node] = x.tree_rows + static_cast<int32_t>(j);
    for (int32_t a = node; a >= 0; a = nodes[a].parent) s.mask[j * width + x.cache_row[a]] = 1;
    b.tokens.push_back(nodes[node].token);
    b.positions.push_back(static_cast<int32_t>(x.request->root_position + nodes[node].depth - 1));
    const int32_t parent = nodes[node].parent;
    parent_rows.push_back(parent < 0 ? static_cast<int32_t>(x.request->root_row) : x.level_row[parent]);
    expanded.emplace_back(&x, node);
  }
  x.tree_rows = static_cast<int32_t>(width);
  b.seqs.push_back(std::move(s));
  return true;
}

// One level: returns false when no sequence expands anything more.
bool run_level(Plugin& p, std::vector<Drafting>& drafting, int level, drift_tensor_t& parents) {
  DraftBatch b;
  std::vector<int32_t> parent_rows;
  std::vector<std::pair<Drafting*, int32_t>> expanded;
  for (Drafting& x : drafting) add_expansions(x, b, parent_rows, expanded);
  if (expanded.empty()) return false;
  const auto n = static_cast<int64_t>(expanded.size());
  b.h = p.workspace->get("parents", p.host.activation_dtype(), {n, p.head->config().hidden_size});
  p.host.embedding(parents, parent_rows, b.h);  // each row's parent output: a row gather
  const drift_tensor_t y = p.head->forward(b, *p.workspace, level % 2 ? "lvl1" : "lvl0");
  int32_t width = 1;
  for (const auto& [x, node] : expanded) width = std::max(width, x->search.width(node));
  std::vector<int32_t> all(static_cast<size_t>(n));
  for (int64_t r = 0; r < n; ++r) all[r] = static_cast<int32_t>(r);
  std::vector<float> logits;
  const TopK top = p.head->top_k(y, all, width, *p.workspace, p.settings.keep_logits ? &logits : nullptr);
  const int64_t vocab = p.head->draft_vocab();
  for (int64_t r = 0; r < n; ++r) {
    auto [x, node] = expanded[r];
    x->level_row[node] = static_cast<int32_t>(r);
    x->search.add_children(node, &top.tokens[r * top.k], &top.probs[r * top.k], top.k);
    if (p.settings.keep_logits) {
      x->request->logits.insert(x->request->logits.end(), logits.begin() + r * vocab, logits.begin() + (r + 1) * vocab);
      x->request->logit_rows++;
    }
  }
  parents = y;
  return true;
}

void write_tree(const Drafting& x) {
  const TreeSearch::Result r = x.search.result();
  const auto n = static_cast<int32_t>(std::min<size_t>(r.tokens.size(), static_cast<size_t>(x.tree->budget)));
  std::copy_n(r.tokens.begin(), n, x.tree->tokens);
  std::copy_n(r.parents.begin(), n, x.tree->parents);
  if (x.tree->probs) {
    std::copy_n(r.probs.begin(), n, x.tree->probs);
    x.tree->has_probs = true;
  }
  x.tree->num_nodes = n;
}

}  // namespace

void propose_trees(Plugin& p, int64_t step, drift_draft_tree_t* const* trees, size_t n) {
  std::vector<Drafting> drafting;
  drafting.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    drift_draft_tree_t* tree = trees[i];
    tree->num_nodes = 0;
    auto it = p.requests.find(tree->seq_id);
    if (it == p.requests.end() || it->second->root_step != step || tree->budget <= 0) continue;
    Request& r = *it->second;
    Drafting& x = drafting.emplace_back(tree, &r, p.settings.shape);
    x.search.add_root_children(r.root_tokens.data(), r.root_probs.data(), static_cast<int32_t>(r.root_tokens.size()));
    if (p.settings.keep_logits) {
      r.logits.resize(static_cast<size_t>(p.head->draft_vocab()));  // the root's row only
      r.logit_rows = 1;
    }
  }
  drift_tensor_t parents = p.root_y;
  for (int level = 0; run_level(p, drafting, level, parents); ++level) {
  }
  for (const Drafting& x : drafting) write_tree(x);
}

}  // namespace eagle3
