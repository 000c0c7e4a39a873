/* Fails on purpose: the hook named by setting `fail_hook` ("create" included) returns
 * DRIFT_ERROR for request `fail_seq` (-1 or absent: every request). The batch hooks
 * (on_propose, on_choose_kv_view) fail the whole call when every request is to fail, and only
 * that sequence -- through its tree's / view's status -- when one is named. Everything else
 * behaves like the good plugin, so a test can compare with and without the failure. */
#include "test_plugin.h"

typedef struct instance_t {
  test_calls_t calls; /* first, for test_count */
  char fail_hook[64];
  int64_t fail_seq;
} instance_t;

static drift_status_t maybe_fail(void* instance, const char* hook, int64_t seq) {
  instance_t* self = (instance_t*)instance;
  test_record(instance, hook, seq);
  if (strcmp(self->fail_hook, hook) != 0 || (self->fail_seq >= 0 && self->fail_seq != seq))
    return DRIFT_OK;
  return DRIFT_ERROR;
}

static drift_status_t create(const drift_host_api_t* host, const char* settings, void** out) {
  instance_t* self = (instance_t*)calloc(1, sizeof(instance_t));
  size_t len = 0;
  (void)settings;
  if (!self) return DRIFT_ERROR_OUT_OF_MEMORY;
  self->fail_seq = -1;
  host->get_setting_string(host->ctx, "fail_hook", self->fail_hook, sizeof self->fail_hook, &len);
  host->get_setting_int(host->ctx, "fail_seq", &self->fail_seq);
  if (strcmp(self->fail_hook, "create") == 0) {
    host->log(host->ctx, DRIFT_LOG_ERROR, "failing create on purpose");
    free(self);
    return DRIFT_ERROR;
  }
  *out = self;
  return DRIFT_OK;
}

static drift_status_t on_request_start(void* instance, const drift_request_info_t* request) {
  return maybe_fail(instance, "on_request_start", request->seq_id);
}

static drift_status_t on_accept(void* instance, drift_seq_id_t seq, const drift_token_t* tokens,
                                size_t n) {
  (void)tokens;
  (void)n;
  return maybe_fail(instance, "on_accept", seq);
}

/* The status a batch hook gives sequence `seq`: whole-call failures are returned, a named
 * request's failure goes in its own status. */
static drift_status_t batch_item(void* instance, const char* hook, int64_t seq, drift_status_t* status) {
  if (maybe_fail(instance, hook, seq) == DRIFT_OK) return DRIFT_OK;
  if (((instance_t*)instance)->fail_seq < 0) return DRIFT_ERROR;
  *status = DRIFT_ERROR;
  return DRIFT_OK;
}

static drift_status_t on_propose(void* instance, const drift_step_t* step,
                                 drift_draft_tree_t* const* trees, size_t n) {
  size_t t;
  (void)step;
  for (t = 0; t < n; ++t) {
    if (batch_item(instance, "on_propose", trees[t]->seq_id, &trees[t]->status) != DRIFT_OK) return DRIFT_ERROR;
    if (trees[t]->status == DRIFT_OK) test_fill_chain(trees[t]);
  }
  return DRIFT_OK;
}

static drift_status_t on_choose_kv_view(void* instance, const drift_step_t* step,
                                        drift_kv_view_t* const* views, size_t n) {
  size_t v;
  (void)step;
  for (v = 0; v < n; ++v)
    if (batch_item(instance, "on_choose_kv_view", views[v]->seq_id, &views[v]->status) != DRIFT_OK)
      return DRIFT_ERROR;
  return DRIFT_OK;
}

static const drift_plugin_t descriptor = {
    sizeof(drift_plugin_t), DRIFT_ABI_MAJOR, DRIFT_ABI_MINOR, "hook_returns_error", "1.0.0",
    DRIFT_KIND_DRAFT_PROVIDER | DRIFT_KIND_VERIFICATION_POLICY,
    create, test_destroy, test_get_extension, NULL,
    on_request_start, NULL, on_accept, test_on_rewind,
    on_propose, on_choose_kv_view, NULL, NULL, NULL, NULL, NULL};

DRIFT_EXPORT const drift_plugin_t* drift_plugin_get(const drift_host_api_t* host,
                                                    uint32_t host_abi_version) {
  (void)host;
  (void)host_abi_version;
  return &descriptor;
}
