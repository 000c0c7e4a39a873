// PluginHost: cache-manager hooks. The host, not the plugin, owns every reference count: it
// records which pages each cache manager holds, so a plugin can only name pages it was given
// and a disabled plugin's pages all come back to the engine.
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

}  // namespace

std::vector<drift_page_id_t> PluginHost::prefix_match(const RequestInfo& request,
                                                      int32_t max_pages) {
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
  std::vector<drift_page_id_t> retain;
  for (auto& p : plugins_) {
    if (!p->is(DRIFT_KIND_CACHE_MANAGER) || !p->usable_for(full.seq)) continue;
    auto keep = std::make_unique<bool[]>(full.pages.size());  // zeroed: nothing kept
    if (!call_for(*p, "on_pages_full", full.seq,
                  [&] { return p->desc.on_pages_full(p->instance, &c, keep.get()); }))
      continue;
    for (size_t i = 0; i < full.pages.size(); ++i)
      if (keep[i] && p->held_pages.insert(full.pages[i]).second) retain.push_back(full.pages[i]);
  }
  return retain;
}

std::vector<drift_page_id_t> PluginHost::evict(int32_t wanted, Eviction mode) {
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
  for (const auto& p : plugins_) pages.insert(pages.end(), p->held_pages.begin(), p->held_pages.end());
  return pages;
}

}  // namespace drift
