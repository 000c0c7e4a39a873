/* The recording plugin: all three kinds, every hook (1.2 on_target_forward too). Each call appends one text line with
 * its arguments to a log the test reads through get_extension(DRIFT_TEST_RECORDING_EXT) -- and to the file named by
 * setting `log_path`, for engine-level tests that run the drift binary.
 *
 * It also behaves like a small real plugin so the engine has something to work with:
 *  - draft provider: a chain of `budget` tokens (seq * 10 + i) % vocab;
 *  - verification policy: full, or with view = "first_page" page list [block table page 0 ...]
 *    -- here simply page 0 for every layer; view = "first_page_twice" lists page 0 twice (a list
 *    the host must refuse);
 *  - cache manager: a hash-chained prefix cache. It keeps every full page offered, keyed by the
 *    hash of all tokens up to the page's end; on_prefix_match walks the request's leading
 *    blocks; on_evict lets go of the oldest pages first -- or of none with setting
 *    `hoard = true` (a cache that never gives pages back).
 * Setting `fail_hook` names a cache hook ("on_prefix_match", "on_pages_full", "on_evict") that
 * returns DRIFT_ERROR, for request `fail_seq` only when that is set (on_evict has no request):
 * a failing but otherwise real cache. on_pages_full also logs the block table the host reports,
 * so a test can check the offered pages against it.
 * Setting `lie = true` makes on_prefix_match name its oldest pages whatever the request's tokens
 * (a buggy cache the host must catch). Setting `release_probe` calls host->release_pages and
 * logs "release_pages status=N": "held" (all its pages, first thing in on_pages_full),
 * "foreign" (a page it does not hold, in on_pages_full) or "in_match" (from on_prefix_match). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_plugin.h"

#define MAX_CACHED 256

typedef struct instance_t {
  const drift_host_api_t* host;
  char* log;
  size_t log_len;
  FILE* file;
  char tag[32];   /* setting `tag`: prefixes every line, to tell instances apart in one file */
  int line_start;
  int first_page_view;
  int repeat_first_page;
  bool hoard;
  bool lie;
  char release_probe[16];
  char fail_hook[32];
  int64_t fail_seq;   /* -1: every request */
  int32_t num_cached; /* oldest first */
  drift_page_id_t cached_page[MAX_CACHED];
  uint64_t cached_hash[MAX_CACHED];
} instance_t;

/* ---- the log ---- */

static void append_raw(instance_t* self, const char* text) {
  size_t n = strlen(text);
  char* grown = (char*)realloc(self->log, self->log_len + n + 1);
  if (!grown) return;
  self->log = grown;
  memcpy(self->log + self->log_len, text, n + 1);
  self->log_len += n;
  if (self->file) {
    fputs(text, self->file);
    fflush(self->file);
  }
}

static void append(instance_t* self, const char* text) {
  if (self->line_start && self->tag[0]) {
    append_raw(self, self->tag);
    append_raw(self, ": ");
  }
  self->line_start = 0;
  append_raw(self, text);
}

/* " name=[a,b,c]" */
static void append_ids(instance_t* self, const char* name, const int32_t* ids, int64_t n) {
  char item[32];
  int64_t i;
  snprintf(item, sizeof item, " %s=[", name);
  append(self, item);
  for (i = 0; i < n; ++i) {
    snprintf(item, sizeof item, i ? ",%d" : "%d", (int)ids[i]);
    append(self, item);
  }
  append(self, "]");
}

static void line(instance_t* self, const char* text) {
  append(self, text);
  append(self, "\n");
  self->line_start = 1;
}

static const char* get_log(void* instance) {
  instance_t* self = (instance_t*)instance;
  return self->log ? self->log : "";
}

static const drift_test_recording_ext_t recording_ext = {get_log};

/* ---- the prefix cache ---- */

static uint64_t hash_tokens(uint64_t h, const drift_token_t* tokens, int64_t n) {
  int64_t i;
  for (i = 0; i < n; ++i) h = (h ^ (uint32_t)tokens[i]) * 1099511628211ull;
  return h;
}

static int32_t find_cached(const instance_t* self, uint64_t hash) {
  int32_t i;
  for (i = 0; i < self->num_cached; ++i)
    if (self->cached_hash[i] == hash) return i;
  return -1;
}

static int64_t block_size(const instance_t* self) {
  return self->host->model_info(self->host->ctx)->block_size;
}

/* Whether `hook` is set to fail for `seq` (-1: a hook without a request). */
static int fails(const instance_t* self, const char* hook, int64_t seq) {
  return strcmp(self->fail_hook, hook) == 0 && (self->fail_seq < 0 || seq < 0 || self->fail_seq == seq);
}

/* ---- hooks ---- */

static drift_status_t create(const drift_host_api_t* host, const char* settings, void** out) {
  instance_t* self = (instance_t*)calloc(1, sizeof(instance_t));
  char buf[512];
  size_t len = 0;
  (void)settings;
  if (!self) return DRIFT_ERROR_OUT_OF_MEMORY;
  self->host = host;
  self->line_start = 1;
  host->get_setting_string(host->ctx, "tag", self->tag, sizeof self->tag, &len);
  if (host->get_setting_string(host->ctx, "log_path", buf, sizeof buf, &len) == DRIFT_OK)
    self->file = fopen(buf, "a");
  if (host->get_setting_string(host->ctx, "view", buf, sizeof buf, &len) == DRIFT_OK) {
    self->repeat_first_page = strcmp(buf, "first_page_twice") == 0;
    self->first_page_view = self->repeat_first_page || strcmp(buf, "first_page") == 0;
  }
  host->get_setting_bool(host->ctx, "hoard", &self->hoard);
  host->get_setting_bool(host->ctx, "lie", &self->lie);
  host->get_setting_string(host->ctx, "release_probe", self->release_probe, sizeof self->release_probe, &len);
  host->get_setting_string(host->ctx, "fail_hook", self->fail_hook, sizeof self->fail_hook, &len);
  self->fail_seq = -1;
  host->get_setting_int(host->ctx, "fail_seq", &self->fail_seq);
  line(self, "create");
  *out = self;
  return DRIFT_OK;
}

static void destroy(void* instance) {
  instance_t* self = (instance_t*)instance;
  line(self, "destroy");
  if (self->file) fclose(self->file);
  free(self->log);
  free(self);
}

static const void* get_extension(void* instance, const char* key) {
  (void)instance;
  return strcmp(key, DRIFT_TEST_RECORDING_EXT) == 0 ? (const void*)&recording_ext : NULL;
}

static drift_status_t declare_needs(void* instance, drift_needs_t* needs) {
  char text[64];
  if (needs->max_capture_layers > 0)
    needs->capture_layers[needs->num_capture_layers++] = needs->max_capture_layers - 1;
  snprintf(text, sizeof text, "declare_needs max=%d", (int)needs->max_capture_layers);
  line((instance_t*)instance, text);
  return DRIFT_OK;
}

static drift_status_t on_request_start(void* instance, const drift_request_info_t* r) {
  instance_t* self = (instance_t*)instance;
  char text[160];
  snprintf(text, sizeof text, "request_start seq=%lld", (long long)r->seq_id);
  append(self, text);
  append_ids(self, "tokens", r->tokens, r->num_tokens);
  snprintf(text, sizeof text, " prompt=%lld cached=%lld max_new=%lld resumed=%d drafts=%d",
           (long long)r->num_prompt_tokens, (long long)r->num_cached_tokens,
           (long long)r->max_new_tokens, (int)r->resumed, (int)r->provides_drafts);
  line(self, text);
  return DRIFT_OK;
}

static drift_status_t on_request_finish(void* instance, drift_seq_id_t seq, int32_t reason) {
  char text[96];
  snprintf(text, sizeof text, "request_finish seq=%lld reason=%d", (long long)seq, (int)reason);
  line((instance_t*)instance, text);
  return DRIFT_OK;
}

static drift_status_t on_accept(void* instance, drift_seq_id_t seq, const drift_token_t* tokens,
                                size_t n) {
  instance_t* self = (instance_t*)instance;
  char text[64];
  snprintf(text, sizeof text, "accept seq=%lld", (long long)seq);
  append(self, text);
  append_ids(self, "tokens", tokens, (int64_t)n);
  line(self, "");
  return DRIFT_OK;
}

static drift_status_t on_rewind(void* instance, drift_seq_id_t seq, int64_t n) {
  char text[64];
  snprintf(text, sizeof text, "rewind seq=%lld n=%lld", (long long)seq, (long long)n);
  line((instance_t*)instance, text);
  return DRIFT_OK;
}

static drift_status_t on_propose(void* instance, const drift_step_t* step,
                                 drift_draft_tree_t* const* trees, size_t n) {
  instance_t* self = (instance_t*)instance;
  int64_t vocab = self->host->model_info(self->host->ctx)->vocab_size;
  char text[64];
  size_t t;
  int32_t i;
  snprintf(text, sizeof text, "propose step=%lld", (long long)step->step);
  append(self, text);
  for (t = 0; t < n; ++t) {
    drift_draft_tree_t* tree = trees[t];
    snprintf(text, sizeof text, " %lld:%d", (long long)tree->seq_id, (int)tree->budget);
    append(self, text);
    for (i = 0; i < tree->budget; ++i) {
      tree->tokens[i] = (drift_token_t)((tree->seq_id * 10 + i) % (vocab > 0 ? vocab : 1000));
      tree->parents[i] = i - 1;
      tree->probs[i] = 0.5f;
    }
    tree->num_nodes = tree->budget;
    tree->has_probs = true;
  }
  line(self, "");
  return DRIFT_OK;
}

/* "target_forward step=S seq:rows@first/tokens ...", checking that each row's hidden states
 * are readable ("!" after an entry whose hidden_states call failed). */
static drift_status_t on_target_forward(void* instance, const drift_step_t* step,
                                        drift_forward_rows_t* const* rows, size_t n) {
  instance_t* self = (instance_t*)instance;
  const drift_model_info_t* m = self->host->model_info(self->host->ctx);
  char text[96];
  size_t i;
  snprintf(text, sizeof text, "target_forward step=%lld", (long long)step->step);
  append(self, text);
  for (i = 0; i < n; ++i) {
    drift_tensor_t hidden;
    const drift_forward_rows_t* r = rows[i];
    const bool readable = self->host->hidden_states(self->host->ctx, r->seq_id, (int32_t)m->num_layers - 1,
                                                    &hidden) == DRIFT_OK &&
                          hidden.ndim == 2 && hidden.shape[0] == r->num_rows;
    snprintf(text, sizeof text, " %lld:%lld@%lld/%lld%s", (long long)r->seq_id, (long long)r->num_rows,
             (long long)r->first_position, (long long)r->num_tokens, readable ? "" : "!");
    append(self, text);
  }
  line(self, "");
  return DRIFT_OK;
}

static drift_status_t on_choose_kv_view(void* instance, const drift_step_t* step,
                                        drift_kv_view_t* const* views, size_t n) {
  instance_t* self = (instance_t*)instance;
  const drift_model_info_t* m = self->host->model_info(self->host->ctx);
  char text[64];
  size_t v;
  int64_t l;
  snprintf(text, sizeof text, "choose_kv_view step=%lld", (long long)step->step);
  append(self, text);
  for (v = 0; v < n; ++v) {
    snprintf(text, sizeof text, " %lld:%d", (long long)views[v]->seq_id, (int)views[v]->max_pages);
    append(self, text);
    if (!self->first_page_view || views[v]->max_pages < 1 + self->repeat_first_page) continue;
    views[v]->mode = DRIFT_KV_VIEW_PAGES;
    for (l = 0; l < m->num_layers; ++l) {
      views[v]->page_counts[l] = 1 + self->repeat_first_page;
      views[v]->pages[l * views[v]->max_pages] = 0;
      if (self->repeat_first_page) views[v]->pages[l * views[v]->max_pages + 1] = 0;
    }
  }
  line(self, "");
  return DRIFT_OK;
}

/* Calls host->release_pages as setting release_probe says when `where` matches it. */
static void probe_release(instance_t* self, const char* where) {
  drift_page_id_t foreign = 1000000;
  drift_status_t status;
  char text[48];
  if (strcmp(where, "on_prefix_match") == 0 && strcmp(self->release_probe, "in_match") == 0)
    status = self->host->release_pages(self->host->ctx, self->cached_page, self->num_cached);
  else if (strcmp(where, "on_pages_full") == 0 && strcmp(self->release_probe, "foreign") == 0)
    status = self->host->release_pages(self->host->ctx, &foreign, 1);
  else if (strcmp(where, "on_pages_full") == 0 && strcmp(self->release_probe, "held") == 0) {
    status = self->host->release_pages(self->host->ctx, self->cached_page, self->num_cached);
    if (status == DRIFT_OK) self->num_cached = 0;
  } else {
    return;
  }
  snprintf(text, sizeof text, "release_pages status=%d", (int)status);
  line(self, text);
}

static drift_status_t on_prefix_match(void* instance, const drift_request_info_t* r,
                                      drift_page_id_t* pages, int32_t max_pages, int32_t* n) {
  instance_t* self = (instance_t*)instance;
  int64_t bs = block_size(self);
  uint64_t hash = 14695981039346656037ull;
  char text[96];
  *n = 0;
  if (fails(self, "on_prefix_match", r->seq_id)) return DRIFT_ERROR;
  probe_release(self, "on_prefix_match");
  while (self->lie && *n < max_pages && *n < self->num_cached) {
    pages[*n] = self->cached_page[*n];
    ++*n;
  }
  while (!self->lie && *n < max_pages && bs > 0 && (*n + 1) * bs <= r->num_tokens) {
    int32_t found;
    hash = hash_tokens(hash, r->tokens + *n * bs, bs);
    found = find_cached(self, hash);
    if (found < 0) break;
    pages[(*n)++] = self->cached_page[found];
  }
  snprintf(text, sizeof text, "prefix_match seq=%lld max_pages=%d ->", (long long)r->seq_id,
           (int)max_pages);
  append(self, text);
  append_ids(self, "pages", pages, *n);
  line(self, "");
  return DRIFT_OK;
}

static drift_status_t on_pages_full(void* instance, const drift_full_pages_t* full, bool* keep) {
  instance_t* self = (instance_t*)instance;
  int64_t bs = block_size(self);
  uint64_t hash = hash_tokens(14695981039346656037ull, full->prefix, full->first_block * bs);
  const drift_page_id_t* table = NULL;
  int64_t table_pages = 0, table_tokens = 0;
  char text[96];
  int32_t i;
  if (fails(self, "on_pages_full", full->seq_id)) return DRIFT_ERROR;
  probe_release(self, "on_pages_full");
  for (i = 0; i < full->num_pages; ++i) {
    hash = hash_tokens(hash, full->tokens + i * bs, bs);
    if (find_cached(self, hash) >= 0 || self->num_cached == MAX_CACHED) continue;
    self->cached_page[self->num_cached] = full->pages[i];
    self->cached_hash[self->num_cached++] = hash;
    keep[i] = true;
  }
  snprintf(text, sizeof text, "pages_full seq=%lld first=%lld", (long long)full->seq_id,
           (long long)full->first_block);
  append(self, text);
  append_ids(self, "pages", full->pages, full->num_pages);
  if (self->host->block_table(self->host->ctx, full->seq_id, &table, &table_pages, &table_tokens) == DRIFT_OK) {
    append_ids(self, "table", table, table_pages);
    snprintf(text, sizeof text, " table_tokens=%lld", (long long)table_tokens);
    append(self, text);
  }
  line(self, "");
  return DRIFT_OK;
}

static drift_status_t on_evict(void* instance, int32_t wanted, drift_page_id_t* released,
                               int32_t max_released, int32_t* n) {
  instance_t* self = (instance_t*)instance;
  char text[64];
  int32_t i;
  if (fails(self, "on_evict", -1)) return DRIFT_ERROR;
  *n = self->hoard ? 0 : wanted < self->num_cached ? wanted : self->num_cached;
  if (*n > max_released) *n = max_released;
  for (i = 0; i < *n; ++i) released[i] = self->cached_page[i];
  self->num_cached -= *n;
  memmove(self->cached_page, self->cached_page + *n, (size_t)self->num_cached * sizeof(drift_page_id_t));
  memmove(self->cached_hash, self->cached_hash + *n, (size_t)self->num_cached * sizeof(uint64_t));
  snprintf(text, sizeof text, "evict wanted=%d ->", (int)wanted);
  append(self, text);
  append_ids(self, "pages", released, *n);
  line(self, "");
  return DRIFT_OK;
}

static const drift_plugin_t descriptor = {
    sizeof(drift_plugin_t), DRIFT_ABI_MAJOR, DRIFT_ABI_MINOR, "recording", "1.0.0",
    DRIFT_KIND_DRAFT_PROVIDER | DRIFT_KIND_VERIFICATION_POLICY | DRIFT_KIND_CACHE_MANAGER,
    create, destroy, get_extension, declare_needs,
    on_request_start, on_request_finish, on_accept, on_rewind,
    on_propose, on_choose_kv_view,
    on_prefix_match, on_pages_full, on_evict, on_target_forward, NULL};

DRIFT_EXPORT const drift_plugin_t* drift_plugin_get(const drift_host_api_t* host,
                                                    uint32_t host_abi_version) {
  (void)host;
  (void)host_abi_version;
  return &descriptor;
}
