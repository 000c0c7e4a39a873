#include "core/model/model_weights.h"

#include <cstdio>
#include <cstring>
#include <memory>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "core/error.h"
#include "core/model/mxfp4.h"
#include "core/parallel/shard_plan.h"
#include "core/safetensors.h"

namespace drift {
namespace {

// Reads tensors by name, checking shapes, and remembers which names were used so that tensors
// the model would not consume can be refused (see check_unused).
class TensorReader {
 public:
  explicit TensorReader(const SafetensorsCheckpoint& ckpt) : ckpt_(ckpt) {}

  RawTensor read(const std::string& name, const std::vector<int64_t>& shape) {
    const TensorInfo& info = ckpt_.get(name);
    if (info.shape != shape)
      fail("tensor '{}' in {} has shape [{}], expected [{}] from config.json", name, info.file,
           fmt::join(info.shape, ", "), fmt::join(shape, ", "));
    if (info.dtype != DType::F32 && info.dtype != DType::F16 && info.dtype != DType::BF16)
      fail("tensor '{}' in {} has dtype {}; weights must be float32, float16 or bfloat16", name, info.file,
           dtype_name(info.dtype));
    used_.insert(name);
    return RawTensor{info.data, info.dtype, info.shape};
  }

  // Packed bytes (MXFP4 blocks and scales): uint8 of the given shape.
  RawTensor read_bytes(const std::string& name, const std::vector<int64_t>& shape) {
    const TensorInfo& info = ckpt_.get(name);
    if (info.shape != shape || info.dtype != DType::U8)
      fail("tensor '{}' in {} is {} [{}], expected uint8 [{}] (MXFP4, quantization_config in config.json)", name,
           info.file, dtype_name(info.dtype), fmt::join(info.shape, ", "), fmt::join(shape, ", "));
    used_.insert(name);
    return RawTensor{info.data, info.dtype, info.shape};
  }

  // A tensor left over means the checkpoint and config.json disagree (a bias the config turns off,
  // a layer beyond num_hidden_layers): running without it would silently compute another model.
  // Only known-harmless extras are let through, with a warning.
  void check_unused(const ModelConfig& config) const {
    for (const auto& name : ckpt_.names()) {
      if (used_.count(name)) continue;
      const std::string& file = ckpt_.get(name).file;
      if (std::string why = harmless_extra(name, config); !why.empty()) {
        spdlog::warn("checkpoint tensor '{}' in {} is ignored: {}", name, file, why);
        continue;
      }
      fail(
          "tensor '{}' in {} is not used by the {} model config.json describes ({}): the checkpoint and its "
          "config.json disagree",
          name, file, architecture_name(config.arch), unused_reason(name, config));
    }
  }

 private:
  static std::string harmless_extra(const std::string& name, const ModelConfig& c) {
    if (name.ends_with("rotary_emb.inv_freq")) return "rotary frequencies are computed from config.json";
    if (name == "lm_head.weight" && c.tie_word_embeddings)
      return "tie_word_embeddings = true, the head is model.embed_tokens.weight";
    return "";
  }
  static std::string unused_reason(const std::string& name, const ModelConfig& c) {
    int layer = -1;
    if (std::sscanf(name.c_str(), "model.layers.%d.", &layer) == 1 && layer >= c.num_layers)
      return fmt::format("num_hidden_layers = {}", c.num_layers);
    if (name.find(".self_attn.") != std::string::npos && name.ends_with("_proj.bias"))
      return c.attention_bias ? fmt::format("{} has no o_proj bias", architecture_name(c.arch))
                              : "attention_bias = false";
    if (name.ends_with("q_norm.weight") || name.ends_with("k_norm.weight")) return "only qwen3 has q/k norms";
    return "no such tensor in this architecture";
  }

  const SafetensorsCheckpoint& ckpt_;
  std::set<std::string> used_;
};

// One weight on the backend: a single tensor, or row blocks stacked (fused q|k|v, gate|up);
// pair_span as Backend::load_weight.
Tensor load(Backend& backend, std::initializer_list<RawTensor> row_blocks, int64_t pair_span = 0) {
  return backend.load_weight(std::span<const RawTensor>(row_blocks.begin(), row_blocks.size()), pair_span);
}

// [experts, inputs, outputs] (transformers' dense experts) as [experts, outputs, inputs], fp32.
Tensor outputs_first(const RawTensor& stored) {
  const Tensor f32 = to_f32(TensorInfo{"", stored.dtype, stored.shape, stored.data, 0, ""});
  const int64_t experts = stored.shape[0], inputs = stored.shape[1], outputs = stored.shape[2];
  Tensor out = Tensor::zeros({experts, outputs, inputs});
  for (int64_t e = 0; e < experts; ++e)
    for (int64_t i = 0; i < inputs; ++i)
      for (int64_t o = 0; o < outputs; ++o)
        out.as<float>()[(e * outputs + o) * inputs + i] = f32.as<float>()[(e * inputs + i) * outputs + o];
  return out;
}

// One expert projection, weights and bias, on the backend: MXFP4 blocks [experts, outputs,
// inputs / 32, 16] and scales (already outputs first) kept 4-bit where the backend computes from
// them, else dense [experts, outputs, inputs] (rows are outputs, as every linear weight): expanded
// from MXFP4, or transposed from transformers' dense [experts, inputs, outputs].
ExpertProjection load_expert_projection(TensorReader& r, const ModelConfig& c, const std::string& name, int64_t inputs,
                                        int64_t outputs, Backend& backend) {
  const int64_t e = c.moe.num_experts, groups = inputs / kMxfp4Block;
  ExpertProjection p;
  p.bias = load(backend, {r.read(name + "_bias", {e, outputs})});
  if (!c.moe.mxfp4) {
    const Tensor dense = outputs_first(r.read(name, {e, inputs, outputs}));
    p.dense = load(backend, {RawTensor{dense.data(), DType::F32, dense.shape()}});
    return p;
  }
  const RawTensor blocks = r.read_bytes(name + "_blocks", {e, outputs, groups, kMxfp4Block / 2});
  const RawTensor scales = r.read_bytes(name + "_scales", {e, outputs, groups});
  if (backend.keeps_mxfp4()) {
    check_mxfp4_scales(scales, name);
    p.blocks = backend.load_bytes(blocks);
    p.scales = backend.load_bytes(scales);
    return p;
  }
  const Tensor dense = dequantize_mxfp4_experts(blocks, scales, name);
  p.dense = load(backend, {RawTensor{dense.data(), DType::F32, dense.shape()}});
  return p;
}

// GPT-OSS's router and experts.
MoeWeights load_experts(TensorReader& r, const ModelConfig& c, const std::string& p, Backend& backend) {
  const int64_t e = c.moe.num_experts, h = c.hidden_size, inter = c.intermediate_size;
  MoeWeights m;
  m.router = load(backend, {r.read(p + "router.weight", {e, h})});
  m.router_bias = load(backend, {r.read(p + "router.bias", {e})});
  m.gate_up = load_expert_projection(r, c, p + "experts.gate_up_proj", h, 2 * inter, backend);
  m.down = load_expert_projection(r, c, p + "experts.down_proj", inter, h, backend);
  return m;
}

// A rank's part of checkpoint tensors (core/parallel/shard_plan.h): row ranges are views of the
// mapped file; column ranges are copied out, into storage that lives until the weights are loaded.
class ShardSlicer {
 public:
  static RawTensor rows(const RawTensor& t, int64_t first, int64_t count) {
    int64_t row_elements = 1;
    for (size_t i = 1; i < t.shape.size(); ++i) row_elements *= t.shape[i];
    RawTensor part = t;
    part.data = static_cast<const uint8_t*>(t.data) + first * row_elements * static_cast<int64_t>(dtype_size(t.dtype));
    part.shape[0] = count;
    return part;
  }
  RawTensor columns(const RawTensor& t, int64_t first, int64_t count) {
    const int64_t rows = t.shape[0], cols = t.shape[1];
    if (first == 0 && count == cols) return t;  // the whole tensor (one rank): no copy
    const auto element = static_cast<int64_t>(dtype_size(t.dtype));
    std::vector<uint8_t>& copy = storage_.emplace_back(static_cast<size_t>(rows * count * element));
    for (int64_t r = 0; r < rows; ++r)
      std::memcpy(copy.data() + r * count * element, static_cast<const uint8_t*>(t.data) + (r * cols + first) * element,
                  static_cast<size_t>(count * element));
    return RawTensor{copy.data(), t.dtype, {rows, count}};
  }
  // Zero rows of t's width and dtype.
  RawTensor zero_rows(const RawTensor& t, int64_t count) {
    std::vector<uint8_t>& zeros = storage_.emplace_back(static_cast<size_t>(count * t.shape[1]) * dtype_size(t.dtype));
    return RawTensor{zeros.data(), t.dtype, {count, t.shape[1]}};
  }

 private:
  std::vector<std::vector<uint8_t>> storage_;
};

LayerWeights load_layer(TensorReader& r, const ModelConfig& c, int64_t i, const ShardPlan& shard, Backend& backend) {
  const std::string p = fmt::format("model.layers.{}.", i);
  const int64_t h = c.hidden_size, d = c.head_dim, q_out = c.num_heads * d, kv_out = c.num_kv_heads * d;
  ShardSlicer slice;
  // This rank's query heads, KV heads and MLP columns (all of them on one rank).
  auto q_rows = [&](const RawTensor& t) { return ShardSlicer::rows(t, shard.first_head * d, shard.heads * d); };
  auto kv_rows = [&](const RawTensor& t) { return ShardSlicer::rows(t, shard.first_kv_head * d, shard.kv_heads * d); };
  auto mlp_rows = [&](const RawTensor& t) {
    return ShardSlicer::rows(t, shard.first_intermediate, shard.intermediate);
  };
  LayerWeights w;
  w.input_norm = load(backend, {r.read(p + "input_layernorm.weight", {h})});
  w.post_norm = load(backend, {r.read(p + "post_attention_layernorm.weight", {h})});
  // Without q/k norms the projection feeds linear_qkv_rope_write, whose pairs are a head's (i, i + d / 2).
  const int64_t qkv_pairs = c.qk_norm ? 0 : d;
  w.qkv = load(backend,
               {q_rows(r.read(p + "self_attn.q_proj.weight", {q_out, h})),
                kv_rows(r.read(p + "self_attn.k_proj.weight", {kv_out, h})),
                kv_rows(r.read(p + "self_attn.v_proj.weight", {kv_out, h}))},
               qkv_pairs);
  if (c.attention_bias)
    w.qkv_bias = load(
        backend,
        {q_rows(r.read(p + "self_attn.q_proj.bias", {q_out})), kv_rows(r.read(p + "self_attn.k_proj.bias", {kv_out})),
         kv_rows(r.read(p + "self_attn.v_proj.bias", {kv_out}))},
        qkv_pairs);
  if (c.qk_norm) {
    w.q_norm = load(backend, {r.read(p + "self_attn.q_norm.weight", {d})});
    w.k_norm = load(backend, {r.read(p + "self_attn.k_norm.weight", {d})});
  }
  // Row-parallel: this rank's input columns; the ranks' outputs are summed (all-reduce), so a bias
  // is added by rank 0 alone.
  w.o_proj =
      load(backend,
           {slice.columns(r.read(p + "self_attn.o_proj.weight", {h, q_out}), shard.first_head * d, shard.heads * d)});
  if (c.attention_bias && c.arch != Architecture::Qwen2) {  // transformers: o_proj bias follows attention_bias
    const RawTensor bias = r.read(p + "self_attn.o_proj.bias", {h});
    if (shard.rank == 0) w.o_bias = load(backend, {bias});
  }
  if (c.layers[i].sinks)
    w.sinks =
        load(backend, {ShardSlicer::rows(r.read(p + "self_attn.sinks", {c.num_heads}), shard.first_head, shard.heads)});
  if (c.layers[i].moe) {
    w.moe = load_experts(r, c, p + "mlp.", backend);  // one rank only (ShardPlan refuses to split experts)
    return w;
  }
  w.gate_up = load(backend,
                   {mlp_rows(r.read(p + "mlp.gate_proj.weight", {c.intermediate_size, h})),
                    mlp_rows(r.read(p + "mlp.up_proj.weight", {c.intermediate_size, h}))},
                   2 * shard.intermediate);  // for linear_swiglu
  w.down = load(backend, {slice.columns(r.read(p + "mlp.down_proj.weight", {h, c.intermediate_size}),
                                        shard.first_intermediate, shard.intermediate)});
  return w;
}

}  // namespace

namespace {

// The embedding, final norm and LM head into w (the shared weights; layers are the caller's). A
// rank of several holds its vocabulary rows of both, and one zero row after its embedding rows:
// tokens outside its range embed to zeros there, so the ranks' rows sum to the embedding.
void load_shared(TensorReader& reader, const ModelConfig& config, const ShardPlan& shard, Backend& backend,
                 ModelWeights& w) {
  ShardSlicer slice;
  const int64_t v = config.vocab_size, h = config.hidden_size;
  const RawTensor embed = reader.read("model.embed_tokens.weight", {v, h});
  const RawTensor local_embed = ShardSlicer::rows(embed, shard.first_vocab, shard.vocab);
  w.embed = shard.parallel() ? load(backend, {local_embed, slice.zero_rows(embed, 1)}) : load(backend, {local_embed});
  w.final_norm = load(backend, {reader.read("model.norm.weight", {h})});
  if (!config.tie_word_embeddings) {
    w.lm_head =
        load(backend, {ShardSlicer::rows(reader.read("lm_head.weight", {v, h}), shard.first_vocab, shard.vocab)});
  } else if (!shard.parallel()) {
    w.lm_head = w.embed;
  } else {  // the embedding's rows without the zero row
    auto owner = std::make_shared<Tensor>(w.embed);
    w.lm_head = Tensor::wrap(owner->data(), {shard.vocab, h}, owner->dtype(), owner->device(), owner);
  }
}

}  // namespace

ModelWeights load_model_weights(const std::string& dir, const ModelConfig& config, Backend& backend) {
  return load_model_weights(dir, config, ShardPlan::whole(config), backend);
}

ModelWeights load_model_weights(const std::string& dir, const ModelConfig& config, const ShardPlan& shard,
                                Backend& backend) {
  SafetensorsCheckpoint ckpt(dir);
  TensorReader reader(ckpt);
  ModelWeights w;
  load_shared(reader, config, shard, backend, w);
  for (int64_t i = 0; i < config.num_layers; ++i) w.layers.push_back(load_layer(reader, config, i, shard, backend));
  reader.check_unused(config);
  return w;
}

ModelWeights load_shared_weights(const std::string& dir, const ModelConfig& config, Backend& backend) {
  SafetensorsCheckpoint ckpt(dir);
  TensorReader reader(ckpt);
  ModelWeights w;
  load_shared(reader, config, ShardPlan::whole(config), backend, w);
  return w;
}

}  // namespace drift
