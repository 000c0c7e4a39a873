#include "core/plugin/engine_state_services.h"

#include <algorithm>

namespace drift {

EngineStateServices::EngineStateServices(SequenceLookup lookup, const KVCacheManager& kv, const Scheduler& scheduler,
                                         const ModelExecutor& executor)
    : lookup_(std::move(lookup)), kv_(kv), scheduler_(scheduler), executor_(executor) {}

void EngineStateServices::install(HostCallbacks& cb) {
  cb.sequence_tokens = [this](drift_seq_id_t id, const drift_token_t** tokens, int64_t* n) {
    return sequence_tokens(id, tokens, n);
  };
  cb.block_table = [this](drift_seq_id_t id, const drift_page_id_t** pages, int64_t* num_pages, int64_t* num_tokens) {
    return block_table(id, pages, num_pages, num_tokens);
  };
  cb.page_info = [this](drift_page_id_t page, drift_page_info_t* info) { return page_info(page, info); };
  cb.query_states = [this](drift_seq_id_t id, int32_t layer, drift_tensor_t* out) {
    return query_states(id, layer, out);
  };
  cb.hidden_states = [this](drift_seq_id_t id, int32_t layer, drift_tensor_t* out) {
    return hidden_states(id, layer, out);
  };
}

void EngineStateServices::record_forward(const SchedulerOutput& scheduled) {
  rows_.clear();
  int64_t row = 0;
  for (const ScheduledChunk& chunk : scheduled.chunks) {
    rows_[chunk.seq->id] = Rows{row, chunk.count};
    row += chunk.count;
  }
}

void EngineStateServices::keep_rows(int64_t seq, int64_t kept) {
  if (auto it = rows_.find(seq); it != rows_.end()) it->second.count = kept;
}

void EngineStateServices::begin_step() {
  token_views_.clear();
  token_view_index_.clear();
}

drift_status_t EngineStateServices::sequence_tokens(drift_seq_id_t id, const drift_token_t** tokens, int64_t* n) {
  const Sequence* seq = lookup_(id);
  if (!seq) return DRIFT_ERROR_NOT_FOUND;
  if (!tokens || !n) return DRIFT_ERROR_INVALID_ARGUMENT;
  const std::vector<drift_token_t>*& view = token_view_index_[{id, seq->total_len()}];
  if (!view) {
    std::vector<drift_token_t>& joined = token_views_.emplace_back(seq->prompt.begin(), seq->prompt.end());
    joined.insert(joined.end(), seq->output.begin(), seq->output.end());
    view = &joined;
  }
  *tokens = view->data();
  *n = static_cast<int64_t>(view->size());
  return DRIFT_OK;
}

drift_status_t EngineStateServices::block_table(drift_seq_id_t id, const drift_page_id_t** pages, int64_t* num_pages,
                                                int64_t* num_tokens) const {
  const Sequence* seq = lookup_(id);
  if (!seq || seq->kv < 0 || !kv_.has_sequence(seq->kv)) return DRIFT_ERROR_NOT_FOUND;
  if (!pages || !num_pages || !num_tokens) return DRIFT_ERROR_INVALID_ARGUMENT;
  const auto& table = kv_.block_table(seq->kv);
  *pages = table.data();
  *num_pages = static_cast<int64_t>(table.size());
  *num_tokens = seq->num_computed;  // slots reserved for this step's tokens hold no KV yet
  return DRIFT_OK;
}

// Slots of `page` holding KV: the most any running sequence has written into it; a page only
// cache managers hold is full (they are only ever offered full pages).
int32_t EngineStateServices::tokens_in_page(drift_page_id_t page) const {
  if (kv_.ref_count(page) == 0) return 0;
  const int64_t bs = kv_.block_size();
  int64_t most = -1;
  for (const Sequence* seq : scheduler_.running()) {
    if (seq->kv < 0 || !kv_.has_sequence(seq->kv)) continue;
    const auto& table = kv_.block_table(seq->kv);
    for (size_t b = 0; b < table.size(); ++b)
      if (table[b] == page)
        most = std::max(most, std::clamp<int64_t>(seq->num_computed - static_cast<int64_t>(b) * bs, 0, bs));
  }
  return static_cast<int32_t>(most < 0 ? bs : most);
}

drift_status_t EngineStateServices::page_info(drift_page_id_t page, drift_page_info_t* info) const {
  if (!info || info->struct_size < offsetof(drift_page_info_t, ref_count)) return DRIFT_ERROR_INVALID_ARGUMENT;
  if (page < 0 || page >= kv_.num_pages()) return DRIFT_ERROR_NOT_FOUND;
  if (DRIFT_HAS_FIELD(info, drift_page_info_t, ref_count)) info->ref_count = kv_.ref_count(page);
  if (DRIFT_HAS_FIELD(info, drift_page_info_t, num_tokens)) info->num_tokens = tokens_in_page(page);
  return DRIFT_OK;
}

drift_status_t EngineStateServices::hidden_states(drift_seq_id_t id, int32_t layer, drift_tensor_t* out) const {
  if (!out || std::find(capture_layers_.begin(), capture_layers_.end(), layer) == capture_layers_.end())
    return DRIFT_ERROR_INVALID_ARGUMENT;
  auto rows = rows_.find(id);
  const Tensor* captured = executor_.captured(layer);
  if (rows == rows_.end() || !captured || captured->ndim() != 2) return DRIFT_ERROR_NOT_FOUND;
  const int64_t hidden = captured->dim(1);
  drift_tensor_t view{};
  view.data = static_cast<char*>(const_cast<void*>(captured->data())) +
              rows->second.first * hidden * static_cast<int64_t>(dtype_size(captured->dtype()));
  view.dtype = to_drift_dtype(captured->dtype());
  view.device = to_drift_device(captured->device());
  view.ndim = 2;
  view.shape[0] = rows->second.count;
  view.shape[1] = hidden;
  view.strides[0] = hidden;
  view.strides[1] = 1;
  *out = view;
  return DRIFT_OK;
}

drift_status_t EngineStateServices::query_states(drift_seq_id_t id, int32_t layer, drift_tensor_t* out) const {
  if (!out) return DRIFT_ERROR_INVALID_ARGUMENT;
  auto rows = query_rows_.find(id);
  const Tensor* kept = executor_.captured_queries(layer);
  if (rows == query_rows_.end() || !kept || kept->ndim() != 2) return DRIFT_ERROR_NOT_FOUND;
  const int64_t width = kept->dim(1);
  const int64_t head_dim = head_dim_ > 0 && width % head_dim_ == 0 ? head_dim_ : width;
  drift_tensor_t view{};
  view.data = static_cast<char*>(const_cast<void*>(kept->data())) +
              rows->second.first * width * static_cast<int64_t>(dtype_size(kept->dtype()));
  view.dtype = to_drift_dtype(kept->dtype());
  view.device = to_drift_device(kept->device());
  view.ndim = 3;
  view.shape[0] = rows->second.count;
  view.shape[1] = width / head_dim;
  view.shape[2] = head_dim;
  view.strides[0] = width;
  view.strides[1] = head_dim;
  view.strides[2] = 1;
  *out = view;
  return DRIFT_OK;
}

}  // namespace drift
