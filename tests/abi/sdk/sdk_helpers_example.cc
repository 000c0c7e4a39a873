// A minimal C++ draft provider written only against the installed <drift/plugin.h> and
// <drift/plugin_helpers.hpp>: proposes a chain of `depth` copies of setting `token`. Its
// settings go through drift::plugin::Settings and every hook through drift::plugin::guard.
#include <drift/plugin.h>
#include <drift/plugin_helpers.hpp>

namespace {

struct Instance {
  drift_token_t token = 1;
  int32_t depth = 2;
};

drift_status_t create(const drift_host_api_t* host, const char* settings, void** out) {
  return drift::plugin::guard(host, "sdk_helpers_example", "create", [&] {
    // Every setting is read (and may throw) before anything is allocated: a refused setting
    // leaves nothing behind (the host never calls destroy after a failed create).
    drift::plugin::Settings s(settings ? settings : "");
    Instance self;
    self.token = static_cast<drift_token_t>(s.integer("token", 1, 0, 1 << 30));
    self.depth = static_cast<int32_t>(s.integer("depth", 2, 1, 8));
    s.finish();
    *out = new Instance(self);
  });
}

void destroy(void* instance) { delete static_cast<Instance*>(instance); }

drift_status_t propose(void* instance, const drift_step_t*, drift_draft_tree_t* const* trees, size_t n) {
  const Instance& self = *static_cast<const Instance*>(instance);
  for (size_t t = 0; t < n; ++t) {
    const int32_t nodes = self.depth < trees[t]->budget ? self.depth : trees[t]->budget;
    for (int32_t i = 0; i < nodes; ++i) {
      trees[t]->tokens[i] = self.token;
      trees[t]->parents[i] = i - 1;
    }
    trees[t]->num_nodes = nodes;
  }
  return DRIFT_OK;
}

const drift_plugin_t descriptor = {sizeof(drift_plugin_t),
                                   DRIFT_ABI_MAJOR,
                                   DRIFT_ABI_MINOR,
                                   "sdk_helpers_example",
                                   "1.0.0",
                                   DRIFT_KIND_DRAFT_PROVIDER,
                                   create,
                                   destroy,
                                   nullptr,
                                   nullptr,
                                   nullptr,
                                   nullptr,
                                   nullptr,
                                   nullptr,
                                   propose,
                                   nullptr,
                                   nullptr,
                                   nullptr,
                                   nullptr,
                                   nullptr,
                                   nullptr};

}  // namespace

DRIFT_EXPORT const drift_plugin_t* drift_plugin_get(const drift_host_api_t*, uint32_t) { return &descriptor; }
