// PluginHost: cache-manager hooks. The host, not the plugin, owns every reference count: it
// records which pages each cache manager holds, so a plugin can only name pages it was given
// and a disabled plugin's pages all come back to the engine.
#include <algorithm>

#include <fmt/format.h>

#include "core/plugin/guarded_call.h"
#include "core/plugin/loaded_plugin.h"
#include "core/plugin/plugin_host.h"

namespace drift {
namespace {

// The first page in `pages` that `plugin` does not hold (or holds twice in the list), else -1.
int64_t foreign_page(const LoadedPlugin& plugin, std::span<const drift_page_id_t> pages) {
  std::set<drift_page_id_t> seen;
  for (drift_page_id_t page : pages)
    if (!plugin.held_pages.contains(page) || !seen.insert(page).second) return page;
  return -1;
}

// The first of the matched `pages` whose host record does not fit the request's block at its
// index (another block index, other tokens before it or in it, another salt); "" when all fit.
std::string misfit_page(const LoadedPlugin& plugin, std::span<const drift_page_id_t> pages,
                        const RequestInfo& request, int64_t block_size) {
  const std::vector<uint64_t> keys = page_chain_keys(request.tokens, block_size, static_cast<int64_t>(pages.size()),
                                                     page_chain_seed(request.cache_salt));
  for (size_t i = 0; i < pages.size(); ++i) {
    const LoadedPlugin::HeldPage& held = plugin.held_pages.at(pages[i]);
    const auto block = request.tokens.subspan(i * static_cast<size_t>(block_size), static_cast<size_t>(block_size));
    if (held.chain.block != static_cast<int64_t>(i) || held.chain.key != keys[i] ||
        !std::equal(block.begin(), block.end(), held.tokens.begin(), held.tokens.end()))
      return fmt::format("matched page {} for block {}, but it holds the KV of other tokens (or another cache salt)",
                         pages[i], i);
  }
  return "";
}

// Marks a hook during which host->release_pages is refused (see drift/plugin.h).
class ReadOnlyHook {
 public:
  ReadOnlyHook(const char*& slot, const char* hook) : slot_(slot) { slot_ = hook; }
  ~ReadOnlyHook() { slot_ = nullptr; }
  ReadOnlyHook(const ReadOnlyHook&) = delete;
  ReadOnlyHook& operator=(const ReadOnlyHook&) = delete;

 private:
  const char*& slot_;
};

}  // namespace

drift_status_t PluginHost::release_held(LoadedPlugin& p, std::span<const drift_page_id_t> pages) {
  std::string bad;
  if (!p.is(DRIFT_KIND_CACHE_MANAGER))
    bad = "it is not an enabled cache manager";
  else if (read_only_hook_)
    bad = fmt::format("called from {}", read_only_hook_);
  else if (int64_t page = foreign_page(p, pages); page >= 0)
    bad = fmt::format("page {} is not one it holds (or is named twice)", page);
  if (!bad.empty()) {
    p.context->log(DRIFT_LOG_ERROR, fmt::format("release_pages refused, nothing released: {}", bad).c_str());
    return DRIFT_ERROR_INVALID_ARGUMENT;
  }
  for (drift_page_id_t page : pages) {
    p.held_pages.erase(page);
    if (state_->callbacks.release_page) state_->callbacks.release_page(page);
  }
  return DRIFT_OK;
}

bool PluginHost::has_cache_manager() const {
  return std::any_of(plugins_.begin(), plugins_.end(), [](const auto& p) { return p->is(DRIFT_KIND_CACHE_MANAGER); });
}

int64_t PluginHost::num_held_pages() const {
  int64_t n = 0;
  for (const auto& p : plugins_) n += static_cast<int64_t>(p->held_pages.size());
  return n;
}

std::vector<drift_page_id_t> PluginHost::prefix_match(const RequestInfo& request,
                                                      int32_t max_pages) {
  const ReadOnlyHook read_only(read_only_hook_, "on_prefix_match");
  drift_request_info_t info = to_c(request);
  for (auto& p : plugins_) {
    if (!p->is(DRIFT_KIND_CACHE_MANAGER) || !p->usable_for(request.seq)) continue;
    std::vector<drift_page_id_t> pages(static_cast<size_t>(std::max(max_pages, 0)), -1);
    int32_t n = 0;
    if (!call_for(*p, "on_prefix_match", request.seq, [&] {
          return p->desc.on_prefix_match(p->instance, &info, pages.data(),
                                         static_cast<int32_t>(pages.size()), &n);
        }))
      continue;
    std::string bad;
    if (n < 0 || n > max_pages)
      bad = fmt::format("matched {} pages (at most {})", n, max_pages);
    else if (int64_t page = foreign_page(*p, std::span(pages.data(), n)); page >= 0)
      bad = fmt::format("matched page {}, which it does not hold", page);
    else
      bad = misfit_page(*p, std::span(pages.data(), n), request, state_->model_info.block_size);
    if (!bad.empty()) {
      fallback(*p, "on_prefix_match", std::span(&request.seq, 1), bad);
      continue;
    }
    if (n > 0) return {pages.begin(), pages.begin() + n};
  }
  return {};
}

std::vector<drift_page_id_t> PluginHost::pages_full(const FullPages& full) {
  drift_full_pages_t c{};
  c.struct_size = sizeof(c);
  c.seq_id = full.seq;
  c.first_block = full.first_block;
  c.num_pages = static_cast<int32_t>(full.pages.size());
  c.pages = full.pages.data();
  c.tokens = full.tokens.data();
  c.prefix = full.prefix.data();
  const std::vector<PageChainKey> keys = chain_keys(full);
  const auto bs = static_cast<size_t>(state_->model_info.block_size);
  std::vector<drift_page_id_t> retain;
  for (auto& p : plugins_) {
    if (!p->is(DRIFT_KIND_CACHE_MANAGER) || !p->usable_for(full.seq)) continue;
    auto keep = std::make_unique<bool[]>(full.pages.size());  // zeroed: nothing kept
    if (!call_for(*p, "on_pages_full", full.seq,
                  [&] { return p->desc.on_pages_full(p->instance, &c, keep.get()); }))
      continue;
    for (size_t i = 0; i < full.pages.size(); ++i) {
      if (!keep[i]) continue;
      const auto tokens = full.tokens.subspan(i * bs, bs);
      LoadedPlugin::HeldPage held{keys[i], {tokens.begin(), tokens.end()}};
      if (p->held_pages.try_emplace(full.pages[i], std::move(held)).second) retain.push_back(full.pages[i]);
    }
  }
  return retain;
}

// The chain keys of the offered pages, continuing the request's last offer when it ended just
// before them (the usual case), else computed from the prefix.
std::vector<PageChainKey> PluginHost::chain_keys(const FullPages& full) {
  const int64_t bs = state_->model_info.block_size;
  const uint64_t seed = page_chain_seed(full.cache_salt);
  uint64_t parent = 0;
  if (full.first_block > 0) {
    auto tail = chain_tails_.find(full.seq);
    parent = tail != chain_tails_.end() && tail->second.block == full.first_block - 1
                 ? tail->second.key
                 : page_chain_keys(full.prefix, bs, full.first_block, seed).back();
  }
  std::vector<PageChainKey> keys;
  for (size_t i = 0; i < full.pages.size(); ++i) {
    parent = next_page_chain_key(parent, full.tokens.subspan(i * static_cast<size_t>(bs), static_cast<size_t>(bs)), seed);
    keys.push_back({full.first_block + static_cast<int64_t>(i), parent});
  }
  if (!keys.empty()) chain_tails_[full.seq] = keys.back();
  return keys;
}

std::vector<drift_page_id_t> PluginHost::evict(int32_t wanted, Eviction mode) {
  const ReadOnlyHook read_only(read_only_hook_, "on_evict");
  std::vector<drift_page_id_t> released;
  for (auto& p : plugins_) {
    if (static_cast<int64_t>(released.size()) >= wanted) break;
    if (!p->is(DRIFT_KIND_CACHE_MANAGER) || p->held_pages.empty()) continue;
    int32_t ask = wanted - static_cast<int32_t>(released.size());
    int32_t capacity = static_cast<int32_t>(p->held_pages.size());
    std::vector<drift_page_id_t> pages(static_cast<size_t>(capacity), -1);
    int32_t n = 0;
    std::optional<std::string> why = guarded_call(
        [&] { return p->desc.on_evict(p->instance, ask, pages.data(), capacity, &n); });
    if (!why && (n < 0 || n > capacity))
      why = fmt::format("released {} pages (capacity {})", n, capacity);
    else if (!why)
      if (int64_t page = foreign_page(*p, std::span(pages.data(), n)); page >= 0)
        why = fmt::format("released page {}, which it does not hold", page);
    if (!why && mode == Eviction::Required && n < std::min(ask, capacity))
      why = fmt::format("released {} of the {} pages asked for while the engine could not proceed without them", n,
                        std::min(ask, capacity));
    if (why) {  // no request to blame: the plugin goes, and its pages with it
      std::vector<drift_page_id_t> all = disable(*p, "on_evict", *why);
      released.insert(released.end(), all.begin(), all.end());
      continue;
    }
    for (int32_t i = 0; i < n; ++i) {
      p->held_pages.erase(pages[i]);
      released.push_back(pages[i]);
    }
  }
  return released;
}

std::vector<drift_page_id_t> PluginHost::held_pages() const {
  std::vector<drift_page_id_t> pages;
  for (const auto& p : plugins_)
    for (const auto& held : p->held_pages) pages.push_back(held.first);
  return pages;
}

}  // namespace drift
