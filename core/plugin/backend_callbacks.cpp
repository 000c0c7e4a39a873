#include "core/plugin/backend_callbacks.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
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

// Zero-copy views for the Backend methods.
std::vector<int64_t> dims(const drift_tensor_t& t) { return {t.shape, t.shape + t.ndim}; }
Tensor view(const drift_tensor_t& t, std::vector<int64_t> shape) {
  return Tensor::wrap(t.data, std::move(shape), t.dtype == DRIFT_DTYPE_I32 ? DType::I32 : DType::F32,
                      Device::CPU, nullptr);
}
Tensor view(const drift_tensor_t& t) { return view(t, dims(t)); }

float* f32(const drift_tensor_t& t) { return static_cast<float*>(t.data); }
const int32_t* i32(const drift_tensor_t& t) { return static_cast<const int32_t*>(t.data); }

// ---- the primitives --------------------------------------------------------------------------

drift_status_t embedding(Backend& backend, const drift_tensor_t* table_arg, const drift_tensor_t* ids_arg,
                         drift_tensor_t* out_arg) {
  const auto& table = checked("table", table_arg, DRIFT_DTYPE_F32);
  const auto& ids = checked("ids", ids_arg, DRIFT_DTYPE_I32);
  const auto& out = checked("out", out_arg, DRIFT_DTYPE_F32);
  expect_shape("table", table, {-1, -1}, "[vocab, dim]");
  expect_shape("ids", ids, {-1}, "[n]");
  const int64_t vocab = table.shape[0], dim = table.shape[1], n = ids.shape[0];
  expect_shape("out", out, {n, dim}, "[n, dim] for ids [n] and table [vocab, dim]");
  expect_disjoint("out", out, "table", table, false);
  expect_disjoint("out", out, "ids", ids, false);
  std::vector<int32_t> id_list(i32(ids), i32(ids) + n);
  for (int64_t i = 0; i < n; ++i)
    if (id_list[i] < 0 || id_list[i] >= vocab)
      invalid("ids[{}] = {} is outside the table's {} rows", i, id_list[i], vocab);
  Tensor out_view = view(out);
  backend.embedding(view(table), id_list, out_view);
  return DRIFT_OK;
}

drift_status_t gemm(Backend& backend, const drift_tensor_t* x_arg, const drift_tensor_t* w_arg,
                    const drift_tensor_t* bias_arg, drift_tensor_t* out_arg) {
  const auto& x = checked("x", x_arg, DRIFT_DTYPE_F32);
  const auto& w = checked("w", w_arg, DRIFT_DTYPE_F32);
  const auto& out = checked("out", out_arg, DRIFT_DTYPE_F32);
  expect_shape("x", x, {-1, -1}, "[m, k]");
  expect_shape("w", w, {-1, x.shape[1]}, "[n, k] for x [m, k]");
  const int64_t m = x.shape[0], n = w.shape[0];
  expect_shape("out", out, {m, n}, "[m, n] for x [m, k] and w [n, k]");
  Tensor bias_view;
  if (bias_arg) {
    const auto& bias = checked("bias", bias_arg, DRIFT_DTYPE_F32);
    expect_shape("bias", bias, {n}, "[n] for w [n, k]");
    expect_disjoint("out", out, "bias", bias, false);
    bias_view = view(bias);
  }
  expect_disjoint("out", out, "x", x, false);
  expect_disjoint("out", out, "w", w, false);
  Tensor out_view = view(out);
  backend.linear(view(x), view(w), bias_view, out_view);
  return DRIFT_OK;
}

drift_status_t rms_norm(Backend& backend, const drift_tensor_t* x_arg, const drift_tensor_t* weight_arg,
                        float eps, drift_tensor_t* out_arg) {
  const auto& x = checked("x", x_arg, DRIFT_DTYPE_F32);
  const auto& weight = checked("weight", weight_arg, DRIFT_DTYPE_F32);
  const auto& out = checked("out", out_arg, DRIFT_DTYPE_F32);
  if (x.ndim < 1 || last_dim(x) == 0) invalid("x has shape {}, expected [..., dim] with dim > 0", shape_of(x));
  expect_shape("weight", weight, {last_dim(x)}, "[dim] for x [..., dim]");
  expect_same_shape("out", out, "x", x);
  if (!(eps >= 0.0f) || !std::isfinite(eps)) invalid("eps = {} must be finite and >= 0", eps);
  expect_disjoint("out", out, "x", x, true);
  expect_disjoint("out", out, "weight", weight, false);
  Tensor out_view = view(out);
  backend.rms_norm(view(x), view(weight), eps, out_view);
  return DRIFT_OK;
}

drift_status_t rope(Backend& backend, const RopeFrequencies& freqs, drift_tensor_t* x_arg,
                    const drift_tensor_t* positions_arg) {
  const auto& x = checked("x", x_arg, DRIFT_DTYPE_F32);
  const auto& positions = checked("positions", positions_arg, DRIFT_DTYPE_I32);
  const int64_t head_dim = static_cast<int64_t>(freqs.inv_freq.size()) * 2;
  expect_shape("x", x, {-1, -1, head_dim}, "[n, heads, head_dim] with the target model's head_dim");
  expect_shape("positions", positions, {x.shape[0]}, "[n] for x [n, heads, head_dim]");
  expect_disjoint("x", x, "positions", positions, false);
  std::vector<int32_t> pos(i32(positions), i32(positions) + positions.shape[0]);
  Tensor x_view = view(x);
  backend.rope(x_view, pos, freqs.inv_freq, freqs.attention_scale);
  return DRIFT_OK;
}

drift_status_t silu_mul(const drift_tensor_t* gate_arg, const drift_tensor_t* up_arg, drift_tensor_t* out_arg) {
  const auto& gate = checked("gate", gate_arg, DRIFT_DTYPE_F32);
  const auto& up = checked("up", up_arg, DRIFT_DTYPE_F32);
  const auto& out = checked("out", out_arg, DRIFT_DTYPE_F32);
  expect_same_shape("up", up, "gate", gate);
  expect_same_shape("out", out, "gate", gate);
  expect_disjoint("out", out, "gate", gate, true);
  expect_disjoint("out", out, "up", up, true);
  // Backend::silu_mul wants a fused [rows, 2 * inter] gate|up; separate tensors are combined
  // elementwise here with the kernel's formula (kernels/cpu/activation.cpp), in place safely.
  const float* g = f32(gate);
  const float* u = f32(up);
  float* o = f32(out);
  const int64_t n = tensor_numel(gate);
  for (int64_t i = 0; i < n; ++i) o[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
  return DRIFT_OK;
}

drift_status_t softmax(const drift_tensor_t* x_arg, float temperature, drift_tensor_t* out_arg) {
  const auto& x = checked("x", x_arg, DRIFT_DTYPE_F32);
  const auto& out = checked("out", out_arg, DRIFT_DTYPE_F32);
  if (x.ndim < 1 || last_dim(x) == 0) invalid("x has shape {}, expected [..., v] with v > 0", shape_of(x));
  expect_same_shape("out", out, "x", x);
  if (!(temperature > 0.0f) || !std::isfinite(temperature))
    invalid("temperature = {} must be finite and > 0", temperature);
  expect_disjoint("out", out, "x", x, true);
  const int64_t n = tensor_numel(x);
  const float* in = f32(x);
  float* o = f32(out);
  for (int64_t i = 0; i < n; ++i) o[i] = in[i] / temperature;
  cpu::softmax(o, leading_numel(x), last_dim(x));
  return DRIFT_OK;
}

drift_status_t top_k(const drift_tensor_t* x_arg, int32_t k, drift_tensor_t* values_arg,
                     drift_tensor_t* indices_arg) {
  const auto& x = checked("x", x_arg, DRIFT_DTYPE_F32);
  const auto& values = checked("values", values_arg, DRIFT_DTYPE_F32);
  const auto& indices = checked("indices", indices_arg, DRIFT_DTYPE_I32);
  expect_shape("x", x, {-1, -1}, "[n, v]");
  const int64_t rows = x.shape[0], v = x.shape[1];
  if (k < 1 || k > v) invalid("k = {} must be in 1..{} for x {}", k, v, shape_of(x));
  if (v > INT32_MAX) invalid("x {} has more columns than I32 indices can name", shape_of(x));
  expect_shape("values", values, {rows, k}, "[n, k]");
  expect_shape("indices", indices, {rows, k}, "[n, k]");
  expect_disjoint("values", values, "x", x, false);
  expect_disjoint("indices", indices, "x", x, false);
  expect_disjoint("indices", indices, "values", values, false);
  // Descending by value, ties by lowest index; NaN ranks below every number (a total order,
  // as std::partial_sort requires).
  std::vector<int32_t> order(v);
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = f32(x) + r * v;
    std::iota(order.begin(), order.end(), 0);
    auto before = [row](int32_t a, int32_t b) {
      const float va = row[a], vb = row[b];
      const bool na = std::isnan(va), nb = std::isnan(vb);
      if (na != nb) return nb;
      if (!na && va != vb) return va > vb;
      return a < b;
    };
    std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
    for (int32_t j = 0; j < k; ++j) {
      f32(values)[r * k + j] = row[order[j]];
      static_cast<int32_t*>(indices.data)[r * k + j] = order[j];
    }
  }
  return DRIFT_OK;
}

// ---- attention ---------------------------------------------------------------------------------

struct PagedSource {
  const std::vector<LayerKV>* layers = nullptr;
  const drift_page_id_t* table = nullptr;
  int64_t table_pages = 0;
  int64_t num_tokens = 0;
};

drift_status_t attention(Backend& backend, const std::optional<EngineKvAccess>& engine_kv,
                         const drift_attention_args_t* args) {
  if (!args) invalid("args is NULL");
  if (args->struct_size < offsetof(drift_attention_args_t, out) + sizeof(args->out))
    invalid("args->struct_size = {} is smaller than drift_attention_args_t of ABI 1.0", args->struct_size);
  const auto& q = checked("args->q", args->q, DRIFT_DTYPE_F32);
  const auto& out = checked("args->out", args->out, DRIFT_DTYPE_F32);
  expect_shape("args->q", q, {-1, -1, -1}, "[n_q, num_heads, head_dim]");
  expect_same_shape("args->out", out, "args->q", q);
  expect_disjoint("args->out", out, "args->q", q, false);
  const int64_t n_q = q.shape[0], heads = q.shape[1], head_dim = q.shape[2];
  if (heads == 0 || head_dim == 0) invalid("args->q has shape {}: no heads or head_dim 0", shape_of(q));
  const float scale = args->scale != 0.0f ? args->scale : 1.0f / std::sqrt(static_cast<float>(head_dim));
  if (!std::isfinite(scale)) invalid("args->scale = {} is not finite", args->scale);
  if (args->num_pages < 0) invalid("args->num_pages = {} is negative", args->num_pages);

  const int32_t* q_pos = nullptr;
  if (args->q_positions) {
    const auto& p = checked("args->q_positions", args->q_positions, DRIFT_DTYPE_I32);
    expect_shape("args->q_positions", p, {n_q}, "[n_q] for q [n_q, num_heads, head_dim]");
    q_pos = i32(p);
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
    const auto& k = checked("args->k", args->k, DRIFT_DTYPE_F32);
    const auto& v = checked("args->v", args->v, DRIFT_DTYPE_F32);
    expect_shape("args->k", k, {-1, -1, head_dim}, "[n_kv, num_kv_heads, head_dim] with q's head_dim");
    expect_same_shape("args->v", v, "args->k", k);
    expect_disjoint("args->out", out, "args->k", k, false);
    expect_disjoint("args->out", out, "args->v", v, false);
    n_kv = k.shape[0];
    const int64_t kv_heads = k.shape[1];
    if (kv_heads == 0 || heads % kv_heads != 0)
      invalid("q has {} heads, not a multiple of args->k's {} kv heads ({})", heads, kv_heads, shape_of(k));
    dense.k = view(k);
    dense.v = view(v);
    layer_kv = &dense;
    block_size = std::max<int64_t>(n_kv, 1);  // the whole K/V is one page
    table = {0};
    first_pos = {0};
    page_len = {n_kv};
  } else {
    if (!engine_kv || !engine_kv->kv_layers || !engine_kv->block_table || engine_kv->block_size <= 0)
      refuse(DRIFT_ERROR_NOT_SUPPORTED, "attention over the engine's paged KV is not available here");
    const std::vector<LayerKV>* layers = engine_kv->kv_layers();
    if (!layers) refuse(DRIFT_ERROR_NOT_SUPPORTED, "the engine has no paged KV to attend to");
    if (args->layer < 0 || args->layer >= static_cast<int64_t>(layers->size()))
      invalid("args->layer = {} is outside the model's {} layers", args->layer, layers->size());
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
    // The mask alone decides: every query spans all n_kv positions, bit j = mask[i, j].
    meta.mask_words = std::max<int64_t>(1, (n_kv + 63) / 64);
    meta.mask_start.assign(n_q, 0);
    meta.mask.assign(n_q * meta.mask_words, 0);
    for (int64_t i = 0; i < n_q; ++i) {
      meta.kv_len[i] = static_cast<int32_t>(n_kv);
      for (int64_t j = 0; j < n_kv; ++j)
        if (args->mask[i * n_kv + j]) meta.mask[i * meta.mask_words + j / 64] |= uint64_t{1} << (j % 64);
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
  backend.attention(view(q), *layer_kv, meta, scale, block_size, out_view);
  return DRIFT_OK;
}

// ---- tensor memory and checkpoints -----------------------------------------------------------

drift_status_t copy(const drift_tensor_t* src, drift_tensor_t* dst) {
  if (!src || !dst) invalid("{} is NULL", src ? "dst" : "src");
  if (src->dtype != dst->dtype || drift_dtype_size(src->dtype) == 0)
    invalid("src has dtype {}, dst {}: they must be the same known dtype", dtype_label(src->dtype),
            dtype_label(dst->dtype));
  if (src->ndim < 0 || src->ndim > DRIFT_MAX_DIMS || dst->ndim < 0 || dst->ndim > DRIFT_MAX_DIMS)
    invalid("src ndim {} / dst ndim {} outside 0..{}", src->ndim, dst->ndim, DRIFT_MAX_DIMS);
  if (tensor_numel(*src) != tensor_numel(*dst))
    invalid("src {} and dst {} hold different numbers of elements", shape_of(*src), shape_of(*dst));
  if (src->device != DRIFT_DEVICE_CPU || dst->device != DRIFT_DEVICE_CPU)
    refuse(DRIFT_ERROR_NOT_SUPPORTED, "the CPU backend copies CPU tensors only (src device {}, dst device {})",
           src->device, dst->device);
  if (!contiguous(*src) || !contiguous(*dst))
    refuse(DRIFT_ERROR_NOT_SUPPORTED, "strided copies are not supported (src {}, dst {})", shape_of(*src),
           shape_of(*dst));
  const size_t bytes = static_cast<size_t>(tensor_numel(*src)) * drift_dtype_size(src->dtype);
  if (bytes > 0 && (!src->data || !dst->data)) invalid("{} has NULL data", src->data ? "dst" : "src");
  if (bytes > 0) std::memmove(dst->data, src->data, bytes);
  return DRIFT_OK;
}

drift_status_t load(const std::string& path, std::span<const char* const> names, drift_tensor_t* out) {
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
      Tensor host = to_f32(checkpoint.get(names[done]));
      drift_tensor_t t{};
      const drift_status_t status = alloc_host_tensor(DRIFT_DTYPE_F32, host.shape(), &t);
      if (status != DRIFT_OK) refuse(status, "cannot allocate tensor '{}' {}", names[done], host.shape_string());
      if (host.nbytes() > 0) std::memcpy(t.data, host.data(), host.nbytes());
      out[done] = t;
    }
  } catch (...) {
    for (size_t i = 0; i < done; ++i) {
      std::free(out[i].data);
      out[i] = drift_tensor_t{};
    }
    throw;
  }
  return DRIFT_OK;
}

void install_not_supported(HostCallbacks& c, const std::string& backend_name) {
  spdlog::debug("host services: compute primitives are not implemented for backend '{}'", backend_name);
  constexpr drift_status_t no = DRIFT_ERROR_NOT_SUPPORTED;
  using T = drift_tensor_t;
  c.tensor_alloc = [](int32_t, std::span<const int64_t>, T*) { return no; };
  c.tensor_free = [](T*) {};
  c.tensor_copy = [](void*, const T*, T*) { return no; };
  c.load_safetensors = [](const std::string&, std::span<const char* const>, T*) { return no; };
  c.embedding = [](void*, const T*, const T*, T*) { return no; };
  c.gemm = [](void*, const T*, const T*, const T*, T*) { return no; };
  c.rms_norm = [](void*, const T*, const T*, float, T*) { return no; };
  c.rope = [](void*, T*, const T*) { return no; };
  c.attention = [](void*, const drift_attention_args_t*) { return no; };
  c.silu_mul = [](void*, const T*, const T*, T*) { return no; };
  c.softmax = [](void*, const T*, float, T*) { return no; };
  c.top_k = [](void*, const T*, int32_t, T*, T*) { return no; };
}

void install(HostCallbacks& c, Backend& backend, const ModelConfig& model, const RopeFrequencies& rope,
             std::optional<EngineKvAccess> kv) {
  if (backend.device() != Device::CPU || backend.compute_dtype() != DType::F32) {
    install_not_supported(c, backend.name());
    return;
  }
  if (model.head_dim > 0 && static_cast<int64_t>(rope.inv_freq.size()) * 2 != model.head_dim)
    fail("rope frequencies for head_dim {} do not match the model's head_dim {}", rope.inv_freq.size() * 2,
         model.head_dim);
  using T = drift_tensor_t;
  Backend* b = &backend;
  c.tensor_alloc = [](int32_t dtype, std::span<const int64_t> shape, T* out) {
    return guarded("tensor_alloc", [&] {
      if (drift_dtype_size(dtype) == 0) invalid("unknown dtype {}", dtype);
      return alloc_host_tensor(dtype, shape, out);
    });
  };
  c.tensor_free = [](T* t) { std::free(t->data); };
  c.tensor_copy = [](void*, const T* src, T* dst) { return guarded("tensor_copy", [&] { return copy(src, dst); }); };
  c.load_safetensors = [](const std::string& path, std::span<const char* const> names, T* out) {
    return guarded("load_safetensors", [&] { return load(path, names, out); });
  };
  c.embedding = [b](void*, const T* table, const T* ids, T* out) {
    return guarded("embedding", [&] { return embedding(*b, table, ids, out); });
  };
  c.gemm = [b](void*, const T* x, const T* w, const T* bias, T* out) {
    return guarded("gemm", [&] { return gemm(*b, x, w, bias, out); });
  };
  c.rms_norm = [b](void*, const T* x, const T* weight, float eps, T* out) {
    return guarded("rms_norm", [&] { return rms_norm(*b, x, weight, eps, out); });
  };
  c.rope = [b, freqs = rope](void*, T* x, const T* positions) {
    return guarded("rope", [&] { return drift::rope(*b, freqs, x, positions); });
  };
  if (kv)
    c.page_key_summary = [kv = *kv](drift_seq_id_t seq, int32_t layer, const drift_page_id_t* pages, int32_t n,
                                    T* kmax, T* kmin) {
      return guarded("page_key_summary", [&] { return cpu_page_key_summary(kv, seq, layer, pages, n, kmax, kmin); });
    };
  c.attention = [b, kv = std::move(kv)](void*, const drift_attention_args_t* args) {
    return guarded("attention", [&] { return attention(*b, kv, args); });
  };
  c.silu_mul = [](void*, const T* gate, const T* up, T* out) {
    return guarded("silu_mul", [&] { return silu_mul(gate, up, out); });
  };
  c.softmax = [](void*, const T* x, float temperature, T* out) {
    return guarded("softmax", [&] { return softmax(x, temperature, out); });
  };
  c.top_k = [](void*, const T* x, int32_t k, T* values, T* indices) {
    return guarded("top_k", [&] { return top_k(x, k, values, indices); });
  };
}

}  // namespace

void install_compute_callbacks(HostCallbacks& callbacks, Backend& backend, const ModelConfig& model,
                               const RopeFrequencies& rope) {
  install(callbacks, backend, model, rope, std::nullopt);
}

void install_compute_callbacks(HostCallbacks& callbacks, Backend& backend, const ModelConfig& model,
                               const RopeFrequencies& rope, EngineKvAccess kv) {
  install(callbacks, backend, model, rope, std::move(kv));
}

}  // namespace drift
