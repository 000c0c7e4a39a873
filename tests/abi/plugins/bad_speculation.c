/* A draft provider and verification policy that misbehaves in exactly one way, chosen at build
 * time (BAD_CASE_<NAME>; tests/abi/CMakeLists.txt builds one .so per case): an invalid tree, a
 * failing hook, or an overwritten "in" field of drift_draft_tree_t / drift_kv_view_t. Only
 * request 0 is hit; every other request gets a valid chain and a full view, so a test can see
 * that the fallback stays with the request it concerns. */
#include "test_plugin.h"

/* Buffers of the plugin's own that an overwritten pointer field points at. */
drift_token_t drift_bad_stray_tokens[64];
int32_t drift_bad_stray_ints[4096];
float drift_bad_stray_probs[64];
drift_page_id_t drift_bad_stray_pages[4096];

/* A valid chain of up to 3 nodes: tokens 1, 2, 3. */
static void fill_valid(drift_draft_tree_t* t) {
  int32_t i;
  t->num_nodes = t->budget < 3 ? t->budget : 3;
  for (i = 0; i < t->num_nodes; ++i) {
    t->tokens[i] = i + 1;
    t->parents[i] = i - 1;
  }
}

static drift_status_t spoil_tree(drift_draft_tree_t* t) {
#if defined(BAD_CASE_PARENT_OUT_OF_RANGE)
  t->parents[1] = 7;
#elif defined(BAD_CASE_NOT_TOPOLOGICAL)
  t->parents[1] = 1;
#elif defined(BAD_CASE_TOKEN_OUTSIDE_VOCAB)
  t->tokens[2] = 1 << 30;
#elif defined(BAD_CASE_DUPLICATE_SIBLINGS)
  t->parents[1] = -1;
  t->tokens[1] = t->tokens[0];
#elif defined(BAD_CASE_OVER_BUDGET)
  t->num_nodes = t->budget + 1;
#elif defined(BAD_CASE_HOOK_FAILS)
  t->status = DRIFT_ERROR; /* fails this sequence only (returning an error fails the whole batch) */
#elif defined(BAD_CASE_TREE_STRUCT_SIZE)
  t->struct_size = 4;
#elif defined(BAD_CASE_TREE_SEQ_ID)
  t->seq_id = 123456;
#elif defined(BAD_CASE_TREE_BUDGET)
  t->budget = 1 << 30;
#elif defined(BAD_CASE_TREE_TOKENS)
  t->tokens = drift_bad_stray_tokens;
#elif defined(BAD_CASE_TREE_PARENTS)
  t->parents = drift_bad_stray_ints;
#elif defined(BAD_CASE_TREE_PROBS)
  t->probs = drift_bad_stray_probs;
#elif defined(BAD_CASE_TREE_ALL_INPUTS)
  t->struct_size = 4;
  t->seq_id = 123456;
  t->budget = 1 << 30;
  t->tokens = drift_bad_stray_tokens;
  t->parents = drift_bad_stray_ints;
  t->probs = drift_bad_stray_probs;
#else
  (void)t;
#endif
  return DRIFT_OK;
}

static void spoil_view(drift_kv_view_t* v) {
#if defined(BAD_CASE_VIEW_STRUCT_SIZE)
  v->struct_size = 4;
#elif defined(BAD_CASE_VIEW_SEQ_ID)
  v->seq_id = 123456;
#elif defined(BAD_CASE_VIEW_MAX_PAGES)
  v->max_pages = 1 << 30;
#elif defined(BAD_CASE_VIEW_PAGE_COUNTS)
  v->page_counts = drift_bad_stray_ints;
#elif defined(BAD_CASE_VIEW_PAGES)
  v->pages = drift_bad_stray_pages;
#elif defined(BAD_CASE_VIEW_ALL_INPUTS)
  v->struct_size = 4;
  v->seq_id = 123456;
  v->max_pages = 1 << 30;
  v->page_counts = drift_bad_stray_ints;
  v->pages = drift_bad_stray_pages;
#else
  (void)v;
#endif
}

static drift_status_t propose(void* instance, const drift_step_t* step, drift_draft_tree_t* const* trees,
                              size_t n) {
  size_t i;
  (void)step;
  for (i = 0; i < n; ++i) {
    const drift_seq_id_t seq = trees[i]->seq_id;
    test_record(instance, "on_propose", seq);
    fill_valid(trees[i]);
    if (seq == 0 && spoil_tree(trees[i]) != DRIFT_OK) return DRIFT_ERROR;
  }
  return DRIFT_OK;
}

static drift_status_t choose_view(void* instance, const drift_step_t* step, drift_kv_view_t* const* views,
                                  size_t n) {
  size_t i;
  (void)step;
  for (i = 0; i < n; ++i) {
    test_record(instance, "on_choose_kv_view", views[i]->seq_id);
    if (views[i]->seq_id == 0) spoil_view(views[i]);
  }
  return DRIFT_OK;
}

static drift_status_t on_request_finish(void* instance, drift_seq_id_t seq, int32_t reason) {
  test_record(instance, reason == DRIFT_FINISH_ABORT ? "on_request_finish(abort)" : "on_request_finish", seq);
  return DRIFT_OK;
}

static const drift_plugin_t descriptor = {sizeof(drift_plugin_t),
                                          DRIFT_ABI_MAJOR,
                                          DRIFT_ABI_MINOR,
                                          "bad_speculation",
                                          "1.0.0",
                                          DRIFT_KIND_DRAFT_PROVIDER | DRIFT_KIND_VERIFICATION_POLICY,
                                          test_create,
                                          test_destroy,
                                          test_get_extension,
                                          NULL,
                                          test_on_request_start,
                                          on_request_finish,
                                          test_on_accept,
                                          test_on_rewind,
                                          propose,
                                          choose_view,
                                          NULL,
                                          NULL,
                                          NULL,
                                          NULL,
                                          NULL};

DRIFT_EXPORT const drift_plugin_t* drift_plugin_get(const drift_host_api_t* host, uint32_t version) {
  (void)host;
  (void)version;
  return &descriptor;
}
