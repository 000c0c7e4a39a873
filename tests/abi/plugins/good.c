/* The reference case: all three kinds, every hook, declares a capture layer. */
#include "test_plugin.h"

static drift_status_t declare_needs(void* instance, drift_needs_t* needs) {
  (void)instance;
  if (needs->max_capture_layers > 0) needs->capture_layers[needs->num_capture_layers++] = 0;
  return DRIFT_OK;
}

static drift_status_t on_request_finish(void* instance, drift_seq_id_t seq, int32_t reason) {
  (void)reason;
  test_record(instance, "on_request_finish", seq);
  return DRIFT_OK;
}

static drift_status_t on_prefix_match(void* instance, const drift_request_info_t* request,
                                      drift_page_id_t* pages, int32_t max_pages, int32_t* n) {
  (void)pages;
  (void)max_pages;
  test_record(instance, "on_prefix_match", request->seq_id);
  *n = 0;
  return DRIFT_OK;
}

static drift_status_t on_pages_full(void* instance, const drift_full_pages_t* pages, bool* keep) {
  (void)keep;
  test_record(instance, "on_pages_full", pages->seq_id);
  return DRIFT_OK;
}

static drift_status_t on_evict(void* instance, int32_t wanted, drift_page_id_t* released,
                               int32_t max_released, int32_t* n) {
  (void)wanted;
  (void)released;
  (void)max_released;
  test_record(instance, "on_evict", -1);
  *n = 0;
  return DRIFT_OK;
}

static const drift_plugin_t descriptor = {
    sizeof(drift_plugin_t), DRIFT_ABI_MAJOR, DRIFT_ABI_MINOR, "good", "1.2.3",
    DRIFT_KIND_DRAFT_PROVIDER | DRIFT_KIND_VERIFICATION_POLICY | DRIFT_KIND_CACHE_MANAGER,
    test_create, test_destroy, test_get_extension, declare_needs,
    test_on_request_start, on_request_finish, test_on_accept, test_on_rewind,
    test_on_propose, test_on_choose_kv_view,
    on_prefix_match, on_pages_full, on_evict, test_on_target_forward, NULL};

DRIFT_EXPORT const drift_plugin_t* drift_plugin_get(const drift_host_api_t* host,
                                                    uint32_t host_abi_version) {
  (void)host;
  (void)host_abi_version;
  return &descriptor;
}
