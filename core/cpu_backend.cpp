#include "core/cpu_backend.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "kernels/cpu/activation.h"
#include "kernels/cpu/linear.h"
#include "kernels/cpu/moe.h"
#include "kernels/cpu/paged_attention.h"
#include "kernels/cpu/rms_norm.h"
#include "kernels/cpu/rope.h"

namespace drift {

Tensor CpuBackend::alloc(std::vector<int64_t> shape, DType dtype) { return Tensor::zeros(std::move(shape), dtype); }

void CpuBackend::embedding(const Tensor& table, const std::vector<int32_t>& ids, Tensor& out) {
  const int64_t dim = table.dim(1);
  for (size_t i = 0; i < ids.size(); ++i)
    std::memcpy(out.as<float>() + i * dim, table.as<float>() + ids[i] * dim, dim * sizeof(float));
}

void CpuBackend::rms_norm(const Tensor& x, const Tensor& weight, float eps, Tensor& out) {
  const int64_t dim = weight.numel();
  cpu::rms_norm(x.as<float>(), weight.as<float>(), out.as<float>(), x.numel() / dim, dim, eps);
}

void CpuBackend::linear(const Tensor& x, const Tensor& weight, const Tensor& bias, Tensor& out) {
  const int64_t in = weight.dim(1), outf = weight.dim(0);
  cpu::linear(x.as<float>(), weight.as<float>(), bias.empty() ? nullptr : bias.as<float>(), out.as<float>(),
              x.numel() / in, in, outf);
}

void CpuBackend::rope(Tensor& x, const std::vector<int32_t>& positions, const std::vector<float>& inv_freq,
                      float attention_scale) {
  cpu::rope(x.as<float>(), positions.data(), inv_freq.data(), x.dim(0), x.dim(1), x.dim(2), attention_scale);
}

void CpuBackend::write_kv(LayerKV& kv, const Tensor& k, const Tensor& v, const AttentionMetadata& meta) {
  const int64_t row = kv.k.dim(1) * kv.k.dim(2);
  for (size_t t = 0; t < meta.slots.size(); ++t) {
    if (meta.slots[t] < 0) continue;  // a padding token: no KV (AttentionMetadata::slots)
    // Slots come from the page group the layer belongs to; one from another group's pool could
    // point past this layer's tensors.
    DRIFT_CHECK(meta.slots[t] < kv.k.dim(0), "write_kv: token {}'s slot {} is outside the layer's {} KV slots", t,
                meta.slots[t], kv.k.dim(0));
    std::memcpy(kv.k.as<float>() + meta.slots[t] * row, k.as<float>() + t * row, row * sizeof(float));
    std::memcpy(kv.v.as<float>() + meta.slots[t] * row, v.as<float>() + t * row, row * sizeof(float));
  }
}

void CpuBackend::attention(const Tensor& q, const LayerKV& kv, const AttentionMetadata& meta, float scale,
                           int64_t block_size, Tensor& out) {
  attention_variant(q, kv, meta, scale, block_size, AttentionVariant{}, out);
}

void CpuBackend::attention_variant(const Tensor& q, const LayerKV& kv, const AttentionMetadata& meta, float scale,
                                   int64_t block_size, const AttentionVariant& variant, Tensor& out) {
  // Page lists (partial views) number positions by list, not by sequence: a window cannot be
  // measured on them (engine_factory refuses the combination).
  DRIFT_CHECK(variant.window == 0 || meta.tables_per_seq == 1,
              "attention: a sliding window over per-kv-head page lists (a partial view) is not implemented");
  std::vector<const int32_t*> tables(meta.block_tables.size());
  for (size_t s = 0; s < tables.size(); ++s) tables[s] = meta.block_tables[s].data();
  cpu::PagedAttentionArgs a;
  a.q = q.as<float>();
  a.k_cache = kv.k.as<float>();
  a.v_cache = kv.v.as<float>();
  a.out = out.as<float>();
  a.tokens = q.dim(0);
  a.num_heads = q.dim(1);
  a.head_dim = q.dim(2);
  a.num_kv_heads = kv.k.dim(1);
  a.block_size = block_size;
  a.scale = scale;
  a.token_seq = meta.token_seq.data();
  a.block_tables = tables.data();
  a.kv_len = meta.kv_len.data();
  a.tables_per_seq = meta.tables_per_seq;
  if (!meta.mask.empty()) {
    a.mask_start = meta.mask_start.data();
    a.mask = meta.mask.data();
    a.mask_words = meta.mask_words;
  }
  if (variant.sinks) {
    DRIFT_CHECK(variant.sinks->numel() == a.num_heads, "attention sinks: {} values for {} heads",
                variant.sinks->numel(), a.num_heads);
    a.sinks = variant.sinks->as<float>();
  }
  a.window = variant.window;
  cpu::paged_attention(a);
}

void CpuBackend::moe_mlp(const Tensor& x, const MoeWeights& w, const MoeShape& shape, Tensor& out) {
  cpu::MoeArgs a;
  a.rows = x.dim(0);
  a.hidden = x.dim(1);
  a.experts = w.router.dim(0);
  a.inter = w.down.inputs();
  DRIFT_CHECK(!w.gate_up.mxfp4() && !w.down.mxfp4(), "moe: the cpu backend computes dense experts (expanded on load)");
  a.experts_per_token = shape.experts_per_token;
  DRIFT_CHECK(a.experts_per_token >= 1 && a.experts_per_token <= a.experts, "moe: {} experts per token of {}",
              a.experts_per_token, a.experts);
  a.x = x.as<float>();
  a.router = w.router.as<float>();
  a.router_bias = w.router_bias.as<float>();
  a.gate_up = w.gate_up.dense.as<float>();
  a.gate_up_bias = w.gate_up.bias.as<float>();
  a.down = w.down.dense.as<float>();
  a.down_bias = w.down.bias.as<float>();
  a.out = out.as<float>();
  a.limit = shape.limit;
  a.alpha = shape.alpha;
  cpu::moe_mlp(a);
}

void CpuBackend::silu_mul(const Tensor& gate_up, Tensor& out) {
  cpu::silu_mul(gate_up.as<float>(), out.as<float>(), gate_up.dim(0), out.dim(1));
}

void CpuBackend::add_inplace(Tensor& x, const Tensor& y) { cpu::add_inplace(x.as<float>(), y.as<float>(), x.numel()); }

void CpuBackend::split_columns(const Tensor& x, const std::vector<Tensor*>& outs) {
  const int64_t rows = x.dim(0), cols = x.dim(1);
  int64_t offset = 0;
  for (Tensor* out : outs) {
    const int64_t width = out->numel() / rows;
    for (int64_t r = 0; r < rows; ++r)
      std::memcpy(out->as<float>() + r * width, x.as<float>() + r * cols + offset, width * sizeof(float));
    offset += width;
  }
  DRIFT_CHECK(offset == cols, "split widths {} != columns {}", offset, cols);
}

void CpuBackend::join_columns(const std::vector<const Tensor*>& parts, Tensor& out) {
  const int64_t rows = out.dim(0), cols = out.numel() / std::max<int64_t>(rows, 1);
  const auto elem = static_cast<int64_t>(dtype_size(out.dtype()));
  int64_t offset = 0;
  for (const Tensor* part : parts) {
    const int64_t width = rows > 0 ? part->numel() / rows : 0;
    for (int64_t r = 0; r < rows; ++r)
      std::memcpy(static_cast<char*>(out.data()) + (r * cols + offset) * elem,
                  static_cast<const char*>(part->data()) + r * width * elem, width * elem);
    offset += width;
  }
  DRIFT_CHECK(rows == 0 || offset == cols, "joined widths {} != columns {}", offset, cols);
}

void CpuBackend::gather_rows(const Tensor& x, const std::vector<int32_t>& rows, Tensor& out) {
  const int64_t cols = x.dim(1);
  for (size_t i = 0; i < rows.size(); ++i)
    std::memcpy(out.as<float>() + i * cols, x.as<float>() + rows[i] * cols, cols * sizeof(float));
}

void CpuBackend::copy(const Tensor& src, Tensor& dst) {
  DRIFT_CHECK(src.nbytes() == dst.nbytes(), "copy of {} into {}", src.shape_string(), dst.shape_string());
  std::memcpy(dst.data(), src.data(), src.nbytes());
}

void CpuBackend::copy_page(std::vector<LayerKV>& layers, int32_t src, int32_t dst, int64_t block_size) {
  for (auto& layer : layers) {
    const int64_t page_floats = block_size * layer.k.dim(1) * layer.k.dim(2);
    for (Tensor* t : {&layer.k, &layer.v})
      std::memcpy(t->as<float>() + dst * page_floats, t->as<float>() + src * page_floats, page_floats * sizeof(float));
  }
}

void CpuBackend::copy_slots(std::vector<LayerKV>& layers, std::span<const int64_t> src, std::span<const int64_t> dst) {
  for (auto& layer : layers) {
    const int64_t slot_floats = layer.k.dim(1) * layer.k.dim(2);
    for (Tensor* t : {&layer.k, &layer.v})
      for (size_t i = 0; i < src.size(); ++i)
        std::memcpy(t->as<float>() + dst[i] * slot_floats, t->as<float>() + src[i] * slot_floats,
                    slot_floats * sizeof(float));
  }
}

}  // namespace drift
