#include "core/parallel/tensor_parallel_executor.h"

#include <spdlog/spdlog.h>

#include "core/error.h"

namespace drift {

TensorParallelExecutor::TensorParallelExecutor(TensorParallelGroup group, std::unique_ptr<ModelRunner> runner)
    : group_(std::move(group)), runner_(std::move(runner)) {}

// Each rank is told to exit on its own (one that cannot be told must not keep the others waiting),
// the links are closed (a rank elsewhere sees its link close), then this machine's ranks are reaped.
TensorParallelExecutor::~TensorParallelExecutor() {
  bool told_all = failure_.empty();
  if (told_all) {
    const std::vector<uint8_t> bytes = encode_shutdown();
    for (int r = 1; r < size(); ++r) {
      try {
        group_.communicator->link(r).send(FrameTag::kCommand, bytes, std::chrono::seconds(2));
      } catch (const std::exception& e) {
        spdlog::warn("tensor parallel: telling rank {} to exit: {}", r, e.what());
        told_all = false;
      }
    }
  }
  runner_.reset();
  group_.communicator.reset();
  group_.ranks->reap(told_all ? 10000 : 0);  // after a failure the ranks are killed at once
}

const ModelWeights& TensorParallelExecutor::shared_weights() {
  if (!shared_weights_loaded_) {
    DRIFT_CHECK(load_shared_weights_, "no loader for the shared weights");
    shared_weights_ = load_shared_weights_();
    shared_weights_loaded_ = true;
  }
  return shared_weights_;
}

template <typename Local>
auto TensorParallelExecutor::run(std::vector<uint8_t> command, Local local) {
  if (!failure_.empty()) fail("the tensor-parallel engine stopped after an earlier error: {}", failure_);
  try {
    group_.communicator->broadcast(command);
    return local();
  } catch (const std::exception& e) {
    failure_ = e.what();
    spdlog::error("tensor parallel: {}", failure_);
    throw;
  }
}

Tensor TensorParallelExecutor::forward(const ForwardBatch& batch) {
  return run(encode_forward(batch), [&] { return runner_->forward(batch); });
}

std::vector<int32_t> TensorParallelExecutor::forward_picks(const ForwardBatch& batch, std::span<const RowSampling> rows,
                                                           std::vector<TokenLogprobs>* logprobs,
                                                           const std::function<void()>& before_pick) {
  return run(encode_forward(batch), [&] { return runner_->forward_picks(batch, rows, logprobs, before_pick); });
}

void TensorParallelExecutor::copy_page(int32_t src, int32_t dst) {
  run(encode_page_copy(StepCommand::kCopyPage, src, dst), [&] { runner_->copy_page(src, dst); });
}

void TensorParallelExecutor::move_slots(std::span<const int64_t> src, std::span<const int64_t> dst) {
  run(encode_slot_moves(StepCommand::kMoveSlots, src, dst), [&] { runner_->move_slots(src, dst); });
}

void TensorParallelExecutor::copy_window_page(int32_t src, int32_t dst) {
  run(encode_page_copy(StepCommand::kCopyWindowPage, src, dst), [&] { runner_->copy_window_page(src, dst); });
}

void TensorParallelExecutor::move_window_slots(std::span<const int64_t> src, std::span<const int64_t> dst) {
  run(encode_slot_moves(StepCommand::kMoveWindowSlots, src, dst), [&] { runner_->move_window_slots(src, dst); });
}

}  // namespace drift
