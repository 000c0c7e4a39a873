/* A plugin that declares its memory (ABI 1.4 declare_memory) from its settings and allocates in
 * create what its settings say, so a test can check what the engine budgets and refuses:
 *   fixed_bytes, bytes_per_kv_token   what declare_memory answers
 *   alloc_bytes                       bytes create allocates (through tensor_alloc)
 *   fail_declare                      declare_memory returns DRIFT_ERROR
 * Its stats extension reports num_pages as declare_memory and create saw it, and tensor_alloc's
 * status: {"declare_pages":0,"create_pages":64,"alloc_status":0}. */
#include <stdio.h>

#include "test_plugin.h"

typedef struct memory_plugin_t {
  test_calls_t calls; /* first, as every test plugin's */
  const drift_host_api_t* host;
  drift_tensor_t tensor;
  char stats[128];
} memory_plugin_t;

static int64_t declared_pages = -1; /* what declare_memory saw, for create to report */

static int64_t setting(const drift_host_api_t* host, const char* key) {
  int64_t value = 0;
  return host->get_setting_int(host->ctx, key, &value) == DRIFT_OK ? value : 0;
}

static drift_status_t declare_memory(const drift_host_api_t* host, const char* settings, drift_memory_needs_t* needs) {
  bool fail = false;
  (void)settings;
  if (host->get_setting_bool(host->ctx, "fail_declare", &fail) == DRIFT_OK && fail) {
    host->log(host->ctx, DRIFT_LOG_ERROR, "memory_declaring: told to fail");
    return DRIFT_ERROR;
  }
  declared_pages = host->model_info(host->ctx)->num_pages;
  needs->fixed_bytes = setting(host, "fixed_bytes");
  needs->bytes_per_kv_token = setting(host, "bytes_per_kv_token");
  return DRIFT_OK;
}

static const char* stats_json(void* instance) { return ((memory_plugin_t*)instance)->stats; }
static const drift_stats_extension_t stats_ext = {sizeof(drift_stats_extension_t), stats_json};

static const void* get_extension(void* instance, const char* key) {
  if (strcmp(key, DRIFT_STATS_EXTENSION) == 0) return &stats_ext;
  return test_get_extension(instance, key);
}

static drift_status_t create(const drift_host_api_t* host, const char* settings, void** instance) {
  memory_plugin_t* p = (memory_plugin_t*)calloc(1, sizeof(memory_plugin_t));
  const int64_t bytes = setting(host, "alloc_bytes");
  drift_status_t status = DRIFT_OK;
  (void)settings;
  if (!p) return DRIFT_ERROR_OUT_OF_MEMORY;
  p->host = host;
  if (bytes > 0) status = host->tensor_alloc(host->ctx, DRIFT_DTYPE_I32, 1, (int64_t[]){bytes / 4}, &p->tensor);
  snprintf(p->stats, sizeof p->stats, "{\"declare_pages\":%lld,\"create_pages\":%lld,\"alloc_status\":%d}",
           (long long)declared_pages, (long long)host->model_info(host->ctx)->num_pages, (int)status);
  if (status != DRIFT_OK) {
    free(p);
    return status;
  }
  *instance = p;
  return DRIFT_OK;
}

static void destroy(void* instance) {
  memory_plugin_t* p = (memory_plugin_t*)instance;
  if (p->tensor.data) p->host->tensor_free(p->host->ctx, &p->tensor);
  free(p);
}

static drift_status_t on_evict(void* instance, int32_t wanted, drift_page_id_t* released, int32_t max_released,
                               int32_t* n) {
  (void)instance;
  (void)wanted;
  (void)released;
  (void)max_released;
  *n = 0;
  return DRIFT_OK;
}

static drift_status_t on_prefix_match(void* instance, const drift_request_info_t* request, drift_page_id_t* pages,
                                      int32_t max_pages, int32_t* n) {
  (void)instance;
  (void)request;
  (void)pages;
  (void)max_pages;
  *n = 0;
  return DRIFT_OK;
}

static drift_status_t on_pages_full(void* instance, const drift_full_pages_t* pages, bool* keep) {
  (void)instance;
  (void)pages;
  (void)keep;
  return DRIFT_OK;
}

static const drift_plugin_t descriptor = {sizeof(drift_plugin_t),
                                          DRIFT_ABI_MAJOR,
                                          DRIFT_ABI_MINOR,
                                          "memory_declaring",
                                          "1.0.0",
                                          DRIFT_KIND_CACHE_MANAGER,
                                          create,
                                          destroy,
                                          get_extension,
                                          NULL,
                                          NULL,
                                          NULL,
                                          NULL,
                                          NULL,
                                          NULL,
                                          NULL,
                                          on_prefix_match,
                                          on_pages_full,
                                          on_evict,
                                          NULL,
                                          declare_memory};

DRIFT_EXPORT const drift_plugin_t* drift_plugin_get(const drift_host_api_t* host, uint32_t host_abi_version) {
  (void)host;
  (void)host_abi_version;
  return &descriptor;
}
