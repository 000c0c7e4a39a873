/* Shared by the ABI suite's tiny plugins (C and C++) and by the tests that load them: a call
 * counter every test plugin keeps as the FIRST member of its instance, exposed through
 * get_extension(DRIFT_TEST_COUNTER_EXT) so a test can see which hooks ran for which request. */
#ifndef DRIFT_TEST_PLUGIN_H
#define DRIFT_TEST_PLUGIN_H

#include <stdlib.h>
#include <string.h>

#include "drift/plugin.h"

#define DRIFT_TEST_COUNTER_EXT "drift.test.counter/1"
#define TEST_MAX_CALLS 512

/* recording.c's extension: the log of every hook call so far, one '\n'-terminated line each. */
#define DRIFT_TEST_RECORDING_EXT "drift.test.recording/1"
typedef struct drift_test_recording_ext_t {
  const char* (*log)(void* instance);
} drift_test_recording_ext_t;

typedef struct drift_test_counter_ext_t {
  /* Calls of `hook` for `seq` (-1: any request) since create. */
  int64_t (*count)(void* instance, const char* hook, int64_t seq);
} drift_test_counter_ext_t;

typedef struct test_calls_t {
  int32_t n;
  const char* hooks[TEST_MAX_CALLS]; /* string literals */
  int64_t seqs[TEST_MAX_CALLS];
} test_calls_t;

static inline void test_record(void* instance, const char* hook, int64_t seq) {
  test_calls_t* calls = (test_calls_t*)instance;
  if (calls->n == TEST_MAX_CALLS) return;
  calls->hooks[calls->n] = hook;
  calls->seqs[calls->n] = seq;
  calls->n++;
}

static inline int64_t test_count(void* instance, const char* hook, int64_t seq) {
  const test_calls_t* calls = (const test_calls_t*)instance;
  int64_t count = 0;
  int32_t i;
  for (i = 0; i < calls->n; ++i)
    if (strcmp(calls->hooks[i], hook) == 0 && (seq < 0 || calls->seqs[i] == seq)) count++;
  return count;
}

static const drift_test_counter_ext_t test_counter_ext = {test_count};

static inline const void* test_get_extension(void* instance, const char* key) {
  (void)instance;
  return strcmp(key, DRIFT_TEST_COUNTER_EXT) == 0 ? (const void*)&test_counter_ext : NULL;
}

/* A create/destroy pair for plugins whose instance is just the counter. */
static inline drift_status_t test_create(const drift_host_api_t* host, const char* settings,
                                         void** instance) {
  (void)host;
  (void)settings;
  *instance = calloc(1, sizeof(test_calls_t));
  return *instance ? DRIFT_OK : DRIFT_ERROR_OUT_OF_MEMORY;
}

static inline void test_destroy(void* instance) { free(instance); }

static inline drift_status_t test_on_accept(void* instance, drift_seq_id_t seq,
                                            const drift_token_t* tokens, size_t n) {
  (void)tokens;
  (void)n;
  test_record(instance, "on_accept", seq);
  return DRIFT_OK;
}

static inline drift_status_t test_on_rewind(void* instance, drift_seq_id_t seq, int64_t n) {
  (void)n;
  test_record(instance, "on_rewind", seq);
  return DRIFT_OK;
}

static inline drift_status_t test_on_request_start(void* instance,
                                                   const drift_request_info_t* request) {
  test_record(instance, "on_request_start", request->seq_id);
  return DRIFT_OK;
}

/* Draft: a chain of `budget` tokens 1, 2, 3, ... */
static inline void test_fill_chain(drift_draft_tree_t* tree) {
  int32_t i;
  for (i = 0; i < tree->budget; ++i) {
    tree->tokens[i] = i + 1;
    tree->parents[i] = i - 1;
  }
  tree->num_nodes = tree->budget;
}

static inline drift_status_t test_on_propose(void* instance, const drift_step_t* step,
                                             drift_draft_tree_t* const* trees, size_t n) {
  size_t t;
  (void)step;
  for (t = 0; t < n; ++t) {
    test_record(instance, "on_propose", trees[t]->seq_id);
    test_fill_chain(trees[t]);
  }
  return DRIFT_OK;
}

static inline drift_status_t test_on_choose_kv_view(void* instance, const drift_step_t* step,
                                                    drift_kv_view_t* const* views, size_t n) {
  size_t v;
  (void)step;
  for (v = 0; v < n; ++v) test_record(instance, "on_choose_kv_view", views[v]->seq_id);
  return DRIFT_OK;
}

static inline drift_status_t test_on_target_forward(void* instance, const drift_step_t* step,
                                                    drift_forward_rows_t* const* rows, size_t n) {
  size_t r;
  (void)step;
  for (r = 0; r < n; ++r) test_record(instance, "on_target_forward", rows[r]->seq_id);
  return DRIFT_OK;
}

#endif /* DRIFT_TEST_PLUGIN_H */
