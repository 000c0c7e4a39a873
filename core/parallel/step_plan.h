#pragma once
// The step plan: what rank 0 sends the other tensor-parallel ranks so that they run the same
// model operations it does, in the same order (docs/tensor_parallel.md). Rank 0 alone schedules,
// drafts, samples and keeps the KV page tables; the others receive each forward's whole batch
// (tokens, positions, slots, block tables, tree masks) and each KV page copy or slot move, and
// run their shard of it.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/forward_batch.h"

namespace drift {

enum class StepCommand : uint8_t {
  kForward = 1,          // run a ForwardBatch (logits gathered to rank 0)
  kCopyPage = 2,         // ModelExecutor::copy_page
  kMoveSlots = 3,        // ModelExecutor::move_slots
  kCopyWindowPage = 4,   // ModelExecutor::copy_window_page
  kMoveWindowSlots = 5,  // ModelExecutor::move_window_slots
  kShutdown = 6,         // the engine is closing: exit
};

// One command with its arguments (only those of its kind are set).
struct StepPlanItem {
  StepCommand command = StepCommand::kShutdown;
  ForwardBatch batch;                         // kForward
  int32_t src_page = 0, dst_page = 0;         // kCopyPage, kCopyWindowPage
  std::vector<int64_t> src_slots, dst_slots;  // kMoveSlots, kMoveWindowSlots
};

std::vector<uint8_t> encode_forward(const ForwardBatch& batch);
std::vector<uint8_t> encode_page_copy(StepCommand command, int32_t src, int32_t dst);  // kCopy*Page
std::vector<uint8_t> encode_slot_moves(StepCommand command, std::span<const int64_t> src,
                                       std::span<const int64_t> dst);  // kMove*Slots
std::vector<uint8_t> encode_shutdown();
// Throws DriftError for bytes that are not a step (truncated, an unknown command).
StepPlanItem decode_step(const std::vector<uint8_t>& bytes);

// What a rank loads, from rank 0, so every rank runs the same model with the same KV pages.
struct RankSetup {
  std::string model_path;
  std::string backend;  // engine.backend
  std::string dtype;    // engine.dtype
  int64_t num_threads = 0;         // CPU threads of each rank on rank 0's machine
  int64_t remote_num_threads = 0;  // of each rank elsewhere (0: that machine's cores)
  int32_t local_ranks = 0;         // ranks 0 .. local_ranks - 1 share rank 0's machine
  int64_t block_size = 0;
  int64_t num_pages = 0;
  int64_t window_pages = 0;
  int64_t timeout_ms = 0;  // how long a collective waits for a rank
  int32_t log_level = 2;   // spdlog's level
};

std::vector<uint8_t> encode_setup(const RankSetup& setup);
RankSetup decode_setup(const std::vector<uint8_t>& bytes);

}  // namespace drift
