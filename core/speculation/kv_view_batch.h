#pragma once
// The verification policy's views in the forward batch. A partial view (SpecPV) makes a verify
// chunk attend, at each layer (and kv head), to a page list followed by its tail instead of its
// whole block table; views that keep queries make the forward keep the verify rows' post-RoPE
// queries for host->query_states.
#include <cstdint>
#include <map>
#include <span>

#include "core/forward_batch.h"
#include "core/plugin/plugin_types.h"
#include "core/scheduler.h"

namespace drift {

struct KvViewShape {
  int64_t num_layers = 0;
  int64_t num_kv_heads = 0;
  int64_t block_size = 0;
};

// Where a sequence's rows sit in the forward's query capture (ModelExecutor::captured_queries).
struct QueryRows {
  int64_t first = 0;
  int64_t count = 0;
};

// Lays `views` (one per chunk of `scheduled`; KvView::full for chunks without a partial view) into
// `batch`, built by build_forward_batch from the same `scheduled`:
//  - when a chunk has a partial view, batch.layer_attention gets one AttentionMetadata per layer:
//    that chunk's tokens attend to the layer's list (per kv head when the view is) followed by the
//    chunk's tail -- the block holding its root and the blocks after it -- with visible lengths
//    and tree-mask starts moved into the list's positions; every other chunk keeps its whole
//    block table;
//  - the verify rows (root, then nodes) of chunks whose view keeps queries go to batch.query_rows.
// Returns each keeping sequence's rows in the query capture.
std::map<int64_t, QueryRows> apply_kv_views(ForwardBatch& batch, const SchedulerOutput& scheduled,
                                            std::span<const KvView> views, const KvViewShape& shape);

}  // namespace drift
