#include "draft_head.h"

namespace eagle3 {

DraftHead::DraftHead(const Host& host, HeadConfig config, HeadWeights weights)
    : host_(host), config_(std::move(config)), w_(std::move(weights)) {}

drift_tensor_t DraftHead::fuse_hidden(const drift_tensor_t& aux, Workspace& ws, const std::string& tag) const {
  const drift_tensor_t h = ws.get(tag + ".h", host_.activation_dtype(), {aux.shape[0], config_.hidden_size});
  host_.gemm(aux, w_.fc.get(), h);
  return h;
}

drift_tensor_t DraftHead::forward(const DraftBatch& batch, Workspace& ws, const std::string& tag) const {
  const int32_t act = host_.activation_dtype();
  const auto n = static_cast<int64_t>(batch.tokens.size());
  const int64_t H = config_.hidden_size, I = config_.intermediate_size;
  const int64_t q_width = config_.num_heads * config_.head_dim, kv_width = config_.num_kv_heads * config_.head_dim;
  const float eps = static_cast<float>(config_.rms_norm_eps);

  // a = cat(rms(embed(x)), rms(h))
  const drift_tensor_t emb = ws.get("emb", act, {n, H});
  host_.embedding(w_.embed, batch.tokens, emb);
  const drift_tensor_t emb_n = ws.get("emb_n", act, {n, H});
  const drift_tensor_t h_n = ws.get("h_n", act, {n, H});
  host_.rms_norm(emb, w_.input_norm.get(), eps, emb_n);
  host_.rms_norm(batch.h, w_.hidden_norm.get(), eps, h_n);
  const drift_tensor_t a = ws.get("a", act, {n, 2 * H});
  host_.concat({emb_n, h_n}, a);

  // Attention over each sequence's own draft KV.
  const drift_tensor_t q = ws.get("q", act, {n, config_.num_heads, config_.head_dim});
  const drift_tensor_t k = ws.get("k", act, {n, config_.num_kv_heads, config_.head_dim});
  const drift_tensor_t v = ws.get("v", act, {n, config_.num_kv_heads, config_.head_dim});
  host_.gemm(a, w_.q.get(), view(q, {n, q_width}));
  host_.gemm(a, w_.k.get(), view(k, {n, kv_width}));
  host_.gemm(a, w_.v.get(), view(v, {n, kv_width}));
  host_.rope(q, batch.positions);
  host_.rope(k, batch.positions);
  const drift_tensor_t attn = ws.get("attn", act, {n, config_.num_heads, config_.head_dim});
  attend(batch, q, k, v, attn);

  // r = o(attn) + residual; y = mlp(rms(r)) + r
  const drift_tensor_t r = ws.get(tag + ".r", act, {n, H});
  host_.gemm(view(attn, {n, q_width}), w_.o.get(), r);
  host_.add(r, config_.norm_before_residual ? h_n : batch.h, r);
  const drift_tensor_t r_n = ws.get("r_n", act, {n, H});
  host_.rms_norm(r, w_.post_norm.get(), eps, r_n);
  const drift_tensor_t gate = ws.get("gate", act, {n, I});
  const drift_tensor_t up = ws.get("up", act, {n, I});
  host_.gemm(r_n, w_.gate.get(), gate);
  host_.gemm(r_n, w_.up.get(), up);
  host_.silu_mul(gate, up, gate);
  const drift_tensor_t y = ws.get(tag + ".y", act, {n, H});
  host_.gemm(gate, w_.down.get(), y);
  host_.add(y, r, y);
  return y;
}

void DraftHead::attend(const DraftBatch& batch, const drift_tensor_t& q, const drift_tensor_t& k,
                       const drift_tensor_t& v, drift_tensor_t attn) const {
  for (const SeqRows& s : batch.seqs) {
    DraftCache& cache = *s.cache;
    cache.write(s.cache_row, rows(k, s.first_row, s.count), rows(v, s.first_row, s.count));
    const drift_tensor_t q_rows = rows(q, s.first_row, s.count);
    const drift_tensor_t out = rows(attn, s.first_row, s.count);
    std::vector<int32_t> q_positions(static_cast<size_t>(s.count));
    for (int64_t i = 0; i < s.count; ++i) q_positions[i] = static_cast<int32_t>(s.cache_row + i);
    const drift_tensor_t positions = host_ints(q_positions);
    drift_attention_args_t args{};
    args.q = &q_rows;
    cache.attend_over(s.cache_row + s.count, args);
    args.out = const_cast<drift_tensor_t*>(&out);
    if (s.tree) {
      args.mask = s.mask.data();
      args.mask_offset = cache.length();
    } else {
      args.q_positions = &positions;
    }
    host_.attention(args);
  }
}

TopK DraftHead::top_k(const drift_tensor_t& y, const std::vector<int32_t>& which, int32_t k, Workspace& ws,
                      std::vector<float>* logits_out) const {
  const auto m = static_cast<int64_t>(which.size());
  const int64_t H = config_.hidden_size, V = config_.draft_vocab_size;
  TopK out;
  out.k = static_cast<int32_t>(std::min<int64_t>(k, V));
  if (m == 0) return out;
  const int32_t act = host_.activation_dtype();
  const drift_tensor_t picked = ws.get("picked", act, {m, H});
  host_.embedding(y, which, picked);  // a row gather: y is a table of rows
  host_.rms_norm(picked, w_.norm.get(), static_cast<float>(config_.rms_norm_eps), picked);
  const drift_tensor_t logits = ws.get("logits", DRIFT_DTYPE_F32, {m, V});
  host_.gemm(picked, w_.lm_head, logits);
  if (logits_out) {
    logits_out->assign(static_cast<size_t>(m * V), 0.0f);
    drift_tensor_t dst = logits;
    dst.data = logits_out->data();
    dst.device = DRIFT_DEVICE_CPU;
    host_.copy(logits, dst);
  }
  host_.softmax(logits, logits);
  const drift_tensor_t values = ws.get("topk.values", DRIFT_DTYPE_F32, {m, out.k});
  const drift_tensor_t indices = ws.get("topk.indices", DRIFT_DTYPE_I32, {m, out.k});
  host_.top_k(logits, out.k, values, indices);
  out.probs.resize(static_cast<size_t>(m * out.k));
  out.tokens.resize(out.probs.size());
  drift_tensor_t probs_dst = values, ids_dst = indices;
  probs_dst.data = out.probs.data();
  probs_dst.device = DRIFT_DEVICE_CPU;
  ids_dst.data = out.tokens.data();
  ids_dst.device = DRIFT_DEVICE_CPU;
  host_.copy(values, probs_dst);
  host_.copy(indices, ids_dst);
  for (int32_t& id : out.tokens) id = w_.draft_to_target[static_cast<size_t>(id)];
  return out;
}

}  // namespace eagle3
