/* A minimal draft provider written only against the installed <drift/plugin.h>: proposes a
 * chain of `budget` copies of setting `token` (default 1). */
#include <stdlib.h>

#include <drift/plugin.h>

typedef struct instance_t {
  drift_token_t token;
} instance_t;

static drift_status_t create(const drift_host_api_t* host, const char* settings, void** out) {
  instance_t* self = (instance_t*)calloc(1, sizeof(instance_t));
  int64_t token = 1;
  (void)settings;
  if (!self) return DRIFT_ERROR_OUT_OF_MEMORY;
  host->get_setting_int(host->ctx, "token", &token);
  self->token = (drift_token_t)token;
  host->log(host->ctx, DRIFT_LOG_INFO, "sdk_example created");
  *out = self;
  return DRIFT_OK;
}

static void destroy(void* instance) { free(instance); }

static drift_status_t propose(void* instance, const drift_step_t* step,
                              drift_draft_tree_t* const* trees, size_t n) {
  const instance_t* self = (const instance_t*)instance;
  size_t t;
  int32_t i;
  (void)step;
  for (t = 0; t < n; ++t) {
    for (i = 0; i < trees[t]->budget; ++i) {
      trees[t]->tokens[i] = self->token;
      trees[t]->parents[i] = i - 1;
    }
    trees[t]->num_nodes = trees[t]->budget;
  }
  return DRIFT_OK;
}

static const drift_plugin_t descriptor = {
    sizeof(drift_plugin_t), DRIFT_ABI_MAJOR, DRIFT_ABI_MINOR, "sdk_example", "1.0.0",
    DRIFT_KIND_DRAFT_PROVIDER, create, destroy, NULL, NULL, NULL, NULL, NULL, NULL,
    propose, NULL, NULL, NULL, NULL, NULL, NULL};

DRIFT_EXPORT const drift_plugin_t* drift_plugin_get(const drift_host_api_t* host,
                                                    uint32_t host_abi_version) {
  (void)host;
  (void)host_abi_version;
  return &descriptor;
}
