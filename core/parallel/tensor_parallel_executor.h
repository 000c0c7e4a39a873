#pragma once
// TensorParallelExecutor: rank 0's ModelExecutor (docs/tensor_parallel.md). The engine above it is
// the one-GPU engine unchanged: scheduling, KV page tables, drafting, verification and sampling
// stay on rank 0. Each forward and each KV page copy or slot move is sent to the other ranks as
// the step's plan first, then run here on rank 0's shard; the ranks meet inside the forward (the
// all-reduces) and rank 0 gets the whole logit rows. Once a rank fails, every later call throws the
// first error: the ranks are no longer in step.
#include <memory>
#include <string>

#include "core/forward_batch.h"
#include "core/model/model_runner.h"
#include "core/parallel/step_plan.h"
#include "core/parallel/tensor_parallel_group.h"

namespace drift {

class TensorParallelExecutor final : public ModelExecutor {
 public:
  // `runner` is rank 0's shard, built over group.communicator.
  TensorParallelExecutor(TensorParallelGroup group, std::unique_ptr<ModelRunner> runner);
  ~TensorParallelExecutor() override;  // the other ranks are told to exit, then reaped

  int64_t vocab_size() const override { return runner_->vocab_size(); }
  Tensor forward(const ForwardBatch& batch) override;
  std::vector<int32_t> forward_picks(const ForwardBatch& batch, std::span<const RowSampling> rows,
                                     std::vector<TokenLogprobs>* logprobs = nullptr,
                                     const std::function<void()>& before_pick = {}) override;
  void copy_page(int32_t src, int32_t dst) override;
  void move_slots(std::span<const int64_t> src, std::span<const int64_t> dst) override;
  void copy_window_page(int32_t src, int32_t dst) override;
  void move_window_slots(std::span<const int64_t> src, std::span<const int64_t> dst) override;
  // Captures stay on rank 0: the residual stream is whole on every rank.
  void set_capture_layers(std::vector<int32_t> layers) override { runner_->set_capture_layers(std::move(layers)); }
  const Tensor* captured(int32_t layer) const override { return runner_->captured(layer); }
  void reorder_captured(const std::vector<int32_t>& rows) override { runner_->reorder_captured(rows); }

  std::string broken() const override { return failure_; }
  ModelRunner& runner() { return *runner_; }
  // The whole embedding, final norm and LM head for plugins (host->model_weight): rank 0's runner
  // holds only its vocabulary rows. Loaded by `load` when a plugin first asks (a draft head that
  // reads them; most plugins never do), and kept as long as the executor.
  void set_shared_weights_loader(std::function<ModelWeights()> load) { load_shared_weights_ = std::move(load); }
  const ModelWeights& shared_weights();
  bool shared_weights_loaded() const { return shared_weights_loaded_; }
  int size() const { return group_.communicator->size(); }
  // The process id of a rank this machine started (tests stop one to see the engine end).
  pid_t rank_pid(int rank) const { return group_.ranks->pid_of(rank); }

 private:
  // Sends the encoded command to the other ranks, then runs `local` on rank 0; a failure poisons
  // the executor.
  template <typename Local>
  auto run(std::vector<uint8_t> command, Local local);

  TensorParallelGroup group_;
  std::unique_ptr<ModelRunner> runner_;
  std::function<ModelWeights()> load_shared_weights_;
  ModelWeights shared_weights_;
  bool shared_weights_loaded_ = false;
  std::string failure_;  // the first error, once any call failed
};

}  // namespace drift
