/* Says it is a draft provider but has no on_propose: refused at load. */
#include "test_plugin.h"

static const drift_plugin_t descriptor = {
    sizeof(drift_plugin_t), DRIFT_ABI_MAJOR, DRIFT_ABI_MINOR, "missing_required_hook", "1.0.0",
    DRIFT_KIND_DRAFT_PROVIDER, test_create, test_destroy, NULL, NULL,
    test_on_request_start, NULL, NULL, NULL,
    NULL, /* on_propose: required for a draft provider */
    NULL, NULL, NULL, NULL, NULL, NULL};

DRIFT_EXPORT const drift_plugin_t* drift_plugin_get(const drift_host_api_t* host,
                                                    uint32_t host_abi_version) {
  (void)host;
  (void)host_abi_version;
  return &descriptor;
}
