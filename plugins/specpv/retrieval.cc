#include "retrieval.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace specpv {

SequenceSummaries::SequenceSummaries(const drift_host_api_t* host, const drift_model_info_t& model,
                                     int64_t capacity_blocks)
    : host_(host),
      layers_(model.num_layers),
      kv_heads_(model.num_kv_heads),
      head_dim_(model.head_dim),
      capacity_(capacity_blocks) {}

void SequenceSummaries::summarise(drift_seq_id_t seq, const drift_page_id_t* table, int64_t first, int64_t end) {
  if (end > capacity_)
    throw std::logic_error("block " + std::to_string(end) + " beyond the sequence's capacity of " +
                           std::to_string(capacity_) + " blocks");
  if (kmax_.empty()) {
    const std::vector<int64_t> shape = {layers_, capacity_, kv_heads_, head_dim_};
    kmax_ = Tensor(host_, DRIFT_DTYPE_F32, shape);
    kmin_ = Tensor(host_, DRIFT_DTYPE_F32, shape);
  }
  if (summary_start_ < 0 || first < summary_start_) {  // the first call fixes where summaries start
    summary_start_ = first;
    summarised_ = first;
  }
  const int64_t from = std::max(first, summarised_);
  if (end <= from) return;
  const auto n = static_cast<int32_t>(end - from);
  const int64_t per_block = kv_heads_ * head_dim_;
  for (int64_t l = 0; l < layers_; ++l) {
    const int64_t offset = (l * capacity_ + from) * per_block;
    drift_tensor_t hi = view(kmax_.get(), {n, kv_heads_, head_dim_}, offset);
    drift_tensor_t lo = view(kmin_.get(), {n, kv_heads_, head_dim_}, offset);
    check(host_->page_key_summary(host_->ctx, seq, static_cast<int32_t>(l), table + from, n, &hi, &lo),
          "page_key_summary");
  }
  summarised_ = end;
}

namespace {

void ensure(const drift_host_api_t* host, Tensor& t, int32_t dtype, std::vector<int64_t> shape) {
  int64_t want = 1;
  for (int64_t d : shape) want *= d;
  if (t.numel() < want) t = Tensor(host, dtype, {want});
}

}  // namespace

Retrieval SequenceSummaries::refresh(drift_seq_id_t seq, void* stream, const Settings& s, Workspace& work) {
  const drift_page_id_t* table = nullptr;
  int64_t table_pages = 0, committed = 0;  // the forward's KV is committed: its tokens count
  check(host_->block_table(host_->ctx, seq, &table, &table_pages, &committed), "block_table");
  const Bounds b = refresh_bounds(s, committed);
  if (b.buffer_block > table_pages) throw std::logic_error("the block table is shorter than the committed tokens");
  Retrieval r;
  r.committed = committed;
  r.window_block = b.window_block;
  r.buffer_block = b.buffer_block;
  const int64_t lists = layers_ * kv_heads_;
  const int64_t candidates = b.candidates();
  const int64_t k = std::min(s.n_retrieval_blocks, candidates);
  r.retrieved.assign(lists, {});
  if (k == 0) return r;
  if (k == candidates) {  // the budget covers every candidate: nothing to score
    for (auto& list : r.retrieved)
      for (int64_t blk = b.sink_end; blk < b.window_block; ++blk) list.push_back(blk);
    return r;
  }
  summarise(seq, table, b.sink_end, b.window_block);
  ensure(host_, work.scores, DRIFT_DTYPE_F32, {lists, candidates});
  ensure(host_, work.values, DRIFT_DTYPE_F32, {lists, k});
  ensure(host_, work.indices, DRIFT_DTYPE_I32, {lists, k});
  const drift_tensor_t scores = view(work.scores.get(), {lists, candidates}, 0);
  const int64_t per_block = kv_heads_ * head_dim_;
  for (int64_t l = 0; l < layers_; ++l) {
    drift_tensor_t q{};
    check(host_->query_states(host_->ctx, seq, static_cast<int32_t>(l), &q), "query_states");
    const int64_t offset = (l * capacity_ + b.sink_end) * per_block;
    const drift_tensor_t hi = view(kmax_.get(), {candidates, kv_heads_, head_dim_}, offset);
    const drift_tensor_t lo = view(kmin_.get(), {candidates, kv_heads_, head_dim_}, offset);
    drift_tensor_t out = view(scores, {kv_heads_, candidates}, l * kv_heads_ * candidates);
    check(host_->page_scores(host_->ctx, stream, &q, &hi, &lo, &out), "page_scores");
  }
  drift_tensor_t values = view(work.values.get(), {lists, k}, 0);
  drift_tensor_t indices = view(work.indices.get(), {lists, k}, 0);
  check(host_->top_k(host_->ctx, stream, &scores, static_cast<int32_t>(k), &values, &indices), "top_k");
  std::vector<int32_t> chosen(static_cast<size_t>(lists * k));
  drift_tensor_t on_host = indices;
  on_host.data = chosen.data();
  on_host.device = DRIFT_DEVICE_CPU;
  on_host.device_id = 0;
  check(host_->tensor_copy(host_->ctx, stream, &indices, &on_host), "tensor_copy");  // complete on return
  r.retrieved = retrieved_blocks(chosen, lists, k, b.sink_end);
  return r;
}

}  // namespace specpv
