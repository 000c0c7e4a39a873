/*
 * drift/plugin.h -- DriftEngine plugin ABI, version 1.4.
 *
 * History (minors only append): 1.0 the first release. 1.1 drift_request_info_t.cache_salt (a
 * request's cache isolation key) and host->release_pages (a cache manager hands pages back on
 * its own, e.g. to stay under its capacity). 1.2 what a draft model needs (EAGLE-3): the hook
 * on_target_forward (every target forward's hidden-state rows, prefill chunks included),
 * drift_request_info_t.provides_drafts, the services add, concat, model_weight and
 * get_setting_path,
 * drift_attention_args_t.mask_offset (a tree mask over a visible prefix), integer checkpoint
 * tensors in load_safetensors (as I32), and the well-known extension DRIFT_STATS_EXTENSION.
 * 1.3 what a query-aware verification policy needs (SpecPV): page-list views are attended by
 * the verify forward (see drift_kv_view_t), drift_kv_view_t.keep_queries with the service
 * query_states (the verify rows' post-RoPE queries), and the service page_scores (query-aware
 * block scores over page key summaries). 1.4 what a draft model needs to keep its memory inside
 * the engine's budget: the hook declare_memory (before create, before the KV pool is sized),
 * drift_model_info_t.max_batch_size and max_draft_tokens, and attention over a plugin's own
 * paged K/V (drift_attention_args_t.kv_pages): draft KV in pages, like the target's.
 *
 * The ONE header a plugin author needs. Pure C99 (stdint, stddef, stdbool only); compiles as C
 * and as C++ with -Wall -Wextra -Werror -pedantic. A plugin is a shared object exporting one
 * function, DRIFT_PLUGIN_ENTRY_POINT, that returns a static descriptor: identity, kinds (draft
 * provider, verification policy, cache manager), and a table of hooks. The engine ("host")
 * passes in a table of services (logging, model info, tensors, checkpoints, engine state,
 * compute primitives). Plugins never link against engine symbols.
 *
 * Compatibility rules (for both sides):
 *  - abi_major MUST match the host's exactly; a mismatch is refused and both numbers logged.
 *  - Every struct that either side may grow starts with `struct_size` and only ever gets fields
 *    appended. A reader MUST NOT touch fields at or beyond struct_size (see DRIFT_HAS_FIELD);
 *    the host copies the descriptor into a zeroed struct, so fields an older plugin lacks read
 *    as 0/NULL and fields a newer plugin added are ignored.
 *  - Arrays of structs are never passed: per-sequence structs come as arrays of pointers, so
 *    they may grow too.
 *
 * Status: every hook and service returns drift_status_t. Details go through host->log, never
 * through exceptions: a hook MUST NOT let a C++ exception escape. (The host still catches one
 * and treats it like DRIFT_ERROR.) When a hook fails, the host logs ONE "[fallback]" line and
 * calls no further hooks of that plugin for that request -- not even on_request_finish, so the
 * plugin MUST drop the request's state itself before returning the error. The request goes on
 * without the plugin (no draft / full verification / no caching). The batch hooks (on_propose,
 * on_choose_kv_view) fail every sequence of the call when they return an error; to fail one
 * sequence only, set that tree's or view's `status` and return DRIFT_OK. A failing
 * declare_memory, create or on_declare_needs, and a failing on_evict, disable the plugin for the
 * engine's lifetime.
 *
 * Call order (one engine, per request; hooks of different plugins follow config order):
 *   load:     drift_plugin_get -> declare_memory (1.4) -> create -> on_declare_needs
 *   admit:    on_prefix_match (cache managers; read-only; MAY repeat while admission waits)
 *             -> on_request_start (once admitted; prefix pages already adopted)
 *   per step: on_propose (the draft provider; decode sequences with speculation on)
 *             -> on_choose_kv_view (the verification policy; sequences with a draft tree)
 *             -> target forward
 *             -> on_accept (committed tokens, >= 1) -> on_rewind (only when n > 0)
 *             -> on_pages_full (cache managers, pages that became full and committed)
 *             -> on_target_forward (1.2; once per step, every sequence of the forward still
 *                running) -> on_propose of the next step follows right after it
 *   any time between steps: on_evict (cache managers, when the host needs pages)
 *   end:      on_request_finish (reason says stop/length/abort/preempted)
 *   unload:   destroy
 * A preempted request (recompute) gets on_request_finish(DRIFT_FINISH_PREEMPTED); when it is
 * re-admitted it gets on_prefix_match / on_request_start again with `resumed` set and its
 * generated tokens appended to the prompt. One aborted (or failed) while it waits for that gets
 * no further hook: PREEMPTED already told the plugin to drop its state. A draft provider may also
 * get on_request_finish(DRIFT_FINISH_ABORT) for a request that goes on decoding without it (the
 * host's adaptive speculation stopped drafting for it: the provider's per-step work, such as a
 * draft model following the target, no longer paid): no further hook for that request reaches it.
 * 1.4: so does any plugin whose tree or view the host refused although the hook returned DRIFT_OK
 * with the sequence's status OK (an invalid tree or view, an input field changed): after its
 * "[fallback]" line the plugin gets on_request_finish(DRIFT_FINISH_ABORT) for that request, so it
 * can drop what it holds for it.
 *
 * Threading: the host calls hooks of one instance from one thread at a time, never
 * concurrently. Host services MUST only be called from inside a hook (or create/destroy), on
 * the thread that called the hook. Hooks MUST NOT block on I/O or sleep.
 *
 * Ownership: everything the host passes in or a service returns (pointers, arrays, strings,
 * tensor views) is owned by the host, read-only, and valid only until the hook returns; views
 * from several service calls in one hook stay valid together. A plugin MUST copy what it keeps.
 * Output
 * buffers are allocated by the host with the stated capacity; a plugin MUST NOT write beyond
 * it. The descriptor and its strings MUST stay valid until the library is unloaded (static).
 * Tensors from tensor_alloc belong to the plugin until tensor_free and MUST be freed by destroy.
 *
 * GPU work: hooks that receive a `stream` MUST enqueue device work on that stream (or make
 * their own streams wait for it and make it wait for them before returning) and MUST NOT
 * synchronise the whole device. Host-memory outputs (draft trees, page lists) MUST be complete
 * when the hook returns. With the CPU backend, stream is NULL and every service runs on the CPU.
 */
#ifndef DRIFT_PLUGIN_H
#define DRIFT_PLUGIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DRIFT_ABI_MAJOR 1
#define DRIFT_ABI_MINOR 4
/* Packed version passed to the entry point: major in the high 16 bits. */
#define DRIFT_ABI_VERSION ((uint32_t)((DRIFT_ABI_MAJOR << 16) | DRIFT_ABI_MINOR))
#define DRIFT_ABI_VERSION_MAJOR(v) ((uint32_t)(v) >> 16)
#define DRIFT_ABI_VERSION_MINOR(v) ((uint32_t)(v) & 0xffffu)

#define DRIFT_PLUGIN_ENTRY_POINT "drift_plugin_get"
#if defined(_WIN32)
#define DRIFT_EXPORT __declspec(dllexport)
#else
#define DRIFT_EXPORT __attribute__((visibility("default")))
#endif

/* True when `ptr` (a struct with struct_size) is large enough to hold `field`. */
#define DRIFT_HAS_FIELD(ptr, type, field) \
  ((ptr)->struct_size >= offsetof(type, field) + sizeof(((type*)0)->field))

/* ---- Basic types ------------------------------------------------------------------------- */

typedef int32_t drift_status_t;
enum {
  DRIFT_OK = 0,
  DRIFT_ERROR = 1,                  /* generic failure; say why through host->log */
  DRIFT_ERROR_INVALID_ARGUMENT = 2,
  DRIFT_ERROR_NOT_SUPPORTED = 3,    /* a service the current engine/backend does not provide */
  DRIFT_ERROR_NOT_FOUND = 4,        /* unknown key, tensor, sequence, page */
  DRIFT_ERROR_OUT_OF_MEMORY = 5
};

/* Plugin kinds, a bit set: one plugin may implement several. */
typedef uint32_t drift_kinds_t;
#define DRIFT_KIND_DRAFT_PROVIDER 0x1u
#define DRIFT_KIND_VERIFICATION_POLICY 0x2u
#define DRIFT_KIND_CACHE_MANAGER 0x4u

typedef int64_t drift_seq_id_t;  /* the request id; unique for the engine's lifetime */
typedef int32_t drift_token_t;
typedef int32_t drift_page_id_t; /* index into the engine's KV page pool */

enum { DRIFT_LOG_DEBUG = 0, DRIFT_LOG_INFO = 1, DRIFT_LOG_WARN = 2, DRIFT_LOG_ERROR = 3 };

enum {
  DRIFT_FINISH_STOP = 0,      /* EOS, stop token or stop string */
  DRIFT_FINISH_LENGTH = 1,    /* max_new_tokens or max_seq_len */
  DRIFT_FINISH_ABORT = 2,     /* the caller cancelled */
  DRIFT_FINISH_PREEMPTED = 3, /* pages reclaimed; the request will start again (resumed) */
  DRIFT_FINISH_ERROR = 4      /* the engine failed the request */
};

/* ---- Tensors (DLPack-like; never owns memory by itself) ------------------------------------ */

enum { DRIFT_DTYPE_F32 = 0, DRIFT_DTYPE_F16 = 1, DRIFT_DTYPE_BF16 = 2, DRIFT_DTYPE_I32 = 3 };
enum { DRIFT_DEVICE_CPU = 0, DRIFT_DEVICE_CUDA = 1 };
#define DRIFT_MAX_DIMS 6

typedef struct drift_tensor_t {
  void* data;
  int32_t dtype;   /* DRIFT_DTYPE_* */
  int32_t device;  /* DRIFT_DEVICE_* */
  int32_t device_id;
  int32_t ndim;    /* 0..DRIFT_MAX_DIMS */
  int64_t shape[DRIFT_MAX_DIMS];
  int64_t strides[DRIFT_MAX_DIMS]; /* in elements. Compute primitives take row-major contiguous
                                      tensors only; tensor_alloc always returns those. */
} drift_tensor_t;

/* ---- Engine / model description (host-owned, valid for the plugin's lifetime) -------------- */

#define DRIFT_MAX_EOS_TOKENS 8
typedef struct drift_model_info_t {
  uint32_t struct_size;
  int32_t device;            /* where engine tensors live: DRIFT_DEVICE_* */
  int32_t activation_dtype;  /* dtype of hidden states / KV: DRIFT_DTYPE_* */
  int64_t vocab_size;
  int64_t hidden_size;
  int64_t intermediate_size;
  int64_t num_layers;
  int64_t num_heads;
  int64_t num_kv_heads;
  int64_t head_dim;
  int64_t max_position_embeddings;
  double rms_norm_eps;
  double rope_theta;
  int64_t block_size;        /* KV tokens per page */
  int64_t num_pages;         /* KV page pool size */
  int32_t bos_token_id;      /* -1 when none */
  int32_t num_eos_tokens;
  int32_t eos_token_ids[DRIFT_MAX_EOS_TOKENS];
  /* 1.4: the most sequences one step runs, and the most draft tokens one sequence verifies in a
   * step ([speculative] max_draft_tokens): what a draft model's per-step work is bounded by. */
  int64_t max_batch_size;
  int64_t max_draft_tokens;
} drift_model_info_t;

/* ---- Hook arguments ------------------------------------------------------------------------ */

typedef struct drift_request_info_t {
  uint32_t struct_size;
  drift_seq_id_t seq_id;
  const drift_token_t* tokens;  /* prompt, plus generated tokens when resumed */
  int64_t num_tokens;
  int64_t num_prompt_tokens;    /* the original prompt's length (<= num_tokens) */
  int64_t num_cached_tokens;    /* leading tokens whose KV came from a cache manager, or from a
                                 * sibling sample of the same prompt (OpenAI's n > 1): they never
                                 * ran through the target for this request */
  int64_t max_new_tokens;
  double temperature;           /* 0: greedy */
  bool resumed;                 /* restarting after preemption */
  /* 1.1: the request's cache salt, NUL-terminated ("" when none; never NULL). A cache manager
   * MUST only share pages between requests with identical salts, so one tenant never reads
   * another's KV. Requests that opted out of caching never reach a cache manager at all. */
  const char* cache_salt;
  /* 1.2: this plugin is the request's draft provider and the request speculates (on_propose
   * will be asked for it). A draft model can skip the work of following other requests. */
  bool provides_drafts;
} drift_request_info_t;

typedef struct drift_step_t {
  uint32_t struct_size;
  int64_t step;                 /* engine step counter */
  void* stream;                 /* the stream GPU work goes on (NULL on the CPU backend) */
} drift_step_t;

/* What a plugin needs the host to prepare, asked once after create. Host-owned buffers. */
typedef struct drift_needs_t {
  uint32_t struct_size;
  int32_t* capture_layers;      /* in: buffer of max_capture_layers; out: target layer indices */
  int32_t max_capture_layers;   /* in: the model's num_layers */
  int32_t num_capture_layers;   /* out: hidden states after these layers are captured each step */
} drift_needs_t;

/* 1.4. What a plugin will hold in the engine device's memory (declare_memory), so the engine
 * sizes its KV pool around it. Host-owned; the host presets both to 0. */
typedef struct drift_memory_needs_t {
  uint32_t struct_size;
  /* out: bytes held whatever the pool's size -- weights, workspace, buffers -- allocated through
   * tensor_alloc / load_safetensors at create or later. */
  int64_t fixed_bytes;
  /* out: bytes per token the engine's KV pool holds (num_pages * block_size of model_info at
   * create): the plugin's own per-token state, e.g. a draft model's KV in pages mirroring the
   * target's. The pool is sized so the target's KV and this fit the budget together. */
  int64_t bytes_per_kv_token;
} drift_memory_needs_t;

/* One sequence's draft tree. Nodes are in topological order: parents[i] < i, and -1 means the
 * sequence's last committed token. A chain is parents = {-1, 0, 1, ...}. */
typedef struct drift_draft_tree_t {
  uint32_t struct_size;
  drift_seq_id_t seq_id;        /* in */
  int32_t budget;               /* in: capacity of the buffers; MUST NOT write more nodes */
  int32_t num_nodes;            /* out: 0..budget (0 = no draft this step) */
  drift_token_t* tokens;        /* out[budget] */
  int32_t* parents;             /* out[budget] */
  float* probs;                 /* out[budget], optional: draft probability of tokens[i] */
  bool has_probs;               /* out: probs were written */
  drift_status_t status;        /* out: host presets DRIFT_OK; an error fails this sequence only */
} drift_draft_tree_t;

enum {
  DRIFT_KV_VIEW_FULL = 0,       /* attend to the whole block table: a full verification */
  DRIFT_KV_VIEW_PAGES = 1       /* attend to explicit page lists (partial verification) */
};

/* One sequence's KV view for the verify forward. Choosing FULL is how a policy says a full
 * verification must run this step (e.g. a periodic refresh). With PAGES, list l (layer l, or
 * layer l / kv head h at index l * num_kv_heads + h when per_kv_head) is
 * pages[l * max_pages .. + page_counts[l]). The tail -- the page holding the tree's root (the
 * sequence's last committed token) and every page after it -- is always attended and MUST NOT
 * be listed; each listed page MUST be a distinct page of the sequence's block table before the
 * tail. The verify forward then attends, at that layer (and kv head), to the listed pages in
 * block-table order followed by the tail: keys keep their own positions (RoPE), the tree mask
 * applies as usual. A view breaking these rules is refused and that sequence verifies fully
 * (one "[fallback]" line). Acceptance is unchanged: a partial view changes what the verify
 * forward attends to, so outputs may differ from full verification (a lossy policy says so). */
typedef struct drift_kv_view_t {
  uint32_t struct_size;
  drift_seq_id_t seq_id;        /* in */
  int32_t mode;                 /* out: DRIFT_KV_VIEW_* (host presets FULL) */
  bool per_kv_head;             /* out: one list per (layer, kv head) instead of per layer */
  int32_t max_pages;            /* in: capacity of each list (the block table's length) */
  int32_t* page_counts;         /* out[num_layers * num_kv_heads] */
  drift_page_id_t* pages;       /* out[num_layers * num_kv_heads * max_pages] */
  drift_status_t status;        /* out: host presets DRIFT_OK; an error fails this sequence only */
  /* 1.3, out (host presets false): keep this sequence's post-RoPE queries of this step's verify
   * forward for host->query_states (a policy scoring pages by them sets it when it refreshes). */
  bool keep_queries;
} drift_kv_view_t;

/* 1.2. One sequence's rows of the target forward that just ran (on_target_forward). At this
 * point host->hidden_states returns exactly these rows for the sequence: positions
 * first_position .. first_position + num_rows - 1, in order -- a prefill chunk's tokens, or a
 * decode / verify step's root and accepted nodes. Every row's NEXT token is known: position p is
 * followed by tokens[p + 1] of host->sequence_tokens (p + 1 < num_tokens). */
typedef struct drift_forward_rows_t {
  uint32_t struct_size;
  drift_seq_id_t seq_id;        /* in */
  int64_t first_position;       /* in */
  int64_t num_rows;             /* in */
  int64_t num_tokens;           /* in: prompt + committed output tokens after this step */
  drift_status_t status;        /* out: host presets DRIFT_OK; an error fails this sequence only */
} drift_forward_rows_t;

/* Pages of one sequence that just became full and committed (KV final), offered for caching. */
typedef struct drift_full_pages_t {
  uint32_t struct_size;
  drift_seq_id_t seq_id;
  int64_t first_block;          /* index of pages[0] in the sequence's block table */
  int32_t num_pages;
  const drift_page_id_t* pages;
  const drift_token_t* tokens;  /* num_pages * block_size tokens held by these pages */
  const drift_token_t* prefix;  /* the first_block * block_size tokens before them */
} drift_full_pages_t;

/* Engine-side page facts, read through host->page_info. The caller sets struct_size; the host
 * writes only the fields that fit in it. */
typedef struct drift_page_info_t {
  uint32_t struct_size;
  int32_t ref_count;            /* sequences + cache references; 0: free; > 1: shared (read-only) */
  int32_t num_tokens;           /* slots holding KV: block_size for a full page, fewer for a
                                   sequence's partly filled tail page, 0 for a free page */
} drift_page_info_t;

/* Attention through host->attention. Either the plugin's own contiguous K/V (k, v non-NULL,
 * e.g. a draft head's cache; row j holds position j) or the engine's paged KV of seq_id at
 * `layer` (k, v NULL), restricted to `pages` when num_pages > 0. mask (optional, [n_q, n_kv],
 * 1 = may attend) gives a tree mask; without one attention is causal by position (query i sees
 * positions <= q_positions[i]). 1.2: with a mask and mask_offset > 0, the first mask_offset
 * attended positions are visible to every query and mask is [n_q, n_kv - mask_offset] over the
 * rest -- a draft tree over a committed prefix, without a mask row as long as the context. */
typedef struct drift_attention_args_t {
  uint32_t struct_size;
  const drift_tensor_t* q;           /* [n_q, num_heads, head_dim] */
  const drift_tensor_t* k;           /* [n_kv, num_kv_heads, head_dim] or NULL */
  const drift_tensor_t* v;
  const drift_tensor_t* q_positions; /* I32 [n_q] */
  const uint8_t* mask;               /* [n_q * n_kv] or NULL */
  drift_seq_id_t seq_id;             /* paged KV only */
  int32_t layer;
  const drift_page_id_t* pages;
  int32_t num_pages;
  float scale;                       /* 0: 1/sqrt(head_dim) */
  drift_tensor_t* out;               /* [n_q, num_heads, head_dim] */
  int64_t mask_offset;               /* 1.2: see above; 0 = the mask covers every position */
  /* 1.4: the plugin's own K/V in pages. With k, v set and kv_pages non-NULL, k and v are pools
   * [pool_slots, num_kv_heads, head_dim] (tensor_alloc'd by the plugin) and the attended
   * positions 0 .. kv_len - 1 are at slots kv_pages[j / kv_block_size] * kv_block_size +
   * j % kv_block_size (num_kv_pages >= ceil(kv_len / kv_block_size) pages, each inside the pool).
   * Positions, masks and mask_offset work as with contiguous K/V. */
  const int32_t* kv_pages;
  int32_t num_kv_pages;
  int32_t kv_block_size;
  int64_t kv_len;
} drift_attention_args_t;

/* ---- Host services ------------------------------------------------------------------------- */

/* Append-only. Each plugin gets its own table; pass `ctx` back as the first argument. Services
 * a backend cannot provide return DRIFT_ERROR_NOT_SUPPORTED. A plugin built against a newer
 * header MUST check DRIFT_HAS_FIELD before calling a service newer than the host. */
typedef struct drift_host_api_t {
  uint32_t struct_size;
  uint32_t abi_major;
  uint32_t abi_minor;
  void* ctx;

  void (*log)(void* ctx, int32_t level, const char* message);

  /* The plugin's own [plugins.<name>] table; `key` is dotted ("tree.depth").
   * DRIFT_ERROR_NOT_FOUND when absent, DRIFT_ERROR_INVALID_ARGUMENT when the type differs.
   * get_setting_string copies at most cap-1 bytes plus NUL and stores the full length in *len. */
  drift_status_t (*get_setting_int)(void* ctx, const char* key, int64_t* out);
  drift_status_t (*get_setting_double)(void* ctx, const char* key, double* out);
  drift_status_t (*get_setting_bool)(void* ctx, const char* key, bool* out);
  drift_status_t (*get_setting_string)(void* ctx, const char* key, char* buf, size_t cap,
                                       size_t* len);

  const drift_model_info_t* (*model_info)(void* ctx);

  /* Tensors on the engine device, row-major contiguous, owned by the plugin until freed.
   * tensor_copy: same dtype and element count, any devices; it has completed when it returns
   * if dst is in CPU memory, otherwise it is ordered on `stream`. */
  drift_status_t (*tensor_alloc)(void* ctx, int32_t dtype, int32_t ndim, const int64_t* shape,
                                 drift_tensor_t* out);
  void (*tensor_free)(void* ctx, drift_tensor_t* tensor);
  drift_status_t (*tensor_copy)(void* ctx, void* stream, const drift_tensor_t* src,
                                drift_tensor_t* dst);
  /* Loads the named tensors of a safetensors checkpoint (a file, or a directory with an index)
   * into new tensors on the engine device: floating-point tensors converted to the activation
   * dtype, integer and bool tensors (1.2) to I32 (each value must fit; bool as 0/1). */
  drift_status_t (*load_safetensors)(void* ctx, const char* path, const char* const* names,
                                     size_t num_names, drift_tensor_t* out);

  /* Engine state, read-only views valid until the hook returns. An unknown sequence or page
   * answers DRIFT_ERROR_NOT_FOUND. */
  /* Hidden states after decoder layer `layer` (0-based; one of the declared capture layers,
   * else DRIFT_ERROR_INVALID_ARGUMENT) for the sequence's rows of the last target forward:
   * [n_rows, hidden_size] in the activation dtype, one row per token the forward computed for
   * the sequence, in position order (a prefill chunk: its tokens; a decode step: one row). The
   * last row is at position num_tokens - 1 of block_table. DRIFT_ERROR_NOT_FOUND when the
   * sequence was not in the last forward. */
  drift_status_t (*hidden_states)(void* ctx, drift_seq_id_t seq, int32_t layer,
                                  drift_tensor_t* out);
  /* The sequence's prompt followed by its generated tokens. */
  drift_status_t (*sequence_tokens)(void* ctx, drift_seq_id_t seq, const drift_token_t** tokens,
                                    int64_t* num_tokens);
  /* The sequence's pages in order and how many leading tokens have KV in them. */
  drift_status_t (*block_table)(void* ctx, drift_seq_id_t seq, const drift_page_id_t** pages,
                                int64_t* num_pages, int64_t* num_tokens);
  drift_status_t (*page_info)(void* ctx, drift_page_id_t page, drift_page_info_t* out);
  /* Block summaries for page selection (SpecPV, Quest): for each of the sequence's `pages`
   * (each in its block table), the elementwise max and min of the post-RoPE keys over the
   * page's filled slots at `layer`. kmax, kmin: F32 [num_pages, num_kv_heads, head_dim],
   * preallocated by the caller. */
  drift_status_t (*page_key_summary)(void* ctx, drift_seq_id_t seq, int32_t layer,
                                     const drift_page_id_t* pages, int32_t num_pages,
                                     drift_tensor_t* kmax, drift_tensor_t* kmin);

  /* Compute primitives on the engine's backend, ordered on `stream`. out tensors are
   * preallocated by the caller; in-place (out == input) is allowed for rms_norm, rope,
   * softmax and silu_mul. */
  drift_status_t (*embedding)(void* ctx, void* stream, const drift_tensor_t* table,
                              const drift_tensor_t* ids, drift_tensor_t* out);
  /* out[m, n] = x[m, k] * w[n, k]^T (+ bias[n]); bias may be NULL. */
  drift_status_t (*gemm)(void* ctx, void* stream, const drift_tensor_t* x, const drift_tensor_t* w,
                         const drift_tensor_t* bias, drift_tensor_t* out);
  drift_status_t (*rms_norm)(void* ctx, void* stream, const drift_tensor_t* x,
                             const drift_tensor_t* weight, float eps, drift_tensor_t* out);
  /* x [n, heads, head_dim] rotated in place with the target model's rope settings. */
  drift_status_t (*rope)(void* ctx, void* stream, drift_tensor_t* x,
                         const drift_tensor_t* positions);
  drift_status_t (*attention)(void* ctx, void* stream, const drift_attention_args_t* args);
  /* out = silu(gate) * up */
  drift_status_t (*silu_mul)(void* ctx, void* stream, const drift_tensor_t* gate,
                             const drift_tensor_t* up, drift_tensor_t* out);
  /* softmax over the last dimension, after dividing by temperature (> 0). */
  drift_status_t (*softmax)(void* ctx, void* stream, const drift_tensor_t* x, float temperature,
                            drift_tensor_t* out);
  /* Largest k along the last dimension of x [n, v]: values F32 [n, k], indices I32 [n, k],
   * descending. */
  drift_status_t (*top_k)(void* ctx, void* stream, const drift_tensor_t* x, int32_t k,
                          drift_tensor_t* values, drift_tensor_t* indices);

  /* 1.1. Cache managers: stop holding `pages` now (e.g. to stay under a capacity) instead of
   * waiting for on_evict. Every page MUST be one the plugin holds, each named once; otherwise
   * nothing is released and DRIFT_ERROR_INVALID_ARGUMENT comes back. Not from on_prefix_match
   * (read-only) or on_evict (answer through its output): DRIFT_ERROR_INVALID_ARGUMENT there.
   * A page a running sequence still uses stays alive for that sequence. */
  drift_status_t (*release_pages)(void* ctx, const drift_page_id_t* pages, int32_t num_pages);

  /* 1.2. Compute for draft models, ordered on `stream` like the primitives above. */
  /* out = x + y elementwise (same shapes; activation dtype or F32 each); out may be x or y. */
  drift_status_t (*add)(void* ctx, void* stream, const drift_tensor_t* x, const drift_tensor_t* y,
                        drift_tensor_t* out);
  /* out = the parts side by side along the last dimension: parts[i] [..., w_i] with the same
   * leading dimensions and dtype as out [..., sum of w_i]. out overlaps no part. */
  drift_status_t (*concat)(void* ctx, void* stream, const drift_tensor_t* const* parts, size_t num_parts,
                           drift_tensor_t* out);
  /* 1.2. A view of one of the target model's weights, by its checkpoint name, valid until the
   * plugin is destroyed: "model.embed_tokens.weight" [vocab, hidden], "lm_head.weight" [vocab,
   * hidden] (the embedding when the model ties them), "model.norm.weight" [hidden]; activation
   * dtype, engine device. READ-ONLY: a plugin MUST NOT write through it. Other names:
   * DRIFT_ERROR_NOT_FOUND. A draft head without its own embedding or head shares the target's. */
  drift_status_t (*model_weight)(void* ctx, const char* name, drift_tensor_t* out);
  /* 1.2. get_setting_string for a setting that names a file or folder: a relative path comes
   * back resolved against the folder of the config file that holds it (unchanged when the
   * config did not come from a file). */
  drift_status_t (*get_setting_path)(void* ctx, const char* key, char* buf, size_t cap, size_t* len);

  /* 1.3. The post-RoPE queries at `layer` of the sequence's verify rows in the last target
   * forward -- its root, then its draft nodes in tree order: [n_rows, num_heads, head_dim],
   * activation dtype, engine device; a read-only view valid until the hook returns. Kept only
   * for sequences whose view set keep_queries for that forward (readable from its
   * on_target_forward on); otherwise DRIFT_ERROR_NOT_FOUND. */
  drift_status_t (*query_states)(void* ctx, drift_seq_id_t seq, int32_t layer, drift_tensor_t* out);
  /* 1.3. Query-aware block scores (SpecPV, Quest), ordered on `stream`: q [n, num_heads,
   * head_dim] (activation dtype or F32), kmax / kmin F32 [num_pages, num_kv_heads, head_dim]
   * (page_key_summary's layout), out F32 [num_kv_heads, num_pages] with out[h][p] the mean, over
   * the n rows and the query heads of kv head h's group, of max(q . kmax[p][h], q . kmin[p][h])
   * (fp32 dot products). */
  drift_status_t (*page_scores)(void* ctx, void* stream, const drift_tensor_t* q, const drift_tensor_t* kmax,
                                const drift_tensor_t* kmin, drift_tensor_t* out);
} drift_host_api_t;

/* ---- The plugin descriptor ------------------------------------------------------------------ */

/* Required hooks: create, destroy; plus per kind -- draft provider: on_propose; verification
 * policy: on_choose_kv_view; cache manager: on_prefix_match, on_pages_full, on_evict. Every
 * other hook is optional (NULL = not interested). The host refuses a plugin lacking a required
 * hook at load. `instance` is whatever create stored. */
typedef struct drift_plugin_t {
  uint32_t struct_size;  /* sizeof(drift_plugin_t) as the plugin was compiled */
  uint32_t abi_major;    /* DRIFT_ABI_MAJOR */
  uint32_t abi_minor;    /* DRIFT_ABI_MINOR */
  const char* name;      /* e.g. "eagle3" */
  const char* version;   /* the plugin's own version, e.g. "1.2.0" */
  drift_kinds_t kinds;

  /* Lifecycle. `host` stays valid until destroy returns. settings_toml is the plugin's
   * [plugins.<name>] table as TOML text ("" when absent). On error create MUST leave nothing
   * allocated; destroy is then not called. */
  drift_status_t (*create)(const drift_host_api_t* host, const char* settings_toml,
                           void** instance);
  void (*destroy)(void* instance);
  /* Escape hatch: a versioned key ("drift.eagle3.tree/1") -> a plugin-owned static table, or
   * NULL when unknown. Lets one plugin grow without growing this struct. */
  const void* (*get_extension)(void* instance, const char* key);
  drift_status_t (*on_declare_needs)(void* instance, drift_needs_t* needs);

  /* Common hooks. tokens of on_accept are the tokens committed this step, in order (accepted
   * draft tokens plus the target's own token). on_rewind: n speculative positions beyond the
   * committed ones were discarded (their KV freed). */
  drift_status_t (*on_request_start)(void* instance, const drift_request_info_t* request);
  drift_status_t (*on_request_finish)(void* instance, drift_seq_id_t seq, int32_t reason);
  drift_status_t (*on_accept)(void* instance, drift_seq_id_t seq, const drift_token_t* tokens,
                              size_t num_tokens);
  drift_status_t (*on_rewind)(void* instance, drift_seq_id_t seq, int64_t n);

  /* Draft provider: fill each tree (budget 0 sequences are not passed). May run the draft
   * model on step->stream; MAY read hidden states of the declared layers. */
  drift_status_t (*on_propose)(void* instance, const drift_step_t* step,
                               drift_draft_tree_t* const* trees, size_t num_trees);

  /* Verification policy: set each view's mode (and page lists). MUST NOT change KV. */
  drift_status_t (*on_choose_kv_view)(void* instance, const drift_step_t* step,
                                      drift_kv_view_t* const* views, size_t num_views);

  /* Cache manager. The host does all reference counting: a page kept in on_pages_full stays
   * alive (one reference per keeping plugin) until the plugin names it in on_evict (or gives it
   * back through host->release_pages). Only committed KV is offered: the full pages of a
   * request whose whole prompt has been computed -- never draft-tree slots, never the partly
   * filled tail page, never pages of a request aborted or preempted before its prompt was in.
   * on_prefix_match is read-only (MUST NOT change plugin state that affects later answers
   * other than LRU bookkeeping): it names cached pages holding the request's leading
   * max_pages full blocks, in order; *num_pages = 0 for a miss. Every page named MUST be one
   * the plugin holds. */
  drift_status_t (*on_prefix_match)(void* instance, const drift_request_info_t* request,
                                    drift_page_id_t* pages, int32_t max_pages,
                                    int32_t* num_pages);
  /* keep[i] = true to hold pages->pages[i] (host presets false). */
  drift_status_t (*on_pages_full)(void* instance, const drift_full_pages_t* pages, bool* keep);
  /* The host wants `wanted` pages back: write held pages to let go into released (capacity
   * max_released >= wanted) and their count to *num_released. Fewer is fine while the engine
   * can make progress otherwise. When it cannot (nothing runs and the next request does not
   * fit), a cache manager that releases fewer than min(wanted, pages it holds) is disabled
   * and all its pages are taken back, so a hoarding cache never stalls the engine. */
  drift_status_t (*on_evict)(void* instance, int32_t wanted, drift_page_id_t* released,
                             int32_t max_released, int32_t* num_released);

  /* 1.2, optional, any kind. Once per engine step, after the forward's commits (on_accept,
   * on_rewind, on_pages_full) and before the next on_propose: the sequences of that forward
   * that are still running and that this plugin follows (started, not failed), with the rows
   * host->hidden_states now returns for each (drift_forward_rows_t). A draft model conditioned
   * on the target's hidden states (EAGLE-3) extends its own state here: every position of a
   * request reaches it exactly once, prefill chunks included, except positions whose KV came
   * from a cache manager or a sibling sample (num_cached_tokens) and never ran through the
   * target for this request. MAY run work on step->stream. A batch hook: an error fails every
   * sequence of the call; set a row's status to fail one. */
  drift_status_t (*on_target_forward)(void* instance, const drift_step_t* step,
                                      drift_forward_rows_t* const* rows, size_t num_rows);
  /* 1.4, optional, any kind. Called once before create, before the engine sizes its KV pool:
   * what the plugin will hold in device memory (drift_memory_needs_t), from its settings and
   * the model. host->model_info's num_pages is 0 here (not sized yet; create sees the final
   * value); only log, model_info and the get_setting_* services may be called (tensor_alloc is
   * refused). The engine budgets what is declared: with kv_cache.memory_mb the per-token bytes
   * come out of that budget, with memory_fraction the fixed bytes too. What a plugin that
   * declared allocates beyond fixed_bytes + bytes_per_kv_token * num_pages * block_size is
   * refused (DRIFT_ERROR_OUT_OF_MEMORY). An error disables the plugin for the engine's lifetime. */
  drift_status_t (*declare_memory)(const drift_host_api_t* host, const char* settings_toml,
                                   drift_memory_needs_t* needs);
  /* Fields appended in later 1.x minors go here. */
} drift_plugin_t;

/* 1.2. A well-known extension: get_extension(instance, DRIFT_STATS_EXTENSION) may return this
 * table, whose stats_json gives the plugin's own figures (its costs, where its answers came from)
 * as one JSON object. The engine reports them beside its own metrics (drift bench's JSON, the
 * summary of drift generate --json); it never uses them to decide anything. The string belongs
 * to the plugin and stays valid until the next call or destroy. */
#define DRIFT_STATS_EXTENSION "drift.stats/1"
typedef struct drift_stats_extension_t {
  uint32_t struct_size;
  const char* (*stats_json)(void* instance);
} drift_stats_extension_t;

/* The one exported entry point, defined by every plugin:
 *   DRIFT_EXPORT const drift_plugin_t* drift_plugin_get(const drift_host_api_t* host,
 *                                                       uint32_t host_abi_version) { ... }
 * host_abi_version is the host's DRIFT_ABI_VERSION. It MUST return the same static descriptor
 * on every call, or NULL when it cannot work with that host (the host logs and refuses it).
 * It MUST NOT allocate or start work; `host` is the table create will receive. */
typedef const drift_plugin_t* (*drift_plugin_get_fn)(const drift_host_api_t* host,
                                                     uint32_t host_abi_version);
DRIFT_EXPORT const drift_plugin_t* drift_plugin_get(const drift_host_api_t* host,
                                                    uint32_t host_abi_version);

#ifdef __cplusplus
}
#endif

#endif /* DRIFT_PLUGIN_H */
