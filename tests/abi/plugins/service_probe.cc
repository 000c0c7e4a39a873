/* The service probe: a draft provider (it proposes nothing) that checks, at every step, that the
 * host services tell the truth about a real engine run -- written against drift/plugin.h alone,
 * like any third-party plugin, for a Llama checkpoint with tied embeddings (stories260K).
 *
 * For each decode sequence it rebuilds what the engine computed from the checkpoint's raw
 * weights (load_safetensors) with the compute primitives, and compares:
 *  - layer0:      decoder layer 0 recomputed (embedding, rms_norm, gemm, rope, paged attention,
 *                 silu_mul) == hidden_states(seq, 0) captured by the last forward;
 *  - lm_head:     the last layer's captured state through the final norm and the LM head has
 *                 its argmax (top_k, softmax) at the token the engine sampled (greedy runs);
 *  - attention:   attention over the engine's paged KV == attention over K/V the probe computed
 *                 itself, for the whole block table, as an explicit page list, and for page 0;
 *  - key_summary: page_key_summary == max/min of the probe's own keys per page;
 *  - page_info:   filled slots per page of the block table, and struct_size respected;
 *  - views:       a token view stays intact while the hook asks for another sequence's;
 *  - not_found:   unknown sequences answer DRIFT_ERROR_NOT_FOUND, undeclared layers
 *                 DRIFT_ERROR_INVALID_ARGUMENT.
 *  - model_weight: (ABI 1.2) the target's embedding, LM head (tied: the embedding) and final
 *                 norm as the host shares them == the checkpoint's; other names NOT_FOUND.
 * create also writes "setting_path <value>" for setting `relative` (get_setting_path, 1.2).
 * Each check writes "check <name> seq=<id> ok" or "... FAIL <why>" to setting `log_path`; create
 * writes the model_info it saw. Settings: model_dir (the checkpoint), log_path. */
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <vector>

#include "drift/plugin.h"

namespace {

// A failed check: what went wrong, for the log line.
struct CheckFailed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void must(drift_status_t status, const char* what) {
  if (status != DRIFT_OK) throw CheckFailed(std::string(what) + " returned status " + std::to_string(status));
}

// A host-allocated F32 tensor, freed on scope exit.
class Owned {
 public:
  Owned(const drift_host_api_t* host, std::initializer_list<int64_t> shape) : host_(host) {
    must(host->tensor_alloc(host->ctx, DRIFT_DTYPE_F32, static_cast<int32_t>(shape.size()), shape.begin(), &t_),
         "tensor_alloc");
  }
  ~Owned() { host_->tensor_free(host_->ctx, &t_); }
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
  drift_tensor_t* get() { return &t_; }
  float* data() { return static_cast<float*>(t_.data); }
  // The same memory seen with another (contiguous) shape.
  drift_tensor_t as(std::initializer_list<int64_t> shape) const { return reshape(t_, shape); }
  static drift_tensor_t reshape(const drift_tensor_t& t, std::initializer_list<int64_t> shape) {
    drift_tensor_t v = t;
    v.ndim = static_cast<int32_t>(shape.size());
    std::copy(shape.begin(), shape.end(), v.shape);
    std::fill(v.strides, v.strides + DRIFT_MAX_DIMS, 0);  // all zero: contiguous
    return v;
  }

 private:
  const drift_host_api_t* host_;
  drift_tensor_t t_{};
};

// An I32 tensor viewing a host vector (inputs only).
drift_tensor_t ids_view(std::vector<int32_t>& ids) {
  drift_tensor_t t{};
  t.data = ids.data();
  t.dtype = DRIFT_DTYPE_I32;
  t.device = DRIFT_DEVICE_CPU;
  t.ndim = 1;
  t.shape[0] = static_cast<int64_t>(ids.size());
  t.strides[0] = 1;
  return t;
}

void expect_close(const float* got, const float* want, int64_t n, const char* what) {
  double scale = 1.0, worst = 0.0;
  for (int64_t i = 0; i < n; ++i) scale = std::max(scale, std::fabs(double(want[i])));
  for (int64_t i = 0; i < n; ++i) {
    const double diff = std::fabs(double(got[i]) - double(want[i]));
    if (!(diff <= worst)) worst = diff;  // NaN sticks
  }
  if (!(worst <= 1e-4 * scale))
    throw CheckFailed(std::string(what) + ": max difference " + std::to_string(worst) + " (scale " +
                      std::to_string(scale) + ")");
}

enum Weight { kEmbed, kInNorm, kQ, kK, kV, kO, kPostNorm, kGate, kUp, kDown, kFinalNorm, kNumWeights };
const char* const kWeightNames[kNumWeights] = {
    "model.embed_tokens.weight",        "model.layers.0.input_layernorm.weight",
    "model.layers.0.self_attn.q_proj.weight", "model.layers.0.self_attn.k_proj.weight",
    "model.layers.0.self_attn.v_proj.weight", "model.layers.0.self_attn.o_proj.weight",
    "model.layers.0.post_attention_layernorm.weight", "model.layers.0.mlp.gate_proj.weight",
    "model.layers.0.mlp.up_proj.weight", "model.layers.0.mlp.down_proj.weight", "model.norm.weight"};

class Probe {
 public:
  Probe(const drift_host_api_t* host, FILE* log) : host_(host), m_(*host->model_info(host->ctx)), log_(log) {}
  ~Probe() {
    for (drift_tensor_t& t : w_) host_->tensor_free(host_->ctx, &t);
    if (log_) std::fclose(log_);
  }

  drift_status_t load(const std::string& model_dir) {
    return host_->load_safetensors(host_->ctx, model_dir.c_str(), kWeightNames, kNumWeights, w_);
  }
  void write_model_info() {
    std::fprintf(log_, "model_info bos=%d eos=", m_.bos_token_id);
    for (int32_t i = 0; i < m_.num_eos_tokens; ++i) std::fprintf(log_, i ? ",%d" : "%d", m_.eos_token_ids[i]);
    std::fprintf(log_, " layers=%lld block=%lld device=%d dtype=%d\n", (long long)m_.num_layers,
                 (long long)m_.block_size, m_.device, m_.activation_dtype);
    std::fflush(log_);
  }
  int32_t last_layer() const { return static_cast<int32_t>(m_.num_layers - 1); }

  void probe_step(drift_draft_tree_t* const* trees, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      const drift_seq_id_t seq = trees[i]->seq_id;
      check("layer0", seq, [&] { check_layer0(seq); });
      check("lm_head", seq, [&] { check_lm_head(seq); });
      check("attention", seq, [&] { check_attention(seq); });
      check("page_info", seq, [&] { check_page_info(seq); });
      check("not_found", seq, [&] { check_not_found(seq); });
      check("model_weight", seq, [&] { check_model_weight(); });
      trees[i]->num_nodes = 0;  // a probe, not a drafter
    }
    if (n >= 2) check("views", trees[0]->seq_id, [&] { check_views(trees[0]->seq_id, trees[1]->seq_id); });
  }

 private:
  template <typename Body>
  void check(const char* name, drift_seq_id_t seq, Body&& body) {
    try {
      body();
      std::fprintf(log_, "check %s seq=%lld ok\n", name, (long long)seq);
    } catch (const CheckFailed& e) {
      std::fprintf(log_, "check %s seq=%lld FAIL %s\n", name, (long long)seq, e.what());
    }
    std::fflush(log_);
  }

  struct SeqState {
    const drift_token_t* tokens = nullptr;
    int64_t num_tokens = 0;  // prompt + generated
    const drift_page_id_t* pages = nullptr;
    int64_t num_pages = 0;
    int64_t computed = 0;  // tokens with KV
  };
  SeqState read(drift_seq_id_t seq) const {
    SeqState s;
    must(host_->sequence_tokens(host_->ctx, seq, &s.tokens, &s.num_tokens), "sequence_tokens");
    must(host_->block_table(host_->ctx, seq, &s.pages, &s.num_pages, &s.computed), "block_table");
    return s;
  }

  // Layer 0's input norm for positions [first, first + n): x (the embeddings) and h = norm(x).
  void embed_and_norm(const SeqState& s, int64_t first, int64_t n, Owned& x, Owned& h) const {
    std::vector<int32_t> ids(s.tokens + first, s.tokens + first + n);
    drift_tensor_t ids_t = ids_view(ids);
    must(host_->embedding(host_->ctx, nullptr, &w_[kEmbed], &ids_t, x.get()), "embedding");
    must(host_->rms_norm(host_->ctx, nullptr, x.get(), &w_[kInNorm], float(m_.rms_norm_eps), h.get()), "rms_norm");
  }
  // h [n, hidden] -> w [n, heads * head_dim] -> rotated at the positions, seen as [n, heads, head_dim].
  drift_tensor_t project(Owned& h, Weight w, Owned& out, int64_t heads, std::vector<int32_t>& positions, bool rotate) const {
    must(host_->gemm(host_->ctx, nullptr, h.get(), &w_[w], nullptr, out.get()), "gemm");
    drift_tensor_t view = out.as({out.get()->shape[0], heads, m_.head_dim});
    drift_tensor_t pos = ids_view(positions);
    if (rotate) must(host_->rope(host_->ctx, nullptr, &view, &pos), "rope");
    return view;
  }
  static std::vector<int32_t> positions(int64_t first, int64_t n) {
    std::vector<int32_t> p(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) p[i] = static_cast<int32_t>(first + i);
    return p;
  }
  drift_attention_args_t attention_args(drift_seq_id_t seq, const drift_tensor_t* q, drift_tensor_t* pos,
                                        drift_tensor_t* out) const {
    drift_attention_args_t a{};
    a.struct_size = sizeof(a);
    a.q = q;
    a.q_positions = pos;
    a.seq_id = seq;
    a.layer = 0;
    a.out = out;
    return a;
  }

  void check_layer0(drift_seq_id_t seq) {
    const SeqState s = read(seq);
    drift_tensor_t captured{};
    must(host_->hidden_states(host_->ctx, seq, 0, &captured), "hidden_states(layer 0)");
    const int64_t rows = captured.shape[0], hidden = m_.hidden_size, inter = m_.intermediate_size;
    if (captured.ndim != 2 || captured.shape[1] != hidden || rows < 1 || rows > s.computed)
      throw CheckFailed("hidden_states has a wrong shape");
    const int64_t first = s.computed - rows;  // the rows are the last forward's, ending at computed - 1
    Owned x(host_, {rows, hidden}), h(host_, {rows, hidden});
    embed_and_norm(s, first, rows, x, h);
    std::vector<int32_t> pos = positions(first, rows);
    Owned q(host_, {rows, m_.num_heads * m_.head_dim}), attn(host_, {rows, m_.num_heads * m_.head_dim});
    drift_tensor_t q3 = project(h, kQ, q, m_.num_heads, pos, true);
    drift_tensor_t attn3 = attn.as({rows, m_.num_heads, m_.head_dim}), pos_t = ids_view(pos);
    drift_attention_args_t args = attention_args(seq, &q3, &pos_t, &attn3);
    must(host_->attention(host_->ctx, nullptr, &args), "attention (paged)");
    Owned o(host_, {rows, hidden}), h2(host_, {rows, hidden});
    must(host_->gemm(host_->ctx, nullptr, attn.get(), &w_[kO], nullptr, o.get()), "gemm o_proj");
    for (int64_t i = 0; i < rows * hidden; ++i) x.data()[i] += o.data()[i];
    must(host_->rms_norm(host_->ctx, nullptr, x.get(), &w_[kPostNorm], float(m_.rms_norm_eps), h2.get()), "rms_norm");
    Owned gate(host_, {rows, inter}), up(host_, {rows, inter}), down(host_, {rows, hidden});
    must(host_->gemm(host_->ctx, nullptr, h2.get(), &w_[kGate], nullptr, gate.get()), "gemm gate");
    must(host_->gemm(host_->ctx, nullptr, h2.get(), &w_[kUp], nullptr, up.get()), "gemm up");
    must(host_->silu_mul(host_->ctx, nullptr, gate.get(), up.get(), gate.get()), "silu_mul");
    must(host_->gemm(host_->ctx, nullptr, gate.get(), &w_[kDown], nullptr, down.get()), "gemm down");
    for (int64_t i = 0; i < rows * hidden; ++i) x.data()[i] += down.data()[i];
    expect_close(static_cast<const float*>(captured.data), x.data(), rows * hidden, "layer 0 output");
  }

  void check_model_weight() {
    const std::pair<const char*, Weight> shared[] = {
        {"model.embed_tokens.weight", kEmbed}, {"lm_head.weight", kEmbed}, {"model.norm.weight", kFinalNorm}};
    for (const auto& [name, weight] : shared) {
      drift_tensor_t view{};
      must(host_->model_weight(host_->ctx, name, &view), name);
      const drift_tensor_t& own = w_[weight];
      if (view.ndim != own.ndim || !std::equal(own.shape, own.shape + own.ndim, view.shape))
        throw CheckFailed(std::string(name) + ": shape differs from the checkpoint's");
      int64_t n = 1;
      for (int32_t d = 0; d < own.ndim; ++d) n *= own.shape[d];
      expect_close(static_cast<const float*>(view.data), static_cast<const float*>(own.data), n, name);
    }
    drift_tensor_t none{};
    if (host_->model_weight(host_->ctx, "model.layers.0.mlp.up_proj.weight", &none) != DRIFT_ERROR_NOT_FOUND)
      throw CheckFailed("a weight the host does not share must be NOT_FOUND");
  }

  void check_lm_head(drift_seq_id_t seq) {
    const SeqState s = read(seq);
    drift_tensor_t captured{};
    must(host_->hidden_states(host_->ctx, seq, last_layer(), &captured), "hidden_states(last layer)");
    const int64_t rows = captured.shape[0], hidden = m_.hidden_size, vocab = m_.vocab_size;
    drift_tensor_t last = Owned::reshape(captured, {1, hidden});
    last.data = static_cast<float*>(captured.data) + (rows - 1) * hidden;
    Owned normed(host_, {1, hidden}), logits(host_, {1, vocab}), probs(host_, {1, vocab});
    must(host_->rms_norm(host_->ctx, nullptr, &last, &w_[kFinalNorm], float(m_.rms_norm_eps), normed.get()), "rms_norm");
    must(host_->gemm(host_->ctx, nullptr, normed.get(), &w_[kEmbed], nullptr, logits.get()), "gemm lm_head");
    must(host_->softmax(host_->ctx, nullptr, logits.get(), 1.0f, probs.get()), "softmax");
    Owned top(host_, {1, 1});
    drift_tensor_t index{};
    const int64_t shape[2] = {1, 1};
    must(host_->tensor_alloc(host_->ctx, DRIFT_DTYPE_I32, 2, shape, &index), "tensor_alloc");
    const drift_status_t status = host_->top_k(host_->ctx, nullptr, logits.get(), 1, top.get(), &index);
    const int32_t argmax = *static_cast<int32_t*>(index.data);
    host_->tensor_free(host_->ctx, &index);
    must(status, "top_k");
    double sum = 0.0;
    for (int64_t i = 0; i < vocab; ++i) sum += probs.data()[i];
    const int32_t sampled = s.tokens[s.num_tokens - 1];
    if (argmax != sampled)
      throw CheckFailed("argmax " + std::to_string(argmax) + " but the engine sampled " + std::to_string(sampled));
    if (std::fabs(sum - 1.0) > 1e-4 || *std::max_element(probs.data(), probs.data() + vocab) != probs.data()[argmax])
      throw CheckFailed("softmax does not sum to 1 or peaks elsewhere");
  }

  void check_attention(drift_seq_id_t seq) {
    const SeqState s = read(seq);
    const int64_t n = s.computed, hidden = m_.hidden_size, bs = m_.block_size;
    const int64_t nh = m_.num_heads, nkv = m_.num_kv_heads, hd = m_.head_dim;
    Owned x(host_, {n, hidden}), h(host_, {n, hidden});
    embed_and_norm(s, 0, n, x, h);
    std::vector<int32_t> pos = positions(0, n);
    Owned q(host_, {n, nh * hd}), k(host_, {n, nkv * hd}), v(host_, {n, nkv * hd});
    drift_tensor_t q3 = project(h, kQ, q, nh, pos, true), k3 = project(h, kK, k, nkv, pos, true);
    drift_tensor_t v3 = project(h, kV, v, nkv, pos, false), pos_t = ids_view(pos);

    Owned dense(host_, {n, nh, hd}), paged(host_, {n, nh, hd}), listed(host_, {n, nh, hd});
    drift_attention_args_t a = attention_args(seq, &q3, &pos_t, dense.get());
    a.k = &k3;
    a.v = &v3;
    must(host_->attention(host_->ctx, nullptr, &a), "attention (dense)");
    a = attention_args(seq, &q3, &pos_t, paged.get());
    must(host_->attention(host_->ctx, nullptr, &a), "attention (paged)");
    expect_close(paged.data(), dense.data(), n * nh * hd, "paged vs dense attention");
    const int64_t written_pages = (n + bs - 1) / bs;  // pages beyond hold this step's slots only
    a = attention_args(seq, &q3, &pos_t, listed.get());
    a.pages = s.pages;
    a.num_pages = static_cast<int32_t>(written_pages);
    must(host_->attention(host_->ctx, nullptr, &a), "attention (page list)");
    expect_close(listed.data(), dense.data(), n * nh * hd, "page-list vs dense attention");

    // Page 0 alone == dense attention over the positions page 0 holds.
    const int64_t first_page = std::min(n, bs);
    drift_tensor_t k_head = Owned::reshape(*k.get(), {first_page, nkv, hd}), v_head = Owned::reshape(*v.get(), {first_page, nkv, hd});
    Owned dense0(host_, {n, nh, hd});
    a = attention_args(seq, &q3, &pos_t, dense0.get());
    a.k = &k_head;
    a.v = &v_head;
    must(host_->attention(host_->ctx, nullptr, &a), "attention (dense, page 0 rows)");
    a = attention_args(seq, &q3, &pos_t, listed.get());
    a.pages = s.pages;
    a.num_pages = 1;
    must(host_->attention(host_->ctx, nullptr, &a), "attention (page 0)");
    expect_close(listed.data(), dense0.data(), n * nh * hd, "page-0 vs dense attention");

    // Block summaries: max/min of the (rotated) keys over each written page's slots.
    Owned kmax(host_, {written_pages, nkv, hd}), kmin(host_, {written_pages, nkv, hd});
    must(host_->page_key_summary(host_->ctx, seq, 0, s.pages, static_cast<int32_t>(written_pages), kmax.get(), kmin.get()),
         "page_key_summary");
    std::vector<float> want_max(written_pages * nkv * hd), want_min(want_max.size());
    for (int64_t p = 0; p < written_pages; ++p)
      for (int64_t j = 0; j < nkv * hd; ++j) {
        float hi = -INFINITY, lo = INFINITY;
        for (int64_t t = p * bs; t < std::min(n, (p + 1) * bs); ++t) {
          hi = std::max(hi, k.data()[t * nkv * hd + j]);
          lo = std::min(lo, k.data()[t * nkv * hd + j]);
        }
        want_max[p * nkv * hd + j] = hi;
        want_min[p * nkv * hd + j] = lo;
      }
    expect_close(kmax.data(), want_max.data(), static_cast<int64_t>(want_max.size()), "page_key_summary max");
    expect_close(kmin.data(), want_min.data(), static_cast<int64_t>(want_min.size()), "page_key_summary min");
  }

  void check_page_info(drift_seq_id_t seq) {
    const SeqState s = read(seq);
    const int64_t bs = m_.block_size;
    for (int64_t b = 0; b < s.num_pages; ++b) {
      drift_page_info_t info{};
      info.struct_size = sizeof(info);
      must(host_->page_info(host_->ctx, s.pages[b], &info), "page_info");
      const int64_t filled = std::clamp<int64_t>(s.computed - b * bs, 0, bs);
      if (info.num_tokens != filled || info.ref_count < 1)
        throw CheckFailed("page " + std::to_string(s.pages[b]) + " (block " + std::to_string(b) + ") reports " +
                          std::to_string(info.num_tokens) + " tokens, ref_count " + std::to_string(info.ref_count) +
                          "; expected " + std::to_string(filled) + " tokens");
    }
    // A caller built against a header whose struct ends before num_tokens: that field is untouched.
    drift_page_info_t older{};
    older.struct_size = offsetof(drift_page_info_t, num_tokens);
    older.num_tokens = -7;
    must(host_->page_info(host_->ctx, s.pages[0], &older), "page_info (older struct)");
    if (older.num_tokens != -7 || older.ref_count < 1) throw CheckFailed("page_info wrote beyond struct_size");
  }

  void check_not_found(drift_seq_id_t seq) {
    const drift_seq_id_t unknown = drift_seq_id_t{1} << 40;
    const drift_token_t* tokens = nullptr;
    const drift_page_id_t* pages = nullptr;
    int64_t a = 0, b = 0;
    drift_tensor_t t{};
    drift_page_info_t info{};
    info.struct_size = sizeof(info);
    if (host_->sequence_tokens(host_->ctx, unknown, &tokens, &a) != DRIFT_ERROR_NOT_FOUND ||
        host_->block_table(host_->ctx, unknown, &pages, &a, &b) != DRIFT_ERROR_NOT_FOUND ||
        host_->hidden_states(host_->ctx, unknown, 0, &t) != DRIFT_ERROR_NOT_FOUND ||
        host_->page_info(host_->ctx, static_cast<drift_page_id_t>(m_.num_pages), &info) != DRIFT_ERROR_NOT_FOUND)
      throw CheckFailed("an unknown sequence or page did not answer NOT_FOUND");
    if (m_.num_layers > 2 && host_->hidden_states(host_->ctx, seq, 1, &t) != DRIFT_ERROR_INVALID_ARGUMENT)
      throw CheckFailed("hidden_states of an undeclared layer did not answer INVALID_ARGUMENT");
  }

  void check_views(drift_seq_id_t first, drift_seq_id_t second) {
    const drift_token_t* a = nullptr;
    const drift_token_t* b = nullptr;
    int64_t na = 0, nb = 0;
    must(host_->sequence_tokens(host_->ctx, first, &a, &na), "sequence_tokens");
    const std::vector<drift_token_t> copy(a, a + na);
    must(host_->sequence_tokens(host_->ctx, second, &b, &nb), "sequence_tokens");
    if (!std::equal(copy.begin(), copy.end(), a)) throw CheckFailed("the first view changed after a second call");
  }

  const drift_host_api_t* host_;
  const drift_model_info_t m_;
  FILE* log_;
  drift_tensor_t w_[kNumWeights]{};
};

std::string setting(const drift_host_api_t* host, const char* key) {
  char buf[1024];
  size_t len = 0;
  return host->get_setting_string(host->ctx, key, buf, sizeof buf, &len) == DRIFT_OK ? std::string(buf) : "";
}

drift_status_t create(const drift_host_api_t* host, const char* /*settings*/, void** out) {
  FILE* log = std::fopen(setting(host, "log_path").c_str(), "a");
  if (!log) {
    host->log(host->ctx, DRIFT_LOG_ERROR, "setting log_path: cannot open the file");
    return DRIFT_ERROR_INVALID_ARGUMENT;
  }
  auto* probe = new Probe(host, log);
  probe->write_model_info();
  char path[1024];
  size_t len = 0;
  if (host->get_setting_path(host->ctx, "relative", path, sizeof path, &len) == DRIFT_OK && len < sizeof path) {
    std::fprintf(log, "setting_path %s\n", path);
    std::fflush(log);
  }
  if (drift_status_t status = probe->load(setting(host, "model_dir")); status != DRIFT_OK) {
    host->log(host->ctx, DRIFT_LOG_ERROR, "setting model_dir: cannot load the checkpoint's layer-0 weights");
    delete probe;
    return status;
  }
  *out = probe;
  return DRIFT_OK;
}

void destroy(void* instance) { delete static_cast<Probe*>(instance); }

drift_status_t declare_needs(void* /*instance*/, drift_needs_t* needs) {
  needs->capture_layers[needs->num_capture_layers++] = 0;
  if (needs->max_capture_layers > 1) needs->capture_layers[needs->num_capture_layers++] = needs->max_capture_layers - 1;
  return DRIFT_OK;
}

drift_status_t propose(void* instance, const drift_step_t* /*step*/, drift_draft_tree_t* const* trees, size_t n) {
  static_cast<Probe*>(instance)->probe_step(trees, n);
  return DRIFT_OK;
}

drift_plugin_t make_descriptor() {
  drift_plugin_t d{};
  d.struct_size = sizeof(d);
  d.abi_major = DRIFT_ABI_MAJOR;
  d.abi_minor = DRIFT_ABI_MINOR;
  d.name = "service_probe";
  d.version = "1.0.0";
  d.kinds = DRIFT_KIND_DRAFT_PROVIDER;
  d.create = create;
  d.destroy = destroy;
  d.on_declare_needs = declare_needs;
  d.on_propose = propose;
  return d;
}

const drift_plugin_t descriptor = make_descriptor();

}  // namespace

extern "C" DRIFT_EXPORT const drift_plugin_t* drift_plugin_get(const drift_host_api_t* /*host*/,
                                                               uint32_t /*host_abi_version*/) {
  return &descriptor;
}
