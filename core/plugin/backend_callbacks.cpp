#include "core/plugin/backend_callbacks.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "core/error.h"
#include "core/plugin/page_key_summary.h"
#include "core/plugin/tensor_checks.h"
#include "core/safetensors.h"
#include "kernels/cpu/activation.h"

namespace drift {
namespace {

using namespace tensor_checks;

// What a backend's services accept: tensors on its device; activations in its compute dtype, and
// fp32 where an op reads or writes either; index tensors (ids, positions) on the host or the
// device.
struct Rules {
  Backend& backend;
  int32_t device;      // DRIFT_DEVICE_*
  int32_t activation;  // DRIFT_DTYPE_* of the backend's compute dtype

  DTypeSet act() const { return DTypeSet(activation); }
  DTypeSet act_or_f32() const { return DTypeSet(activation, DRIFT_DTYPE_F32); }
  const drift_tensor_t& tensor(const char* name, const drift_tensor_t* t, DTypeSet dtypes) const {
    return checked(name, t, device, dtypes);
  }
  const drift_tensor_t& index(const char* name, const drift_tensor_t* t) const {
    if (t && t->device != DRIFT_DEVICE_CPU) return checked(name, t, device, DTypeSet(DRIFT_DTYPE_I32));
    return checked(name, t, DRIFT_DEVICE_CPU, DTypeSet(DRIFT_DTYPE_I32));
  }
};

DType dtype_of(int32_t dtype) {
  switch (dtype) {
    case DRIFT_DTYPE_F32: return DType::F32;
    case DRIFT_DTYPE_F16: return DType::F16;
    case DRIFT_DTYPE_BF16: return DType::BF16;
    default: return DType::I32;
  }
}

// Zero-copy views for the Backend methods.
std::vector<int64_t> dims(const drift_tensor_t& t) { return {t.shape, t.shape + t.ndim}; }
Tensor view(const drift_tensor_t& t, std::vector<int64_t> shape) {
  return Tensor::wrap(t.data, std::move(shape), dtype_of(t.dtype),
                      t.device == DRIFT_DEVICE_CPU ? Device::CPU : Device::CUDA, nullptr);
}
Tensor view(const drift_tensor_t& t) { return view(t, dims(t)); }

// An index tensor's values on the host (read back from the device when it lives there).
std::vector<int32_t> host_ints(Backend& backend, const drift_tensor_t& t) {
  const auto n = static_cast<size_t>(tensor_numel(t));
  std::vector<int32_t> out(n);
  if (n == 0) return out;
  if (t.device == DRIFT_DEVICE_CPU) {
    std::memcpy(out.data(), t.data, n * sizeof(int32_t));
  } else {
    Tensor host = Tensor::wrap(out.data(), {static_cast<int64_t>(n)}, DType::I32, Device::CPU, nullptr);
    backend.copy(view(t), host);
  }
  return out;
}

// A view of x in the backend's compute dtype: x itself, or a converted scratch copy.
Tensor in_compute_dtype(Backend& backend, const drift_tensor_t& x) {
  Tensor v = view(x);
  if (v.dtype() == backend.compute_dtype()) return v;
  Tensor converted = backend.scratch(v.shape(), backend.compute_dtype());
  backend.convert(v, converted);
  return converted;
}

// ---- the primitives --------------------------------------------------------------------------

drift_status_t embedding(const Rules& rules, const drift_tensor_t* table_arg, const drift_tensor_t* ids_arg,
                         drift_tensor_t* out_arg) {
  const auto& table = rules.tensor("table", table_arg, rules.act());
  const auto& ids = rules.index("ids", ids_arg);
  const auto& out = rules.tensor("out", out_arg, rules.act_or_f32());
  expect_shape("table", table, {-1, -1}, "[vocab, dim]");
  expect_shape("ids", ids, {-1}, "[n]");
  const int64_t vocab = table.shape[0], dim = table.shape[1], n = ids.shape[0];
  expect_shape("out", out, {n, dim}, "[n, dim] for ids [n] and table [vocab, dim]");
  expect_disjoint("out", out, "table", table, false);
  expect_disjoint("out", out, "ids", ids, false);
  std::vector<int32_t> id_list = host_ints(rules.backend, ids);
  for (int64_t i = 0; i < n; ++i)
    if (id_list[i] < 0 || id_list[i] >= vocab)
      invalid("ids[{}] = {} is outside the table's {} rows", i, id_list[i], vocab);
  Tensor out_view = view(out);
  rules.backend.embedding(view(table), id_list, out_view);
  return DRIFT_OK;
}

drift_status_t gemm(const Rules& rules, const drift_tensor_t* x_arg, const drift_tensor_t* w_arg,
                    const drift_tensor_t* bias_arg, drift_tensor_t* out_arg) {
  const auto& x = rules.tensor("x", x_arg, rules.act_or_f32());
  const auto& w = rules.tensor("w", w_arg, rules.act());
  const auto& out = rules.tensor("out", out_arg, rules.act_or_f32());
  expect_shape("x", x, {-1, -1}, "[m, k]");
  expect_shape("w", w, {-1, x.shape[1]}, "[n, k] for x [m, k]");
  const int64_t m = x.shape[0], n = w.shape[0];
  expect_shape("out", out, {m, n}, "[m, n] for x [m, k] and w [n, k]");
  Tensor bias_view;
  if (bias_arg) {
    const auto& bias = rules.tensor("bias", bias_arg, rules.act());
    expect_shape("bias", bias, {n}, "[n] for w [n, k]");
    expect_disjoint("out", out, "bias", bias, false);
    bias_view = view(bias);
  }
  expect_disjoint("out", out, "x", x, false);
  expect_disjoint("out", out, "w", w, false);
  Tensor out_view = view(out);
  rules.backend.linear(in_compute_dtype(rules.backend, x), view(w), bias_view, out_view);
  return DRIFT_OK;
}

drift_status_t rms_norm(const Rules& rules, const drift_tensor_t* x_arg, const drift_tensor_t* weight_arg,
                        float eps, drift_tensor_t* out_arg) {
  const auto& x = rules.tensor("x", x_arg, rules.act_or_f32());
  const auto& weight = rules.tensor("weight", weight_arg, rules.act());
  const auto& out = rules.tensor("out", out_arg, rules.act_or_f32());
  if (x.ndim < 1 || last_dim(x) == 0) invalid("x has shape {}, expected [..., dim] with dim > 0", shape_of(x));
  expect_shape("weight", weight, {last_dim(x)}, "[dim] for x [..., dim]");
  expect_same_shape("out", out, "x", x);
  if (!(eps >= 0.0f) || !std::isfinite(eps)) invalid("eps = {} must be finite and >= 0", eps);
  expect_disjoint("out", out, "x", x, true);
  expect_disjoint("out", out, "weight", weight, false);
  Tensor out_view = view(out);
  rules.backend.rms_norm(view(x), view(weight), eps, out_view);
  return DRIFT_OK;
}

drift_status_t rope(const Rules& rules, const RopeFrequencies& freqs, drift_tensor_t* x_arg,
                    const drift_tensor_t* positions_arg) {
  const auto& x = rules.tensor("x", x_arg, rules.act());
  const auto& positions = rules.index("positions", positions_arg);
  const int64_t head_dim = static_cast<int64_t>(freqs.inv_freq.size()) * 2;
  expect_shape("x", x, {-1, -1, head_dim}, "[n, heads, head_dim] with the target model's head_dim");
  expect_shape("positions", positions, {x.shape[0]}, "[n] for x [n, heads, head_dim]");
  expect_disjoint("x", x, "positions", positions, false);
  std::vector<int32_t> pos = host_ints(rules.backend, positions);
  Tensor x_view = view(x);
  rules.backend.rope(x_view, pos, freqs.inv_freq, freqs.attention_scale);
  return DRIFT_OK;
}

drift_status_t silu_mul(const Rules& rules, const drift_tensor_t* gate_arg, const drift_tensor_t* up_arg,
                        drift_tensor_t* out_arg) {
  const auto& gate = rules.tensor("gate", gate_arg, rules.act_or_f32());
  const auto& up = rules.tensor("up", up_arg, rules.act_or_f32());
  const auto& out = rules.tensor("out", out_arg, rules.act_or_f32());
  expect_same_shape("up", up, "gate", gate);
  expect_same_shape("out", out, "gate", gate);
  expect_disjoint("out", out, "gate", gate, true);
  expect_disjoint("out", out, "up", up, true);
  Tensor out_view = view(out);
  rules.backend.silu_mul_pair(view(gate), view(up), out_view);
  return DRIFT_OK;
}

drift_status_t softmax(const Rules& rules, const drift_tensor_t* x_arg, float temperature, drift_tensor_t* out_arg) {
  const auto& x = rules.tensor("x", x_arg, rules.act_or_f32());
  const auto& out = rules.tensor("out", out_arg, rules.act_or_f32());
  if (x.ndim < 1 || last_dim(x) == 0) invalid("x has shape {}, expected [..., v] with v > 0", shape_of(x));
  expect_same_shape("out", out, "x", x);
  if (!(temperature > 0.0f) || !std::isfinite(temperature))
    invalid("temperature = {} must be finite and > 0", temperature);
  expect_disjoint("out", out, "x", x, true);
  Tensor out_view = view(out);
  rules.backend.softmax(view(x), temperature, out_view);
  return DRIFT_OK;
}

drift_status_t top_k(const Rules& rules, const drift_tensor_t* x_arg, int32_t k, drift_tensor_t* values_arg,
                     drift_tensor_t* indices_arg) {
  const auto& x = rules.tensor("x", x_arg, rules.act_or_f32());
  const auto& values = rules.tensor("values", values_arg, DTypeSet(DRIFT_DTYPE_F32));
  const auto& indices = rules.tensor("indices", indices_arg, DTypeSet(DRIFT_DTYPE_I32));
  expect_shape("x", x, {-1, -1}, "[n, v]");
  const int64_t rows = x.shape[0], v = x.shape[1];
  if (k < 1 || k > v) invalid("k = {} must be in 1..{} for x {}", k, v, shape_of(x));
  if (v > INT32_MAX) invalid("x {} has more columns than I32 indices can name", shape_of(x));
  expect_shape("values", values, {rows, k}, "[n, k]");
  expect_shape("indices", indices, {rows, k}, "[n, k]");
  expect_disjoint("values", values, "x", x, false);
  expect_disjoint("indices", indices, "x", x, false);
  expect_disjoint("indices", indices, "values", values, false);
  Tensor values_view = view(values), indices_view = view(indices);
  rules.backend.top_k(view(x), k, values_view, indices_view);
  return DRIFT_OK;
}

drift_status_t add(const Rules& rules, const drift_tensor_t* x_arg, const drift_tensor_t* y_arg,
                   drift_tensor_t* out_arg) {
  const auto& x = rules.tensor("x", x_arg, rules.act_or_f32());
  const auto& y = rules.tensor("y", y_arg, rules.act_or_f32());
  const auto& out = rules.tensor("out", out_arg, rules.act_or_f32());
  expect_same_shape("y", y, "x", x);
  expect_same_shape("out", out, "x", x);
  expect_disjoint("out", out, "x", x, true);
  expect_disjoint("out", out, "y", y, true);
  Tensor out_view = view(out);
  const bool out_is_y = out.data == y.data && tensor_numel(out) > 0;
  if (out.data != x.data && !out_is_y) rules.backend.convert(view(x), out_view);
  rules.backend.add_inplace(out_view, out_is_y ? view(x) : view(y));
  return DRIFT_OK;
}

drift_status_t concat(const Rules& rules, const drift_tensor_t* const* parts, size_t num_parts,
                      drift_tensor_t* out_arg) {
  const auto& out = rules.tensor("out", out_arg, rules.act_or_f32());
  if (num_parts == 0 || !parts) invalid("parts is NULL or num_parts is 0");
  if (out.ndim < 1) invalid("out has shape {}, expected [..., width]", shape_of(out));
  std::vector<Tensor> views;
  int64_t width = 0;
  for (size_t i = 0; i < num_parts; ++i) {
    const std::string name = fmt::format("parts[{}]", i);
    const auto& part = rules.tensor(name.c_str(), parts[i], DTypeSet(out.dtype));
    if (part.ndim != out.ndim || !std::equal(part.shape, part.shape + part.ndim - 1, out.shape))
      invalid("{} has shape {}, expected out's leading dimensions ({})", name, shape_of(part), shape_of(out));
    expect_disjoint("out", out, name.c_str(), part, false);
    width += last_dim(part);
    views.push_back(view(part, {leading_numel(part), last_dim(part)}));
  }
  if (width != last_dim(out))
    invalid("the parts are {} wide together, out {} is {}", width, shape_of(out), last_dim(out));
  std::vector<const Tensor*> pointers;
  for (const Tensor& v : views) pointers.push_back(&v);
  Tensor out_view = view(out, {leading_numel(out), last_dim(out)});
  rules.backend.join_columns(pointers, out_view);
  return DRIFT_OK;
}

// q [n, heads, head_dim] against per-page key summaries [pages, kv_heads, head_dim]: out
// [kv_heads, pages], the mean over the rows and each kv head's query heads of max(q.kmax, q.kmin).
drift_status_t page_scores(const Rules& rules, const drift_tensor_t* q_arg, const drift_tensor_t* kmax_arg,
                           const drift_tensor_t* kmin_arg, drift_tensor_t* out_arg) {
  const auto& q = rules.tensor("q", q_arg, rules.act_or_f32());
  const auto& kmax = rules.tensor("kmax", kmax_arg, DTypeSet(DRIFT_DTYPE_F32));
  const auto& kmin = rules.tensor("kmin", kmin_arg, DTypeSet(DRIFT_DTYPE_F32));
  const auto& out = rules.tensor("out", out_arg, DTypeSet(DRIFT_DTYPE_F32));
  expect_shape("q", q, {-1, -1, -1}, "[n, num_heads, head_dim]");
  const int64_t n = q.shape[0], heads = q.shape[1], head_dim = q.shape[2];
  if (n < 1 || heads < 1 || head_dim < 1)
    invalid("q has shape {}, expected [n, num_heads, head_dim] with n, num_heads and head_dim >= 1", shape_of(q));
  expect_shape("kmax", kmax, {-1, -1, head_dim}, "[num_pages, num_kv_heads, head_dim] with q's head_dim");
  expect_same_shape("kmin", kmin, "kmax", kmax);
  const int64_t num_pages = kmax.shape[0], kv_heads = kmax.shape[1];
  if (kv_heads < 1 || heads % kv_heads != 0)
    invalid("q has {} heads, not a multiple of kmax's {} kv heads ({})", heads, kv_heads, shape_of(kmax));
  expect_shape("out", out, {kv_heads, num_pages},
               "[num_kv_heads, num_pages] for kmax [num_pages, num_kv_heads, head_dim]");
  expect_disjoint("out", out, "q", q, false);
  expect_disjoint("out", out, "kmax", kmax, false);
  expect_disjoint("out", out, "kmin", kmin, false);
  if (num_pages == 0) return DRIFT_OK;
  Tensor out_view = view(out);
  rules.backend.page_scores(view(q), view(kmax), view(kmin), out_view);
  return DRIFT_OK;
}

// ---- attention ---------------------------------------------------------------------------------

struct PagedSource {
  const std::vector<LayerKV>* layers = nullptr;
  const drift_page_id_t* table = nullptr;
  int64_t table_pages = 0;
  int64_t num_tokens = 0;
};

// ABI 1.4: the plugin's own K/V in pages (args->kv_pages over pools of `pool_slots` slots): the
// pages attended in position order, each page's first position and its tokens. Returns the
// page size.
int64_t own_pages(const drift_attention_args_t* args, int64_t pool_slots, std::vector<int32_t>& table,
                  std::vector<int64_t>& first_pos, std::vector<int64_t>& page_len) {
  const int64_t block = args->kv_block_size, len = args->kv_len;
  if (block <= 0) invalid("args->kv_block_size = {} must be positive with args->kv_pages", block);
  if (pool_slots % block != 0)
    invalid("args->k holds {} slots, not whole pages of args->kv_block_size = {}", pool_slots, block);
  if (len < 0 || len > std::numeric_limits<int32_t>::max())
    invalid("args->kv_len = {} is outside 0..{}", len, std::numeric_limits<int32_t>::max());
  const int64_t needed = (len + block - 1) / block;
  if (args->num_kv_pages < needed)
    invalid("args->num_kv_pages = {} pages of {} cannot hold args->kv_len = {} positions", args->num_kv_pages, block,
            len);
  const int64_t pool_pages = pool_slots / block;
  for (int64_t b = 0; b < needed; ++b) {
    const int32_t page = args->kv_pages[b];
    if (page < 0 || page >= pool_pages)
      invalid("args->kv_pages[{}] = {} is outside args->k's {} pages of {}", b, page, pool_pages, block);
    table.push_back(page);
    first_pos.push_back(b * block);
    page_len.push_back(std::min(block, len - b * block));
  }
  return block;
}

drift_status_t attention(const Rules& rules, const std::optional<EngineKvAccess>& engine_kv,
                         const drift_attention_args_t* args) {
  if (!args) invalid("args is NULL");
  if (args->struct_size < offsetof(drift_attention_args_t, out) + sizeof(args->out))
    invalid("args->struct_size = {} is smaller than drift_attention_args_t of ABI 1.0", args->struct_size);
  const auto& q = rules.tensor("args->q", args->q, rules.act());
  const auto& out = rules.tensor("args->out", args->out, rules.act());
  expect_shape("args->q", q, {-1, -1, -1}, "[n_q, num_heads, head_dim]");
  expect_same_shape("args->out", out, "args->q", q);
  expect_disjoint("args->out", out, "args->q", q, false);
  const int64_t n_q = q.shape[0], heads = q.shape[1], head_dim = q.shape[2];
  if (heads == 0 || head_dim == 0) invalid("args->q has shape {}: no heads or head_dim 0", shape_of(q));
  const float scale = args->scale != 0.0f ? args->scale : 1.0f / std::sqrt(static_cast<float>(head_dim));
  if (!std::isfinite(scale)) invalid("args->scale = {} is not finite", args->scale);
  if (args->num_pages < 0) invalid("args->num_pages = {} is negative", args->num_pages);

  const int32_t* q_pos = nullptr;
  std::vector<int32_t> q_pos_values;
  if (args->q_positions) {
    const auto& p = rules.index("args->q_positions", args->q_positions);
    expect_shape("args->q_positions", p, {n_q}, "[n_q] for q [n_q, num_heads, head_dim]");
    q_pos_values = host_ints(rules.backend, p);
    q_pos = q_pos_values.data();
  } else if (!args->mask) {
    invalid("args->q_positions is NULL and there is no mask (causal attention needs positions)");
  }

  LayerKV dense;
  const LayerKV* layer_kv = nullptr;
  int64_t block_size = 0;
  std::vector<int32_t> table;       // pages attended, in position order
  std::vector<int64_t> first_pos;   // original position of each attended page's first slot
  std::vector<int64_t> page_len;    // tokens attended in each page (only the last may be short)
  int64_t n_kv = 0;

  if (args->k || args->v) {
    if (!args->k || !args->v) invalid("args->k and args->v must both be set (dense) or both NULL (paged)");
    if (args->num_pages > 0) invalid("args->num_pages = {} with dense args->k/v (pages are for paged KV)", args->num_pages);
    const auto& k = rules.tensor("args->k", args->k, rules.act());
    const auto& v = rules.tensor("args->v", args->v, rules.act());
    expect_shape("args->k", k, {-1, -1, head_dim}, "[n_kv, num_kv_heads, head_dim] with q's head_dim");
    expect_same_shape("args->v", v, "args->k", k);
    expect_disjoint("args->out", out, "args->k", k, false);
    expect_disjoint("args->out", out, "args->v", v, false);
    const int64_t kv_heads = k.shape[1];
    if (kv_heads == 0 || heads % kv_heads != 0)
      invalid("q has {} heads, not a multiple of args->k's {} kv heads ({})", heads, kv_heads, shape_of(k));
    dense.k = view(k);
    dense.v = view(v);
    layer_kv = &dense;
    if (DRIFT_HAS_FIELD(args, drift_attention_args_t, kv_len) && args->kv_pages) {
      block_size = own_pages(args, k.shape[0], table, first_pos, page_len);
      n_kv = args->kv_len;
    } else {
      n_kv = k.shape[0];
      block_size = std::max<int64_t>(n_kv, 1);  // the whole K/V is one page
      table = {0};
      first_pos = {0};
      page_len = {n_kv};
    }
  } else {
    if (!engine_kv || !engine_kv->kv_layers || !engine_kv->block_table || engine_kv->block_size <= 0)
      refuse(DRIFT_ERROR_NOT_SUPPORTED, "attention over the engine's paged KV is not available here");
    const std::vector<LayerKV>* layers = engine_kv->kv_layers();
    if (!layers) refuse(DRIFT_ERROR_NOT_SUPPORTED, "the engine has no paged KV to attend to");
    if (args->layer < 0 || args->layer >= static_cast<int64_t>(layers->size()))
      invalid("args->layer = {} is outside the model's {} layers", args->layer, layers->size());
    engine_kv->refuse_windowed(args->layer);
    layer_kv = &(*layers)[args->layer];
    block_size = engine_kv->block_size;
    const Tensor& cache_k = layer_kv->k;
    if (cache_k.ndim() != 3 || cache_k.dim(2) != head_dim)
      invalid("args->q has head_dim {}, the engine's KV of layer {} is {}", head_dim, args->layer,
              cache_k.shape_string());
    const int64_t kv_heads = cache_k.dim(1);
    if (kv_heads == 0 || heads % kv_heads != 0)
      invalid("args->q has {} heads, not a multiple of the engine's {} kv heads", heads, kv_heads);
    const int64_t pool_pages = cache_k.dim(0) / block_size;

    const drift_page_id_t* bt = nullptr;
    int64_t bt_pages = 0, num_tokens = 0;
    const drift_status_t status = engine_kv->block_table(args->seq_id, &bt, &bt_pages, &num_tokens);
    if (status != DRIFT_OK) return status;
    DRIFT_CHECK(num_tokens <= bt_pages * block_size, "sequence {} holds {} tokens in {} pages of {}",
                args->seq_id, num_tokens, bt_pages, block_size);
    auto tokens_in_block = [&](int64_t b) {
      return std::clamp<int64_t>(num_tokens - b * block_size, 0, block_size);
    };
    std::vector<int64_t> blocks;  // block-table indices attended, ascending
    if (args->num_pages == 0) {
      for (int64_t b = 0; b * block_size < num_tokens; ++b) blocks.push_back(b);
    } else {
      if (!args->pages) invalid("args->pages is NULL with args->num_pages = {}", args->num_pages);
      std::unordered_map<drift_page_id_t, int64_t> block_of;
      for (int64_t b = 0; b < bt_pages; ++b) block_of.emplace(bt[b], b);
      for (int32_t i = 0; i < args->num_pages; ++i) {
        auto it = block_of.find(args->pages[i]);
        if (it == block_of.end())
          invalid("args->pages[{}] = {} is not in sequence {}'s block table", i, args->pages[i], args->seq_id);
        blocks.push_back(it->second);
      }
      std::sort(blocks.begin(), blocks.end());
      if (std::adjacent_find(blocks.begin(), blocks.end()) != blocks.end())
        invalid("args->pages lists page {} twice", bt[*std::adjacent_find(blocks.begin(), blocks.end())]);
    }
    for (int64_t b : blocks) {
      const int64_t len = tokens_in_block(b);
      if (len == 0) continue;  // a page not yet written: nothing to attend
      DRIFT_CHECK(bt[b] >= 0 && bt[b] < pool_pages, "page {} of sequence {} is outside the KV pool of {} pages",
                  bt[b], args->seq_id, pool_pages);
      table.push_back(bt[b]);
      first_pos.push_back(b * block_size);
      page_len.push_back(len);
      n_kv += len;
    }
  }

  AttentionMetadata meta;
  meta.token_seq.assign(n_q, 0);
  meta.block_tables = {table};
  meta.kv_len.resize(n_q);
  if (args->mask) {
    // The mask decides: every query spans all n_kv positions; the first `offset` are visible to
    // all (1.2's mask_offset), bit j of the rest = mask[i, j].
    const int64_t offset = DRIFT_HAS_FIELD(args, drift_attention_args_t, mask_offset) ? args->mask_offset : 0;
    if (offset < 0 || offset > n_kv)
      invalid("args->mask_offset = {} is outside 0..{} (the attended positions)", offset, n_kv);
    const int64_t width = n_kv - offset;
    meta.mask_words = std::max<int64_t>(1, (width + 63) / 64);
    meta.mask_start.assign(n_q, static_cast<int32_t>(offset));
    meta.mask.assign(n_q * meta.mask_words, 0);
    for (int64_t i = 0; i < n_q; ++i) {
      meta.kv_len[i] = static_cast<int32_t>(n_kv);
      for (int64_t j = 0; j < width; ++j)
        if (args->mask[i * width + j]) meta.mask[i * meta.mask_words + j / 64] |= uint64_t{1} << (j % 64);
    }
  } else {
    // Causal by position: the attended positions <= q_positions[i]. Pages are in position
    // order and only the last may be short, so that is a prefix of the attended positions.
    for (int64_t i = 0; i < n_q; ++i) {
      int64_t len = 0;
      for (size_t p = 0; p < table.size(); ++p)
        len += std::clamp<int64_t>(static_cast<int64_t>(q_pos[i]) + 1 - first_pos[p], 0, page_len[p]);
      meta.kv_len[i] = static_cast<int32_t>(len);
    }
  }
  if (n_q == 0) return DRIFT_OK;
  Tensor out_view = view(out);
  rules.backend.attention(view(q), *layer_kv, meta, scale, block_size, out_view);
  return DRIFT_OK;
}

// ---- tensor memory and checkpoints -----------------------------------------------------------

// Tensors the services allocated on a device for plugins (tensor_alloc, load_safetensors), by
// address, until tensor_free. The plugin context already refuses to free what it was not given.
using DeviceTensors = std::unordered_map<void*, Tensor>;

drift_status_t alloc(const Rules& rules, DeviceTensors& live, int32_t dtype, std::span<const int64_t> shape,
                     drift_tensor_t* out) {
  if (drift_dtype_size(dtype) == 0) invalid("unknown dtype {}", dtype);
  if (rules.device == DRIFT_DEVICE_CPU) return alloc_host_tensor(dtype, shape, out);
  if (!out || shape.size() > DRIFT_MAX_DIMS) invalid("out is NULL or ndim {} exceeds {}", shape.size(), DRIFT_MAX_DIMS);
  for (int64_t d : shape)
    if (d < 0) invalid("negative dimension in shape");
  Tensor t;
  try {
    t = rules.backend.alloc({shape.begin(), shape.end()}, dtype_of(dtype));
  } catch (const std::bad_alloc&) {
    refuse(DRIFT_ERROR_OUT_OF_MEMORY, "no device memory for a {} tensor of shape [{}]", dtype_label(dtype),
           fmt::join(shape, ", "));
  }
  *out = describe_tensor(t);
  live.emplace(t.data(), std::move(t));
  return DRIFT_OK;
}

void free_tensor(const Rules& rules, DeviceTensors& live, drift_tensor_t* t) {
  if (rules.device == DRIFT_DEVICE_CPU) {
    std::free(t->data);
    return;
  }
  live.erase(t->data);
}

drift_status_t copy(const Rules& rules, const drift_tensor_t* src, drift_tensor_t* dst) {
  if (!src || !dst) invalid("{} is NULL", src ? "dst" : "src");
  if (src->dtype != dst->dtype || drift_dtype_size(src->dtype) == 0)
    invalid("src has dtype {}, dst {}: they must be the same known dtype", dtype_label(src->dtype),
            dtype_label(dst->dtype));
  if (src->ndim < 0 || src->ndim > DRIFT_MAX_DIMS || dst->ndim < 0 || dst->ndim > DRIFT_MAX_DIMS)
    invalid("src ndim {} / dst ndim {} outside 0..{}", src->ndim, dst->ndim, DRIFT_MAX_DIMS);
  if (tensor_numel(*src) != tensor_numel(*dst))
    invalid("src {} and dst {} hold different numbers of elements", shape_of(*src), shape_of(*dst));
  for (const drift_tensor_t* t : {src, static_cast<const drift_tensor_t*>(dst)})
    if (t->device != DRIFT_DEVICE_CPU && t->device != rules.device)
      refuse(DRIFT_ERROR_NOT_SUPPORTED, "this backend copies between the CPU and device {} only ({} is on device {})",
             rules.device, t == src ? "src" : "dst", t->device);
  if (!contiguous(*src) || !contiguous(*dst))
    refuse(DRIFT_ERROR_NOT_SUPPORTED, "strided copies are not supported (src {}, dst {})", shape_of(*src),
           shape_of(*dst));
  const size_t bytes = static_cast<size_t>(tensor_numel(*src)) * drift_dtype_size(src->dtype);
  if (bytes == 0) return DRIFT_OK;
  if (!src->data || !dst->data) invalid("{} has NULL data", src->data ? "dst" : "src");
  if (src->device == DRIFT_DEVICE_CPU && dst->device == DRIFT_DEVICE_CPU) {
    std::memmove(dst->data, src->data, bytes);  // overlapping host buffers are fine
  } else {
    Tensor to = view(*dst);
    rules.backend.copy(view(*src), to);
  }
  return DRIFT_OK;
}

// Each tensor converted to fp32 on the host, then to the backend's compute dtype on its device;
// integer and bool tensors to I32.
drift_status_t load(const Rules& rules, DeviceTensors& live, const std::string& path,
                    std::span<const char* const> names, drift_tensor_t* out) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) refuse(DRIFT_ERROR_NOT_FOUND, "checkpoint '{}' does not exist", path);
  SafetensorsCheckpoint checkpoint(path);
  for (size_t i = 0; i < names.size(); ++i) {
    if (!names[i]) invalid("names[{}] is NULL", i);
    if (!checkpoint.contains(names[i]))
      refuse(DRIFT_ERROR_NOT_FOUND, "tensor '{}' not found in {}", names[i], checkpoint.description());
    const TensorInfo& info = checkpoint.get(names[i]);
    if (info.shape.size() > DRIFT_MAX_DIMS)
      refuse(DRIFT_ERROR_NOT_SUPPORTED, "tensor '{}' has {} dimensions (at most {})", names[i], info.shape.size(),
             DRIFT_MAX_DIMS);
  }
  // All or nothing: on failure free what was allocated so far and leave `out` zeroed.
  size_t done = 0;
  try {
    for (; done < names.size(); ++done) {
      const TensorInfo& info = checkpoint.get(names[done]);
      const bool integer = is_integer_dtype(info.dtype);
      Tensor host = integer ? to_i32(info) : to_f32(info);
      drift_tensor_t t{};
      if (rules.device == DRIFT_DEVICE_CPU) {
        const drift_status_t status = alloc_host_tensor(to_drift_dtype(host.dtype()), host.shape(), &t);
        if (status != DRIFT_OK) refuse(status, "cannot allocate tensor '{}' {}", names[done], host.shape_string());
        if (host.nbytes() > 0) std::memcpy(t.data, host.data(), host.nbytes());
      } else {
        Tensor device = integer ? rules.backend.alloc(host.shape(), DType::I32) : rules.backend.upload(host);
        if (integer && host.nbytes() > 0) rules.backend.copy(host, device);
        t = describe_tensor(device);
        live.emplace(device.data(), std::move(device));
      }
      out[done] = t;
    }
  } catch (...) {
    for (size_t i = 0; i < done; ++i) {
      free_tensor(rules, live, &out[i]);
      out[i] = drift_tensor_t{};
    }
    throw;
  }
  return DRIFT_OK;
}

drift_status_t key_summary(const Rules& rules, const EngineKvAccess& kv, drift_seq_id_t seq, int32_t layer,
                           const drift_page_id_t* pages, int32_t num_pages, drift_tensor_t* kmax_arg,
                           drift_tensor_t* kmin_arg) {
  const std::vector<LayerKV>* layers = kv.kv_layers ? kv.kv_layers() : nullptr;
  if (!layers || !kv.block_table || kv.block_size <= 0)
    refuse(DRIFT_ERROR_NOT_SUPPORTED, "the engine has no paged KV to summarise");
  if (layer < 0 || layer >= static_cast<int32_t>(layers->size()))
    invalid("layer = {} is outside the model's {} layers", layer, layers->size());
  if (num_pages < 0 || (num_pages > 0 && !pages)) invalid("pages is NULL or num_pages = {} is negative", num_pages);
  kv.refuse_windowed(layer);
  const Tensor& keys = (*layers)[layer].k;  // [slots, kv_heads, head_dim]
  const int64_t kv_heads = keys.dim(1), head_dim = keys.dim(2);
  const auto& kmax = rules.tensor("kmax", kmax_arg, DTypeSet(DRIFT_DTYPE_F32));
  const auto& kmin = rules.tensor("kmin", kmin_arg, DTypeSet(DRIFT_DTYPE_F32));
  expect_shape("kmax", kmax, {num_pages, kv_heads, head_dim}, "[num_pages, num_kv_heads, head_dim]");
  expect_shape("kmin", kmin, {num_pages, kv_heads, head_dim}, "[num_pages, num_kv_heads, head_dim]");
  expect_disjoint("kmin", kmin, "kmax", kmax, false);
  const std::vector<int32_t> filled = filled_slots(kv, seq, pages, num_pages);
  Tensor hi = view(kmax), lo = view(kmin);
  rules.backend.key_summary(keys, std::span<const int32_t>(pages, num_pages), filled, kv.block_size, hi, lo);
  return DRIFT_OK;
}

void install(HostCallbacks& c, Backend& backend, const ModelConfig& model, const RopeFrequencies& rope,
             std::optional<EngineKvAccess> kv) {
  if (model.head_dim > 0 && static_cast<int64_t>(rope.inv_freq.size()) * 2 != model.head_dim)
    fail("rope frequencies for head_dim {} do not match the model's head_dim {}", rope.inv_freq.size() * 2,
         model.head_dim);
  using T = drift_tensor_t;
  auto rules = std::make_shared<Rules>(
      Rules{backend, to_drift_device(backend.device()), to_drift_dtype(backend.compute_dtype())});
  auto live = std::make_shared<DeviceTensors>();
  c.tensor_alloc = [rules, live](int32_t dtype, std::span<const int64_t> shape, T* out) {
    return guarded("tensor_alloc", [&] { return alloc(*rules, *live, dtype, shape, out); });
  };
  c.tensor_free = [rules, live](T* t) { free_tensor(*rules, *live, t); };
  c.tensor_copy = [rules](void*, const T* src, T* dst) {
    return guarded("tensor_copy", [&] { return copy(*rules, src, dst); });
  };
  c.load_safetensors = [rules, live](const std::string& path, std::span<const char* const> names, T* out) {
    return guarded("load_safetensors", [&] { return load(*rules, *live, path, names, out); });
  };
  c.embedding = [rules](void*, const T* table, const T* ids, T* out) {
    return guarded("embedding", [&] { return embedding(*rules, table, ids, out); });
  };
  c.gemm = [rules](void*, const T* x, const T* w, const T* bias, T* out) {
    return guarded("gemm", [&] { return gemm(*rules, x, w, bias, out); });
  };
  c.rms_norm = [rules](void*, const T* x, const T* weight, float eps, T* out) {
    return guarded("rms_norm", [&] { return rms_norm(*rules, x, weight, eps, out); });
  };
  c.rope = [rules, freqs = rope](void*, T* x, const T* positions) {
    return guarded("rope", [&] { return drift::rope(*rules, freqs, x, positions); });
  };
  if (kv)
    c.page_key_summary = [rules, kv = *kv](drift_seq_id_t seq, int32_t layer, const drift_page_id_t* pages, int32_t n,
                                           T* kmax, T* kmin) {
      return guarded("page_key_summary", [&] { return key_summary(*rules, kv, seq, layer, pages, n, kmax, kmin); });
    };
  c.attention = [rules, kv = std::move(kv)](void*, const drift_attention_args_t* args) {
    return guarded("attention", [&] { return attention(*rules, kv, args); });
  };
  c.silu_mul = [rules](void*, const T* gate, const T* up, T* out) {
    return guarded("silu_mul", [&] { return silu_mul(*rules, gate, up, out); });
  };
  c.softmax = [rules](void*, const T* x, float temperature, T* out) {
    return guarded("softmax", [&] { return softmax(*rules, x, temperature, out); });
  };
  c.top_k = [rules](void*, const T* x, int32_t k, T* values, T* indices) {
    return guarded("top_k", [&] { return top_k(*rules, x, k, values, indices); });
  };
  c.add = [rules](void*, const T* x, const T* y, T* out) {
    return guarded("add", [&] { return drift::add(*rules, x, y, out); });
  };
  c.concat = [rules](void*, const T* const* parts, size_t n, T* out) {
    return guarded("concat", [&] { return drift::concat(*rules, parts, n, out); });
  };
  c.page_scores = [rules](void*, const T* q, const T* kmax, const T* kmin, T* out) {
    return guarded("page_scores", [&] { return drift::page_scores(*rules, q, kmax, kmin, out); });
  };
}

}  // namespace

void EngineKvAccess::refuse_windowed(int64_t layer) const {
  if (layer >= 0 && layer < static_cast<int64_t>(windowed_layers.size()) && windowed_layers[layer])
    tensor_checks::refuse(DRIFT_ERROR_NOT_SUPPORTED,
                          "layer {} keeps its KV in the sliding-window page group, which the engine's block tables do "
                          "not address",
                          layer);
}

void install_compute_callbacks(HostCallbacks& callbacks, Backend& backend, const ModelConfig& model,
                               const RopeFrequencies& rope) {
  install(callbacks, backend, model, rope, std::nullopt);
}

void install_compute_callbacks(HostCallbacks& callbacks, Backend& backend, const ModelConfig& model,
                               const RopeFrequencies& rope, EngineKvAccess kv) {
  install(callbacks, backend, model, rope, std::move(kv));
}

}  // namespace drift
