// PluginHost: the draft providers' on_propose and the verification policy's on_choose_kv_view.
// Both are batch hooks: the host builds C buffers for the sequences the plugin is still enabled
// for, calls once, then validates each sequence's result on its own. A plugin can write to
// every field of the structs it gets, "in" fields included, so the host never reads an "in"
// field back: it keeps its own copy of each (sequence id, capacities, buffer pointers) and a
// struct whose copy no longer matches is that sequence's failure, not a crash.
#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "core/plugin/guarded_call.h"
#include "core/plugin/loaded_plugin.h"
#include "core/plugin/page_block_index.h"
#include "core/plugin/plugin_host.h"

namespace drift {
namespace {

// A sequence the plugin failed on its own (the per-item status of a batch hook).
std::string failed_status(drift_status_t status) {
  return fmt::format("set status {} for this sequence", status);
}

template <typename T>
std::string changed(const char* field, T was, T now) {
  return was == now ? "" : fmt::format("overwrote the input field {} (the host set it; it must not change)", field);
}

struct TreeSlot {
  size_t index = 0;  // into the request list
  drift_seq_id_t seq = 0;
  int32_t budget = 0;
  drift_draft_tree_t tree{};
  std::vector<drift_token_t> tokens;
  std::vector<int32_t> parents;
  std::vector<float> probs;

  // The "in" fields as the host set them, or what the plugin did to them.
  std::string inputs_intact() const {
    for (const std::string& why :
         {changed("struct_size", static_cast<uint32_t>(sizeof(drift_draft_tree_t)), tree.struct_size),
          changed("seq_id", seq, tree.seq_id), changed("budget", budget, tree.budget),
          changed("tokens", static_cast<const void*>(tokens.data()), static_cast<const void*>(tree.tokens)),
          changed("parents", static_cast<const void*>(parents.data()), static_cast<const void*>(tree.parents)),
          changed("probs", static_cast<const void*>(probs.data()), static_cast<const void*>(tree.probs))})
      if (!why.empty()) return why;
    return "";
  }

  // The proposed tree (host buffers only), or why it cannot be verified.
  std::string read(int64_t vocab_size, DraftTree& out) const {
    if (tree.num_nodes < 0 || tree.num_nodes > budget)
      return fmt::format("proposed {} nodes with a budget of {}", tree.num_nodes, budget);
    auto n = static_cast<size_t>(tree.num_nodes);
    out.tokens.assign(tokens.begin(), tokens.begin() + n);
    out.parents.assign(parents.begin(), parents.begin() + n);
    if (tree.has_probs) {
      out.probs.assign(probs.begin(), probs.begin() + n);
      for (size_t i = 0; i < n; ++i)
        if (!(out.probs[i] >= 0.0f && out.probs[i] <= 1.0f))
          return fmt::format("node {} has draft probability {}", i, out.probs[i]);
    }
    // A host without a model description (unit tests of the host alone) checks only the sign.
    const int64_t vocab = vocab_size > 0 ? vocab_size : int64_t{1} << 31;
    return validate_draft_tree(out, DraftLimits{vocab, budget, 0});
  }
};

struct ViewSlot {
  size_t index = 0;
  drift_seq_id_t seq = 0;
  int32_t max_pages = 0;
  std::span<const int32_t> table;  // the host's own block table of the sequence
  int64_t tail_block = 0;
  drift_kv_view_t view{};
  std::vector<int32_t> counts;
  std::vector<drift_page_id_t> pages;

  std::string inputs_intact() const {
    for (const std::string& why :
         {changed("struct_size", static_cast<uint32_t>(sizeof(drift_kv_view_t)), view.struct_size),
          changed("seq_id", seq, view.seq_id), changed("max_pages", max_pages, view.max_pages),
          changed("page_counts", static_cast<const void*>(counts.data()), static_cast<const void*>(view.page_counts)),
          changed("pages", static_cast<const void*>(pages.data()), static_cast<const void*>(view.pages))})
      if (!why.empty()) return why;
    return "";
  }

  // Page lists of a PAGES view in block-table order, or the reason they are unusable: every page
  // must be a distinct page of the sequence's own block table before the tail (never another
  // sequence's KV, never the slots the tree writes).
  std::string read_lists(const drift_model_info_t& m, KvView& out) const {
    const int64_t lists = view.per_kv_head ? m.num_layers * m.num_kv_heads : m.num_layers;
    if (lists <= 0) return "chose page lists but the host has no model layout to size them";
    const PageBlockIndex index(table.first(static_cast<size_t>(tail_block)));
    out.lists.resize(static_cast<size_t>(lists));
    std::vector<int64_t> blocks;
    for (int64_t l = 0; l < lists; ++l) {
      const int32_t count = counts[l];
      if (count < 0 || count > max_pages) return fmt::format("list {} has {} pages (capacity {})", l, count, max_pages);
      const drift_page_id_t* first = &pages[l * max_pages];
      blocks.clear();
      for (int32_t i = 0; i < count; ++i) {
        const int64_t block = index.block_of(first[i]);
        if (block < 0)
          return fmt::format("list {} names page {}, which is not one of the sequence's {} pages before its tail", l,
                             first[i], tail_block);
        blocks.push_back(block);
      }
      if (!std::is_sorted(blocks.begin(), blocks.end())) std::sort(blocks.begin(), blocks.end());
      if (std::adjacent_find(blocks.begin(), blocks.end()) != blocks.end())
        return fmt::format("list {} names a page more than once", l);
      out.lists[l].clear();
      for (int64_t b : blocks) out.lists[l].push_back(table[b]);
    }
    out.full = false;
    out.per_kv_head = view.per_kv_head;
    return "";
  }
};

}  // namespace

std::vector<DraftTree> PluginHost::propose(const StepInfo& step, std::span<const DraftRequest> requests) {
  std::vector<DraftTree> trees(requests.size());
  // One batch call per provider, for the requests that use it.
  std::map<LoadedPlugin*, std::vector<size_t>> by_provider;
  for (size_t i = 0; i < requests.size(); ++i) {
    LoadedPlugin* p = requests[i].provider.empty() ? draft_provider_ : find(requests[i].provider);
    if (p && p->is(DRIFT_KIND_DRAFT_PROVIDER) && requests[i].budget > 0 && p->usable_for(requests[i].seq))
      by_provider[p].push_back(i);
  }
  for (auto& [p, indices] : by_provider) propose_with(*p, step, requests, indices, trees);
  return trees;
}

void PluginHost::propose_with(LoadedPlugin& p, const StepInfo& step, std::span<const DraftRequest> requests,
                              const std::vector<size_t>& indices, std::vector<DraftTree>& trees) {
  std::vector<TreeSlot> slots(indices.size());
  std::vector<drift_draft_tree_t*> c_trees;
  std::vector<drift_seq_id_t> seqs;
  for (size_t k = 0; k < indices.size(); ++k) {
    TreeSlot& s = slots[k];
    s.index = indices[k];
    s.seq = requests[s.index].seq;
    s.budget = requests[s.index].budget;
    s.tokens.assign(s.budget, 0);
    s.parents.assign(s.budget, -1);
    s.probs.assign(s.budget, 0.0f);
    s.tree.struct_size = sizeof(drift_draft_tree_t);
    s.tree.seq_id = s.seq;
    s.tree.budget = s.budget;
    s.tree.status = DRIFT_OK;
    s.tree.tokens = s.tokens.data();
    s.tree.parents = s.parents.data();
    s.tree.probs = s.probs.data();
    c_trees.push_back(&s.tree);
    seqs.push_back(s.seq);
  }
  drift_step_t c_step = to_c(step);
  if (auto why = guarded_call([&] { return p.desc.on_propose(p.instance, &c_step, c_trees.data(), c_trees.size()); })) {
    fallback(p, "on_propose", seqs, *why);
    return;
  }
  for (const TreeSlot& s : slots) {
    DraftTree tree;
    std::string bad = s.inputs_intact();
    const bool failed = bad.empty() && s.tree.status != DRIFT_OK;  // the plugin failed it (and dropped it)
    if (bad.empty()) bad = failed ? failed_status(s.tree.status) : s.read(state_->model_info.vocab_size, tree);
    if (bad.empty())
      trees[s.index] = std::move(tree);
    else if (failed)
      fallback(p, "on_propose", std::span(&s.seq, 1), bad);
    else
      refuse_output(p, "on_propose", s.seq, bad);
  }
}

std::vector<KvView> PluginHost::choose_kv_view(const StepInfo& step, std::span<const KvViewRequest> requests) {
  std::vector<KvView> views(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) views[i].seq = requests[i].seq;
  LoadedPlugin* p = verification_;
  const drift_model_info_t& m = state_->model_info;
  const auto lists = static_cast<size_t>(std::max<int64_t>(m.num_layers * m.num_kv_heads, 0));

  std::vector<ViewSlot> slots;
  for (size_t i = 0; i < requests.size(); ++i) {
    if (!p->usable_for(requests[i].seq)) continue;
    ViewSlot& s = slots.emplace_back();
    s.index = i;
    s.seq = requests[i].seq;
    s.table = requests[i].block_table;
    s.tail_block = std::clamp<int64_t>(requests[i].tail_block, 0, static_cast<int64_t>(s.table.size()));
    s.max_pages = static_cast<int32_t>(s.table.size());
    s.counts.assign(lists, 0);
    s.pages.assign(lists * s.max_pages, -1);
  }
  if (slots.empty()) return views;
  std::vector<drift_kv_view_t*> c_views;
  std::vector<drift_seq_id_t> seqs;
  for (ViewSlot& s : slots) {  // buffers are final now: point the C structs at them
    s.view.struct_size = sizeof(drift_kv_view_t);
    s.view.seq_id = s.seq;
    s.view.mode = DRIFT_KV_VIEW_FULL;
    s.view.status = DRIFT_OK;
    s.view.max_pages = s.max_pages;
    s.view.page_counts = s.counts.data();
    s.view.pages = s.pages.data();
    c_views.push_back(&s.view);
    seqs.push_back(s.seq);
  }

  drift_step_t c_step = to_c(step);
  if (auto why = guarded_call([&] { return p->desc.on_choose_kv_view(p->instance, &c_step, c_views.data(), c_views.size()); })) {
    fallback(*p, "on_choose_kv_view", seqs, *why);
    return views;
  }
  for (const ViewSlot& s : slots) {
    std::string bad = s.inputs_intact();
    // 1.3: the host presets keep_queries false, so a policy built against an older header keeps none.
    const bool keep_queries = s.view.keep_queries;
    if (bad.empty() && s.view.status == DRIFT_OK && s.view.mode == DRIFT_KV_VIEW_FULL) {
      views[s.index].keep_queries = keep_queries;
      continue;
    }
    KvView chosen;
    chosen.seq = s.seq;
    chosen.keep_queries = keep_queries;
    const bool failed = bad.empty() && s.view.status != DRIFT_OK;  // the plugin failed it (and dropped it)
    if (bad.empty())
      bad = failed                               ? failed_status(s.view.status)
            : s.view.mode == DRIFT_KV_VIEW_PAGES ? s.read_lists(m, chosen)
                                                 : fmt::format("chose unknown view mode {}", s.view.mode);
    if (bad.empty())
      views[s.index] = std::move(chosen);
    else if (failed)
      fallback(*p, "on_choose_kv_view", std::span(&s.seq, 1), bad);
    else
      refuse_output(*p, "on_choose_kv_view", s.seq, bad);
  }
  return views;
}

}  // namespace drift
