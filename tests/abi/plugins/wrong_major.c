/* Built against a future ABI 2.3: the host must refuse it and log both versions. */
#include "test_plugin.h"

static const drift_plugin_t descriptor = {
    sizeof(drift_plugin_t), DRIFT_ABI_MAJOR + 1, 3, "wrong_major", "2.0.0", 0,
    test_create, test_destroy, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};

DRIFT_EXPORT const drift_plugin_t* drift_plugin_get(const drift_host_api_t* host,
                                                    uint32_t host_abi_version) {
  (void)host;
  (void)host_abi_version;
  return &descriptor;
}
