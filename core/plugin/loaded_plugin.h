#pragma once
// LoadedPlugin: PluginHost's record of one plugin (internal to core/plugin/).
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "core/plugin/host_services.h"
#include "core/plugin/page_chain.h"
#include "core/plugin/plugin_library.h"
#include "core/plugin/plugin_types.h"
#include "drift/plugin.h"

namespace drift {

struct LoadedPlugin {
  std::unique_ptr<PluginLibrary> library;  // declared first: unloaded after everything else
  std::unique_ptr<PluginContext> context;
  drift_plugin_t desc{};                   // the adopted (zero-filled) descriptor
  void* instance = nullptr;                // non-null between a successful create and destroy
  PluginInfo info;
  std::vector<int32_t> capture_layers;
  PluginMemory memory;  // what declare_memory said (zero when it has none)
  bool declared_memory = false;
  std::set<drift_seq_id_t> disabled_requests;
  // Cache manager: the pages the host retains for it, each with the host's own record of what
  // it holds (block index, chain key) and the block's tokens, checked on every match.
  struct HeldPage {
    PageChainKey chain;
    std::vector<drift_token_t> tokens;
  };
  std::map<drift_page_id_t, HeldPage> held_pages;

  bool is(drift_kinds_t kind) const { return info.enabled && (desc.kinds & kind); }
  bool usable_for(drift_seq_id_t seq) const {
    return info.enabled && !disabled_requests.contains(seq);
  }
};

inline drift_request_info_t to_c(const RequestInfo& r) {
  drift_request_info_t c{};
  c.struct_size = sizeof(c);
  c.seq_id = r.seq;
  c.tokens = r.tokens.data();
  c.num_tokens = static_cast<int64_t>(r.tokens.size());
  c.num_prompt_tokens = r.num_prompt_tokens;
  c.num_cached_tokens = r.num_cached_tokens;
  c.max_new_tokens = r.max_new_tokens;
  c.temperature = r.temperature;
  c.resumed = r.resumed;
  c.cache_salt = r.cache_salt.c_str();
  c.provides_drafts = false;  // per plugin: PluginHost::request_start sets it
  return c;
}

inline drift_step_t to_c(const StepInfo& s) {
  drift_step_t c{};
  c.struct_size = sizeof(c);
  c.step = s.step;
  c.stream = s.stream;
  return c;
}

}  // namespace drift
