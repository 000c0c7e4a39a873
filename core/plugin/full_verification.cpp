#include "core/plugin/full_verification.h"

namespace drift {
namespace {

int full_instance;  // the policy is stateless; create hands out this address

drift_status_t create(const drift_host_api_t*, const char*, void** instance) {
  *instance = &full_instance;
  return DRIFT_OK;
}

void destroy(void*) {}

drift_status_t choose_kv_view(void*, const drift_step_t*, drift_kv_view_t* const* views,
                              size_t num_views) {
  for (size_t i = 0; i < num_views; ++i) views[i]->mode = DRIFT_KV_VIEW_FULL;
  return DRIFT_OK;
}

const drift_plugin_t kFullPolicy = [] {
  drift_plugin_t d{};
  d.struct_size = sizeof(d);
  d.abi_major = DRIFT_ABI_MAJOR;
  d.abi_minor = DRIFT_ABI_MINOR;
  d.name = "full";
  d.version = "builtin";
  d.kinds = DRIFT_KIND_VERIFICATION_POLICY;
  d.create = &create;
  d.destroy = &destroy;
  d.on_choose_kv_view = &choose_kv_view;
  return d;
}();

}  // namespace

const drift_plugin_t* builtin_plugin(std::string_view name) {
  return name == "full" ? &kFullPolicy : nullptr;
}

}  // namespace drift
