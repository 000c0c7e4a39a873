#include "core/model/model_runner.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"

namespace drift {

ModelRunner::ModelRunner(ModelConfig config, ModelWeights weights, Backend& backend, int64_t num_pages,
                         int64_t block_size, int64_t window_pages)
    : ModelRunner(config, std::move(weights), backend, num_pages, block_size, window_pages,
                  RunnerShard{ShardPlan::whole(config), nullptr}) {}

ModelRunner::ModelRunner(ModelConfig config, ModelWeights weights, Backend& backend, int64_t num_pages,
                         int64_t block_size, int64_t window_pages, RunnerShard shard)
    : config_(std::move(config)),
      shard_(shard),
      local_(local_model_config(config_, shard_.plan)),
      weights_(std::move(weights)),
      backend_(backend),
      rope_(compute_rope_frequencies(config_.rope, config_.head_dim)),
      block_size_(block_size) {
  // Kernels index slots in 32 bits (page ids already are): a pool past that is refused here.
  DRIFT_CHECK(!shard_.plan.parallel() || (shard_.communicator && shard_.communicator->size() == shard_.plan.size &&
                                          shard_.communicator->rank() == shard_.plan.rank),
              "rank {} of {} without its communicator", shard_.plan.rank, shard_.plan.size);
  for (int64_t pages : {num_pages, window_pages})
    if (pages * block_size > std::numeric_limits<int32_t>::max())
      fail("kv_cache: {} pages of {} slots exceed the 2^31 slots a KV pool can address", pages, block_size);
  for (int64_t i = 0; i < config_.num_layers; ++i) {
    // With a window group, a sliding-window layer's KV lives in that group's smaller pool.
    const bool windowed = window_pages > 0 && config_.layers[i].attention_window > 0;
    const int64_t slots = (windowed ? window_pages : num_pages) * block_size;
    kv_.push_back({backend_.alloc({slots, local_.num_kv_heads, config_.head_dim}, backend_.compute_dtype()),
                   backend_.alloc({slots, local_.num_kv_heads, config_.head_dim}, backend_.compute_dtype())});
    windowed_.push_back(windowed);
    (windowed ? window_group_kv_ : full_group_kv_).push_back(kv_.back());
  }
}

Tensor ModelRunner::scratch(std::vector<int64_t> shape, DType dtype) {
  return backend_.scratch(std::move(shape), dtype);
}
Tensor ModelRunner::scratch(std::vector<int64_t> shape) { return scratch(std::move(shape), backend_.compute_dtype()); }

void ModelRunner::copy_page(int32_t src, int32_t dst) { backend_.copy_page(full_group_kv_, src, dst, block_size_); }
void ModelRunner::move_slots(std::span<const int64_t> src, std::span<const int64_t> dst) {
  backend_.copy_slots(full_group_kv_, src, dst);
}
void ModelRunner::copy_window_page(int32_t src, int32_t dst) {
  DRIFT_CHECK(!window_group_kv_.empty(), "copy_window_page without sliding-window pages");
  backend_.copy_page(window_group_kv_, src, dst, block_size_);
}
void ModelRunner::move_window_slots(std::span<const int64_t> src, std::span<const int64_t> dst) {
  DRIFT_CHECK(!window_group_kv_.empty(), "move_window_slots without sliding-window pages");
  backend_.copy_slots(window_group_kv_, src, dst);
}

ModelRunner::LayerScratch ModelRunner::layer_scratch(int64_t t) {
  const int64_t d = local_.head_dim, nh = local_.num_heads, nkv = local_.num_kv_heads;
  LayerScratch s;
  s.qkv = scratch({t, (nh + 2 * nkv) * d});
  s.q = scratch({t, nh, d});
  s.k = scratch({t, nkv, d});
  s.v = scratch({t, nkv, d});
  s.attn = scratch({t, nh, d});
  s.attn_out = scratch({t, config_.hidden_size});
  s.gate_up = scratch({t, 2 * local_.intermediate_size});
  s.act = scratch({t, local_.intermediate_size});
  s.mlp_out = scratch({t, config_.hidden_size});
  s.h = scratch({t, config_.hidden_size});
  s.square_sums = scratch({t, residual_norm_groups(config_.hidden_size)}, DType::F32);
  return s;
}

NormedRows ModelRunner::block_input(const Tensor& x, const Tensor& norm_weight, LayerScratch& s) const {
  return NormedRows{x, norm_weight, static_cast<float>(config_.rms_norm_eps), s.h,
                    s.factored ? &s.square_sums : nullptr};
}

void ModelRunner::add_to_residual(const Tensor& in, const Tensor& weight, const Tensor& bias, Tensor& delta, Tensor& x,
                                  const Tensor& next_norm, LayerScratch& s) {
  if (shard_.plan.parallel()) {  // row-parallel: the ranks' partial outputs are summed before the add
    backend_.linear(in, weight, bias, delta);
    all_reduce(delta);
    backend_.add_rms_norm(x, delta, next_norm, static_cast<float>(config_.rms_norm_eps), s.h);
    s.factored = false;
    return;
  }
  const NextNorm next{next_norm, static_cast<float>(config_.rms_norm_eps), s.h, s.square_sums};
  s.factored = backend_.linear_add_residual(in, weight, bias, delta, x, next);
}

void ModelRunner::all_reduce(Tensor& x) {
  DRIFT_CHECK(x.device() == Device::CPU && x.dtype() == DType::F32,
              "tensor parallelism sums fp32 host tensors (the CPU backend), not a {} {} tensor",
              x.device() == Device::CPU ? "host" : "device", dtype_name(x.dtype()));
  shard_.communicator->all_reduce_sum({x.as<float>(), static_cast<size_t>(x.numel())});
}

// Each rank holds its vocabulary rows and then a zero row (model_weights.cpp): a token outside its
// rows reads the zero row, so the sum over the ranks is the token's embedding.
void ModelRunner::embed(const std::vector<int32_t>& tokens, Tensor& x) {
  if (!shard_.plan.parallel()) {
    backend_.embedding(weights_.embed, tokens, x);
    return;
  }
  const ShardPlan& plan = shard_.plan;
  std::vector<int32_t> local(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) {
    const int64_t row = tokens[i] - plan.first_vocab;
    local[i] = static_cast<int32_t>(row >= 0 && row < plan.vocab ? row : plan.vocab);
  }
  backend_.embedding(weights_.embed, local, x);
  all_reduce(x);
}

void ModelRunner::announce(LogitGather how) {
  std::vector<uint8_t> bytes = {static_cast<uint8_t>(how)};
  shard_.communicator->broadcast(bytes);
}

void ModelRunner::follow_gather(const Tensor& local) {
  std::vector<uint8_t> bytes;
  shard_.communicator->broadcast(bytes);
  if (bytes.size() == 1 && bytes[0] == static_cast<uint8_t>(LogitGather::kWhole)) {
    gather_logits(local);
  } else if (bytes.size() == 1 && bytes[0] == static_cast<uint8_t>(LogitGather::kArgmax)) {
    gather_argmax(local);
  } else {
    fail("tensor parallel rank 0 announced a logit gather of {} bytes that is neither kind: the ranks are out of step",
         bytes.size());
  }
}

std::vector<int32_t> ModelRunner::gather_argmax(const Tensor& local) {
  ++gathers_.argmax;
  const Tensor host = backend_.to_host_f32(local);
  const int64_t rows = host.dim(0), vocab = host.dim(1);
  // Per row: the rank's largest logit and its column (-1 for a rank holding no columns). Columns
  // travel as floats: exact below 2^24, and a rank's share of a vocabulary is far below.
  std::vector<float> mine(static_cast<size_t>(2 * rows));
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = host.as<float>() + r * vocab;
    const int64_t column = vocab > 0 ? std::max_element(row, row + vocab) - row : -1;
    mine[2 * r] = column >= 0 ? row[column] : -std::numeric_limits<float>::infinity();
    mine[2 * r + 1] = static_cast<float>(column);
  }
  const std::vector<std::vector<float>> parts = shard_.communicator->gather(mine);
  if (shard_.plan.rank != 0) return {};
  std::vector<int64_t> first_token;
  for (int rank = 0; rank < shard_.plan.size; ++rank) {
    first_token.push_back(ShardPlan::for_rank(config_, rank, shard_.plan.size).first_vocab);
    DRIFT_CHECK(static_cast<int64_t>(parts[rank].size()) == 2 * rows, "rank {} sent {} argmax values for {} rows", rank,
                parts[rank].size(), rows);
  }
  std::vector<int32_t> picks(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    // Ranks hold ascending vocabulary ranges: a later rank wins only with a strictly larger logit,
    // so equal maxima resolve to the lowest token, as one argmax over the whole row does.
    float best = 0;
    int64_t token = -1;
    for (int rank = 0; rank < shard_.plan.size; ++rank) {
      const float value = parts[rank][2 * r], column = parts[rank][2 * r + 1];
      if (column < 0 || (token >= 0 && !(best < value))) continue;
      best = value;
      token = first_token[rank] + static_cast<int64_t>(column);
    }
    picks[r] = static_cast<int32_t>(token);
  }
  return picks;
}

Tensor ModelRunner::gather_logits(const Tensor& local) {
  ++gathers_.whole;
  const Tensor host = backend_.to_host_f32(local);
  const std::vector<std::vector<float>> parts =
      shard_.communicator->gather({host.as<float>(), static_cast<size_t>(host.numel())});
  if (shard_.plan.rank != 0) return Tensor();
  const int64_t rows = local.dim(0), vocab = config_.vocab_size;
  Tensor whole = scratch({rows, vocab}, DType::F32);
  for (int r = 0; r < shard_.plan.size; ++r) {
    const ShardPlan part = ShardPlan::for_rank(config_, r, shard_.plan.size);
    DRIFT_CHECK(static_cast<int64_t>(parts[r].size()) == rows * part.vocab,
                "rank {} sent {} logits for {} rows of {} vocabulary entries", r, parts[r].size(), rows, part.vocab);
    for (int64_t row = 0; row < rows; ++row)
      std::copy_n(parts[r].data() + row * part.vocab, part.vocab, whole.as<float>() + row * vocab + part.first_vocab);
  }
  return whole;
}

const Tensor& ModelRunner::norm_after_attention(int64_t layer) const { return weights_.layers[layer].post_norm; }
const Tensor& ModelRunner::norm_after_mlp(int64_t layer) const {
  return layer + 1 < config_.num_layers ? weights_.layers[layer + 1].input_norm : weights_.final_norm;
}

// x += attention(rms_norm(x)). The KV is written where the forward's metadata says; attention
// reads the layer's partial views when there are any.
void ModelRunner::attention_block(int64_t layer, const ForwardBatch& batch, Tensor& x, LayerScratch& s) {
  const LayerWeights& w = weights_.layers[layer];
  LayerKV& kv = kv_[layer];
  // A layer of the sliding-window page group writes and reads through that group's slots.
  DRIFT_CHECK(!windowed_[layer] || !batch.window_attention.slots.empty() || batch.attention.slots.empty(),
              "layer {} keeps sliding-window pages, but the forward has no window metadata", layer);
  // Partial views list main-pool pages, which do not address this layer's pool.
  DRIFT_CHECK(!windowed_[layer] || batch.layer_attention.empty(),
              "layer {} keeps sliding-window pages: a partial KV view cannot address them", layer);
  const AttentionMetadata& written = windowed_[layer] ? batch.window_attention : batch.attention;
  const NormedRows in = block_input(x, w.input_norm, s);
  if (w.q_norm.empty()) {  // the weights were loaded for it (model_weights.cpp)
    backend_.normed_linear_qkv_rope_write(in, w.qkv, w.qkv_bias, s.qkv, s.q, s.k, s.v, kv, batch.positions,
                                          rope_.inv_freq, rope_.attention_scale, written);
  } else {  // Qwen3: per-head RMSNorm before rope
    backend_.form_normed_rows(in);
    backend_.linear(in.normed, w.qkv, w.qkv_bias, s.qkv);
    backend_.split_columns(s.qkv, {&s.q, &s.k, &s.v});
    backend_.rms_norm(s.q, w.q_norm, static_cast<float>(config_.rms_norm_eps), s.q);
    backend_.rms_norm(s.k, w.k_norm, static_cast<float>(config_.rms_norm_eps), s.k);
    backend_.rope(s.q, batch.positions, rope_.inv_freq, rope_.attention_scale);
    backend_.rope(s.k, batch.positions, rope_.inv_freq, rope_.attention_scale);
    backend_.write_kv(kv, s.k, s.v, written);
  }
  keep_queries(layer, batch, s.q);
  const AttentionMetadata& meta = batch.layer_attention.empty() ? written : batch.layer_attention[layer];
  const AttentionVariant variant{w.sinks.empty() ? nullptr : &w.sinks, config_.layers[layer].attention_window};
  backend_.attention_variant(s.q, kv, meta, 1.0f / std::sqrt(static_cast<float>(config_.head_dim)), block_size_,
                             variant, s.attn);
  add_to_residual(s.attn, w.o_proj, w.o_bias, s.attn_out, x, norm_after_attention(layer), s);
}

// The query_rows' post-RoPE queries into the forward's scratch (readable until the next forward).
void ModelRunner::keep_queries(int64_t layer, const ForwardBatch& batch, const Tensor& q) {
  if (batch.query_rows.empty()) return;
  const auto rows = static_cast<int64_t>(batch.query_rows.size());
  const int64_t width = local_.num_heads * local_.head_dim;
  Tensor kept = scratch({rows, width});
  // q is the layer scratch's [tokens, heads, head_dim], alive for the whole forward: a flat view of it.
  const Tensor flat = Tensor::wrap(const_cast<void*>(q.data()), {q.dim(0), width}, q.dtype(), q.device(), nullptr);
  backend_.gather_rows(flat, batch.query_rows, kept);
  captured_queries_[layer] = std::move(kept);
}

const Tensor* ModelRunner::captured_queries(int32_t layer) const {
  if (layer < 0 || layer >= static_cast<int32_t>(captured_queries_.size()) || captured_queries_[layer].empty())
    return nullptr;
  return &captured_queries_[layer];
}

// x += mlp(rms_norm(x)): a dense SwiGLU, or a mixture of experts (LayerSpec::moe), whose output
// joins the residual stream through the one-pass add + next norm.
void ModelRunner::mlp_block(int64_t layer, Tensor& x, LayerScratch& s) {
  const LayerWeights& w = weights_.layers[layer];
  if (config_.layers[layer].moe) {
    const NormedRows in = block_input(x, w.post_norm, s);
    backend_.form_normed_rows(in);  // s.h: the normed rows
    const MoeShape shape{config_.moe.experts_per_token, static_cast<float>(config_.moe.swiglu_limit),
                         static_cast<float>(config_.moe.swiglu_alpha)};
    backend_.moe_mlp(s.h, w.moe, shape, s.mlp_out);
    backend_.add_rms_norm(x, s.mlp_out, norm_after_mlp(layer), static_cast<float>(config_.rms_norm_eps), s.h);
    s.factored = false;
    return;
  }
  backend_.normed_linear_swiglu(block_input(x, w.post_norm, s), w.gate_up, s.gate_up, s.act);
  add_to_residual(s.act, w.down, Tensor(), s.mlp_out, x, norm_after_mlp(layer), s);
}

void ModelRunner::set_capture_layers(std::vector<int32_t> layers) {
  captured_.clear();
  for (int32_t layer : layers) {
    DRIFT_CHECK(layer >= 0 && layer < config_.num_layers, "capture layer {} outside the model's {} layers", layer,
                config_.num_layers);
    captured_.emplace(layer, Tensor());
  }
}

const Tensor* ModelRunner::captured(int32_t layer) const {
  auto it = captured_.find(layer);
  return it == captured_.end() ? nullptr : &it->second;
}

std::vector<Tensor> ModelRunner::captures() const {
  std::vector<Tensor> out;
  for (const auto& [layer, hidden] : captured_) out.push_back(hidden);
  return out;
}

void ModelRunner::restore_captures(const std::vector<Tensor>& tensors) {
  DRIFT_CHECK(tensors.size() == captured_.size(), "a replayed forward kept {} captures, {} layers are captured",
              tensors.size(), captured_.size());
  size_t i = 0;
  for (auto& [layer, hidden] : captured_) hidden = tensors[i++];
}

void ModelRunner::reorder_captured(const std::vector<int32_t>& rows) {
  for (auto& [layer, hidden] : captured_) {
    if (hidden.empty()) continue;
    // Scratch, like the capture itself: valid until the next forward, and no allocation per step.
    Tensor reordered = scratch({static_cast<int64_t>(rows.size()), config_.hidden_size}, hidden.dtype());
    backend_.gather_rows(hidden, rows, reordered);
    hidden = std::move(reordered);
  }
}

namespace {

int64_t graph_size_class(int64_t tokens) {
  for (int64_t size : {1, 2, 4, 8, 16, 24, 32})
    if (tokens <= size) return size;
  return tokens;
}

}  // namespace

namespace {

// Padding tokens write no KV (slot -1) and see nothing (kv_len 0), in a dummy sequence.
void pad_attention(AttentionMetadata& a, int64_t from, int64_t size) {
  const int64_t per_seq = a.tables_per_seq;
  const auto dummy_seq = static_cast<int32_t>(a.block_tables.size() / per_seq);
  for (int64_t t = from; t < size; ++t) {
    a.token_seq.push_back(dummy_seq);
    a.slots.push_back(-1);
    for (int64_t h = 0; h < per_seq; ++h) a.kv_len.push_back(0);
    if (!a.mask.empty()) {
      for (int64_t h = 0; h < per_seq; ++h) a.mask_start.push_back(0);
      a.mask.insert(a.mask.end(), a.mask_words, 0);
    }
  }
  a.block_tables.resize(size * per_seq);  // the dummy sequence and more, all empty
}

}  // namespace

ForwardBatch ModelRunner::pad_for_graph(const ForwardBatch& batch) {
  ForwardBatch padded = batch;
  const int64_t size = graph_size_class(batch.num_tokens());
  for (int64_t t = batch.num_tokens(); t < size; ++t) {
    padded.tokens.push_back(0);
    padded.positions.push_back(0);
  }
  pad_attention(padded.attention, batch.num_tokens(), size);
  if (!padded.window_attention.slots.empty()) pad_attention(padded.window_attention, batch.num_tokens(), size);
  padded.logit_rows.resize(size, 0);
  return padded;
}

template <typename Read>
auto ModelRunner::run_forward(const ForwardBatch& batch, Read read) {
  const bool recordable = !batch.logit_rows.empty() && batch.num_tokens() <= kMaxGraphTokens && !batch.eager_only();
  if (!recordable || !backend_.records_forwards()) return run_exact(batch, read);
  const auto rows = static_cast<int64_t>(batch.logit_rows.size());
  return run_exact(pad_for_graph(batch), [&](const Tensor& logits) {
    Tensor real = Tensor::wrap(const_cast<void*>(logits.data()), {rows, logits.dim(1)}, logits.dtype(),
                               logits.device(), nullptr);
    return read(real);
  });
}

template <typename Read>
auto ModelRunner::run_exact(const ForwardBatch& batch, Read read) {
  const int64_t t = batch.num_tokens();
  DRIFT_CHECK(t > 0, "empty forward batch");
  captured_queries_.assign(static_cast<size_t>(config_.num_layers), Tensor());  // kept only by this forward's rows
  backend_.begin_forward({&batch.tokens, &batch.positions, &batch.attention, &batch.logit_rows,
                          batch.window_attention.slots.empty() ? nullptr : &batch.window_attention});
  struct EndForward {
    Backend& backend;
    ~EndForward() { backend.end_forward(); }
  } end_forward{backend_};
  // Small forwards (decode, verification) are where launch overhead shows: the backend may replay
  // a recorded graph of them. Captured hidden states live in the forward's scratch, so a
  // recording writes them where its replays will: they are the recording's extra outputs.
  const bool graphable = !batch.logit_rows.empty() && t <= kMaxGraphTokens && !batch.eager_only();
  if (graphable)
    if (std::optional<Tensor> logits = backend_.replay_forward()) {
      restore_captures(backend_.replayed_extras());
      return read(*logits);
    }
  const bool capturing = graphable && backend_.begin_forward_capture();
  Tensor logits = run_layers(batch);
  if (capturing) backend_.end_forward_capture(logits, captures());
  return read(logits);
}

// The residual stream x stays fp32 across layers; each block reads it through a fused
// add + RMSNorm (x += previous block's output; h = norm(x)), so the norm after the last layer
// is the final norm.
Tensor ModelRunner::forward(const ForwardBatch& batch) {
  return run_forward(batch, [&](const Tensor& logits) {
    if (logits.empty()) return Tensor::zeros({0, config_.vocab_size});
    if (!shard_.plan.parallel()) return backend_.to_host_f32(logits);
    if (shard_.plan.rank != 0) {  // a rank's part of rank 0's forward: rank 0 alone reads logits
      follow_gather(logits);
      return Tensor::zeros({0, config_.vocab_size});
    }
    announce(LogitGather::kWhole);
    return backend_.to_host_f32(gather_logits(logits));
  });
}

namespace {

// A plain greedy pick of every row, and no logprobs: the argmax of each row is all it needs.
bool argmax_picks_suffice(std::span<const RowSampling> rows, const std::vector<TokenLogprobs>* logprobs) {
  if (logprobs && !rows_wanting_logprobs(rows).empty()) return false;
  return std::all_of(rows.begin(), rows.end(), [](const RowSampling& row) {
    return row.params.temperature == 0.0 && row.adjustments.empty() && !row.allowed;
  });
}

}  // namespace

std::vector<int32_t> ModelRunner::forward_picks(const ForwardBatch& batch, std::span<const RowSampling> rows,
                                                std::vector<TokenLogprobs>* logprobs,
                                                const std::function<void()>& before_pick) {
  DRIFT_CHECK(rows.size() == batch.logit_rows.size(), "{} sampling settings for {} logit rows", rows.size(),
              batch.logit_rows.size());
  DRIFT_CHECK(shard_.plan.rank == 0, "rank {} picks tokens: only rank 0 samples", shard_.plan.rank);
  return run_forward(batch, [&](const Tensor& local) {
    if (before_pick) before_pick();  // the device runs the forward meanwhile
    if (local.empty()) return std::vector<int32_t>();
    Tensor logits = local;
    if (shard_.plan.parallel()) {  // rows finished by before_pick decide what the ranks send
      if (argmax_picks_suffice(rows, logprobs)) {
        announce(LogitGather::kArgmax);
        return gather_argmax(local);
      }
      announce(LogitGather::kWhole);
      logits = gather_logits(local);
    }
    // Only the rows of requests that asked come to the host (a device backend keeps the rest),
    // taken before the pick: a device backend shapes its logits in place.
    const std::vector<int32_t> wanting = logprobs ? rows_wanting_logprobs(rows) : std::vector<int32_t>();
    Tensor asked;
    if (!wanting.empty()) {
      asked = scratch({static_cast<int64_t>(wanting.size()), config_.vocab_size}, DType::F32);
      backend_.gather_rows(logits, wanting, asked);
    }
    std::vector<int32_t> picks = backend_.pick_tokens(logits, rows);
    if (!wanting.empty()) *logprobs = rows_logprobs(backend_.to_host_f32(asked), wanting, true, rows, picks);
    return picks;
  });
}

Tensor ModelRunner::run_layers(const ForwardBatch& batch) {
  const int64_t t = batch.num_tokens();
  Tensor x = scratch({t, config_.hidden_size}, DType::F32);
  embed(batch.tokens, x);
  LayerScratch s = layer_scratch(t);
  backend_.rms_norm(x, weights_.layers[0].input_norm, static_cast<float>(config_.rms_norm_eps), s.h);
  for (int64_t i = 0; i < config_.num_layers; ++i) {
    attention_block(i, batch, x, s);
    mlp_block(i, x, s);
    if (auto it = captured_.find(static_cast<int32_t>(i)); it != captured_.end()) {
      it->second = scratch({t, config_.hidden_size}, DType::F32);  // readable until the next forward
      backend_.copy(x, it->second);
    }
  }
  const int64_t rows = static_cast<int64_t>(batch.logit_rows.size());
  if (rows == 0) return Tensor();
  backend_.form_normed_rows(block_input(x, weights_.final_norm, s));
  Tensor selected = scratch({rows, config_.hidden_size});
  backend_.gather_rows(s.h, batch.logit_rows, selected);
  Tensor logits = scratch({rows, weights_.lm_head.dim(0)}, DType::F32);  // this rank's vocabulary rows
  backend_.linear(selected, weights_.lm_head, Tensor(), logits);
  return logits;  // under tensor parallelism this rank's columns: forward / forward_picks gather them
}

}  // namespace drift
