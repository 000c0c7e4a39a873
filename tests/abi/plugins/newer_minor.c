/* Built against a future 1.(x+1) header whose descriptor grew: the host loads it and ignores
 * the unknown tail (here filled with non-NULL junk the host must not touch). */
#include "test_plugin.h"

typedef struct newer_descriptor_t {
  drift_plugin_t v1;
  const void* future_hooks[4];
} newer_descriptor_t;

static const char junk[] = "future";

static const newer_descriptor_t descriptor = {
    {sizeof(newer_descriptor_t), DRIFT_ABI_MAJOR, DRIFT_ABI_MINOR + 1, "newer_minor", "3.0.0",
     DRIFT_KIND_DRAFT_PROVIDER | 0x100u, /* plus a kind this host does not know */
     test_create, test_destroy, test_get_extension, NULL, test_on_request_start, NULL,
     test_on_accept, test_on_rewind, test_on_propose, NULL, NULL, NULL, NULL, NULL, NULL},
    {junk, junk, junk, junk}};

DRIFT_EXPORT const drift_plugin_t* drift_plugin_get(const drift_host_api_t* host,
                                                    uint32_t host_abi_version) {
  (void)host;
  (void)host_abi_version;
  return &descriptor.v1;
}
