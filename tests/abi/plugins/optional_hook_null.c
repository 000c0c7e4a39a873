/* A verification policy with only its required hook: every optional hook is NULL, which the
 * host must simply skip. */
#include "test_plugin.h"

static int32_t calls;

static drift_status_t create(const drift_host_api_t* host, const char* settings, void** instance) {
  (void)host;
  (void)settings;
  *instance = &calls;
  return DRIFT_OK;
}

static void destroy(void* instance) { (void)instance; }

static drift_status_t choose(void* instance, const drift_step_t* step,
                             drift_kv_view_t* const* views, size_t n) {
  (void)step;
  (void)views;
  (void)n;
  ++*(int32_t*)instance;
  return DRIFT_OK;
}

static const drift_plugin_t descriptor = {
    sizeof(drift_plugin_t), DRIFT_ABI_MAJOR, DRIFT_ABI_MINOR, "optional_hook_null", "1.0.0",
    DRIFT_KIND_VERIFICATION_POLICY, create, destroy, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
    choose, NULL, NULL, NULL, NULL, NULL};

DRIFT_EXPORT const drift_plugin_t* drift_plugin_get(const drift_host_api_t* host,
                                                    uint32_t host_abi_version) {
  (void)host;
  (void)host_abi_version;
  return &descriptor;
}
