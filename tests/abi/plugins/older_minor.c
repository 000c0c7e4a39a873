/* What a plugin built against an older 1.x header looks like: its descriptor ends earlier.
 * Here it ends before on_rewind (as if on_rewind had been appended by a later minor). The
 * memory after struct_size holds a non-NULL on_rewind that the host must never read: the host
 * zero-fills instead. (ABI 1.0 has no older minor number, so abi_minor stays 0; the host keys
 * off struct_size, which is exactly what differs for an older plugin.) */
#include <stdio.h>

#include "test_plugin.h"

static drift_status_t must_not_be_called(void* instance, drift_seq_id_t seq, int64_t n) {
  (void)instance;
  (void)seq;
  (void)n;
  fprintf(stderr, "older_minor: on_rewind lies beyond struct_size and was called\n");
  abort();
}

static const drift_plugin_t descriptor = {
    offsetof(drift_plugin_t, on_rewind), DRIFT_ABI_MAJOR, 0, "older_minor", "0.9.0", 0,
    test_create, test_destroy, test_get_extension, NULL,
    test_on_request_start, NULL, test_on_accept,
    must_not_be_called, /* beyond struct_size */
    NULL, NULL, NULL, NULL, NULL, NULL, NULL};

DRIFT_EXPORT const drift_plugin_t* drift_plugin_get(const drift_host_api_t* host,
                                                    uint32_t host_abi_version) {
  (void)host;
  (void)host_abi_version;
  return &descriptor;
}
