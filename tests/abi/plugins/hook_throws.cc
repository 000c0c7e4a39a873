// A C++ plugin that lets exceptions escape through the C boundary -- forbidden by the ABI, but
// it happens, and the host must survive it: on_propose (or create, with fail_hook = "create")
// throws std::runtime_error for request `fail_seq` (-1: all). Built with normal exceptions.
#include <stdexcept>
#include <string>

#include "test_plugin.h"

namespace {

struct Instance {
  test_calls_t calls{};  // first, for test_count
  std::string fail_hook = "on_propose";
  int64_t fail_seq = -1;
};

std::string setting(const drift_host_api_t* host, const char* key, const char* fallback) {
  char buf[64];
  size_t len = 0;
  return host->get_setting_string(host->ctx, key, buf, sizeof buf, &len) == DRIFT_OK ? buf : fallback;
}

drift_status_t create(const drift_host_api_t* host, const char*, void** out) {
  auto* self = new Instance;
  self->fail_hook = setting(host, "fail_hook", "on_propose");
  host->get_setting_int(host->ctx, "fail_seq", &self->fail_seq);
  if (self->fail_hook == "create") {
    delete self;
    throw std::runtime_error("hook_throws: create failed on purpose");
  }
  *out = self;
  return DRIFT_OK;
}

void destroy(void* instance) { delete static_cast<Instance*>(instance); }

drift_status_t on_propose(void* instance, const drift_step_t* step,
                          drift_draft_tree_t* const* trees, size_t n) {
  auto* self = static_cast<Instance*>(instance);
  for (size_t t = 0; t < n; ++t) {
    if (self->fail_hook == "on_propose" && (self->fail_seq < 0 || self->fail_seq == trees[t]->seq_id)) {
      test_record(instance, "on_propose", trees[t]->seq_id);
      throw std::runtime_error("hook_throws: on_propose failed on purpose for request " +
                               std::to_string(trees[t]->seq_id));
    }
  }
  return test_on_propose(instance, step, trees, n);
}

drift_plugin_t make_descriptor() {
  drift_plugin_t d{};
  d.struct_size = sizeof(d);
  d.abi_major = DRIFT_ABI_MAJOR;
  d.abi_minor = DRIFT_ABI_MINOR;
  d.name = "hook_throws";
  d.version = "1.0.0";
  d.kinds = DRIFT_KIND_DRAFT_PROVIDER;
  d.create = create;
  d.destroy = destroy;
  d.get_extension = test_get_extension;
  d.on_request_start = test_on_request_start;
  d.on_propose = on_propose;
  return d;
}

const drift_plugin_t descriptor = make_descriptor();

}  // namespace

const drift_plugin_t* drift_plugin_get(const drift_host_api_t*, uint32_t) { return &descriptor; }
