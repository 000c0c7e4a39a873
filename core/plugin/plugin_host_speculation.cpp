// PluginHost: the draft provider's on_propose and the verification policy's on_choose_kv_view.
// Both are batch hooks: the host builds C buffers for the sequences the plugin is still
// enabled for, calls once, then validates each sequence's result on its own.
#include <cmath>

#include <fmt/format.h>

#include "core/plugin/guarded_call.h"
#include "core/plugin/loaded_plugin.h"
#include "core/plugin/plugin_host.h"

namespace drift {
namespace {

struct TreeSlot {
  size_t index = 0;  // into the request list
  drift_draft_tree_t tree{};
  std::vector<drift_token_t> tokens;
  std::vector<int32_t> parents;
  std::vector<float> probs;
};

// A sequence the plugin failed on its own (the per-item status of a batch hook).
std::string failed_status(drift_status_t status) {
  return fmt::format("set status {} for this sequence", status);
}

// Why a proposed tree cannot be verified, or "" when it is well-formed.
std::string check_tree(const drift_draft_tree_t& t, int64_t vocab_size) {
  if (t.num_nodes < 0 || t.num_nodes > t.budget)
    return fmt::format("proposed {} nodes with a budget of {}", t.num_nodes, t.budget);
  for (int32_t i = 0; i < t.num_nodes; ++i) {
    if (t.parents[i] < -1 || t.parents[i] >= i)
      return fmt::format("node {} has parent {} (must be -1..{})", i, t.parents[i], i - 1);
    if (t.tokens[i] < 0 || (vocab_size > 0 && t.tokens[i] >= vocab_size))
      return fmt::format("node {} has token {} outside the vocabulary", i, t.tokens[i]);
    if (t.has_probs && !(t.probs[i] >= 0.0f && t.probs[i] <= 1.0f))
      return fmt::format("node {} has draft probability {}", i, t.probs[i]);
  }
  return "";
}

DraftTree to_tree(const TreeSlot& s) {
  auto n = static_cast<size_t>(s.tree.num_nodes);
  DraftTree out;
  out.seq = s.tree.seq_id;
  out.tokens.assign(s.tokens.begin(), s.tokens.begin() + n);
  out.parents.assign(s.parents.begin(), s.parents.begin() + n);
  if (s.tree.has_probs) out.probs.assign(s.probs.begin(), s.probs.begin() + n);
  return out;
}

struct ViewSlot {
  size_t index = 0;
  drift_kv_view_t view{};
  std::vector<int32_t> counts;
  std::vector<drift_page_id_t> pages;
};

// Page lists of a PAGES view, or the reason they are unusable.
std::string read_lists(const ViewSlot& s, const drift_model_info_t& m, KvView& out) {
  int64_t lists = s.view.per_kv_head ? m.num_layers * m.num_kv_heads : m.num_layers;
  if (lists <= 0) return "chose page lists but the host has no model layout to size them";
  out.lists.resize(static_cast<size_t>(lists));
  for (int64_t l = 0; l < lists; ++l) {
    int32_t count = s.counts[l];
    if (count < 0 || count > s.view.max_pages)
      return fmt::format("list {} has {} pages (capacity {})", l, count, s.view.max_pages);
    const drift_page_id_t* first = &s.pages[l * s.view.max_pages];
    for (int32_t i = 0; i < count; ++i)
      if (first[i] < 0 || (m.num_pages > 0 && first[i] >= m.num_pages))
        return fmt::format("list {} names page {} outside the pool", l, first[i]);
    out.lists[l].assign(first, first + count);
  }
  out.full = false;
  out.per_kv_head = s.view.per_kv_head;
  return "";
}

}  // namespace

std::vector<DraftTree> PluginHost::propose(const StepInfo& step,
                                           std::span<const DraftRequest> requests) {
  std::vector<DraftTree> trees(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) trees[i].seq = requests[i].seq;
  LoadedPlugin* p = draft_provider_;
  if (!p) return trees;

  std::vector<TreeSlot> slots;
  for (size_t i = 0; i < requests.size(); ++i) {
    if (requests[i].budget <= 0 || !p->usable_for(requests[i].seq)) continue;
    TreeSlot& s = slots.emplace_back();
    s.index = i;
    s.tokens.assign(requests[i].budget, 0);
    s.parents.assign(requests[i].budget, -1);
    s.probs.assign(requests[i].budget, 0.0f);
    s.tree.struct_size = sizeof(drift_draft_tree_t);
    s.tree.seq_id = requests[i].seq;
    s.tree.budget = requests[i].budget;
    s.tree.status = DRIFT_OK;
  }
  if (slots.empty()) return trees;
  std::vector<drift_draft_tree_t*> c_trees;
  std::vector<drift_seq_id_t> seqs;
  for (TreeSlot& s : slots) {  // buffers are final now: point the C structs at them
    s.tree.tokens = s.tokens.data();
    s.tree.parents = s.parents.data();
    s.tree.probs = s.probs.data();
    c_trees.push_back(&s.tree);
    seqs.push_back(s.tree.seq_id);
  }

  drift_step_t c_step = to_c(step);
  if (auto why = guarded_call([&] { return p->desc.on_propose(p->instance, &c_step, c_trees.data(), c_trees.size()); })) {
    fallback(*p, "on_propose", seqs, *why);
    return trees;
  }
  for (const TreeSlot& s : slots) {
    std::string bad = s.tree.status != DRIFT_OK ? failed_status(s.tree.status)
                                                : check_tree(s.tree, state_->model_info.vocab_size);
    if (bad.empty())
      trees[s.index] = to_tree(s);
    else
      fallback(*p, "on_propose", std::span(&s.tree.seq_id, 1), bad);
  }
  return trees;
}

std::vector<KvView> PluginHost::choose_kv_view(const StepInfo& step,
                                               std::span<const KvViewRequest> requests) {
  std::vector<KvView> views(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) views[i].seq = requests[i].seq;
  LoadedPlugin* p = verification_;
  const drift_model_info_t& m = state_->model_info;
  size_t lists = static_cast<size_t>(std::max<int64_t>(m.num_layers * m.num_kv_heads, 0));

  std::vector<ViewSlot> slots;
  for (size_t i = 0; i < requests.size(); ++i) {
    if (!p->usable_for(requests[i].seq)) continue;
    ViewSlot& s = slots.emplace_back();
    s.index = i;
    s.counts.assign(lists, 0);
    s.pages.assign(lists * std::max(requests[i].max_pages, 0), -1);
    s.view.struct_size = sizeof(drift_kv_view_t);
    s.view.seq_id = requests[i].seq;
    s.view.mode = DRIFT_KV_VIEW_FULL;
    s.view.status = DRIFT_OK;
    s.view.max_pages = std::max(requests[i].max_pages, 0);
  }
  if (slots.empty()) return views;
  std::vector<drift_kv_view_t*> c_views;
  std::vector<drift_seq_id_t> seqs;
  for (ViewSlot& s : slots) {
    s.view.page_counts = s.counts.data();
    s.view.pages = s.pages.data();
    c_views.push_back(&s.view);
    seqs.push_back(s.view.seq_id);
  }

  drift_step_t c_step = to_c(step);
  if (auto why = guarded_call([&] { return p->desc.on_choose_kv_view(p->instance, &c_step, c_views.data(), c_views.size()); })) {
    fallback(*p, "on_choose_kv_view", seqs, *why);
    return views;
  }
  for (const ViewSlot& s : slots) {
    if (s.view.status == DRIFT_OK && s.view.mode == DRIFT_KV_VIEW_FULL) continue;
    KvView chosen;
    chosen.seq = s.view.seq_id;
    std::string bad = s.view.status != DRIFT_OK         ? failed_status(s.view.status)
                      : s.view.mode == DRIFT_KV_VIEW_PAGES ? read_lists(s, m, chosen)
                                                         : fmt::format("chose unknown view mode {}", s.view.mode);
    if (bad.empty())
      views[s.index] = std::move(chosen);
    else
      fallback(*p, "on_choose_kv_view", std::span(&s.view.seq_id, 1), bad);
  }
  return views;
}

}  // namespace drift
