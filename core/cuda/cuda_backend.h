#pragma once
// CudaBackend: the Backend on one NVIDIA GPU. Weights, KV and activations are bf16 or fp16 (the
// storage dtype chosen at construction), the residual stream and logits fp32, all accumulation
// fp32 (kernels/cuda). One stream carries
// every op; a forward's index metadata is uploaded once (begin_forward) and its temporaries come
// from a workspace arena reused across steps. Host-facing ops (to_host_f32) synchronise.
#include <cstdint>
#include <memory>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <cuda_runtime.h>

#include "core/backend.h"
#include "core/cuda/blas_gemm.h"
#include "core/cuda/cuda_device.h"
#include "core/cuda/device_arena.h"
#include "core/cuda/forward_upload.h"
#include "core/cuda/pinned_staging.h"
#include "kernels/cuda/ops.h"

namespace drift {

class CudaBackend final : public Backend {
 public:
  // Throws DriftError when no usable CUDA device is present or `storage` is neither BF16 nor F16.
  explicit CudaBackend(DType storage = DType::BF16);
  ~CudaBackend() override;

  std::string name() const override { return "cuda"; }
  Device device() const override { return Device::CUDA; }
  DType compute_dtype() const override { return storage_; }

  Tensor alloc(std::vector<int64_t> shape, DType dtype) override;
  Tensor scratch(std::vector<int64_t> shape, DType dtype) override;
  void begin_forward(const ForwardInputs& inputs) override;
  void end_forward() override;
  std::optional<Tensor> replay_forward() override;
  bool begin_forward_capture() override;
  void end_forward_capture(const Tensor& output, std::vector<Tensor> extras = {}) override;
  std::vector<Tensor> replayed_extras() const override { return replayed_extras_; }
  void set_forward_graphs(bool enabled) override { graphs_enabled_ = enabled; }
  bool records_forwards() const override { return graphs_enabled_; }
  Tensor upload(const Tensor& host_f32) override;
  // pair_span: kept in the paired-rows layout (kernels/cuda/ops.h: pair_rows) when it applies.
  Tensor load_weight(std::span<const RawTensor> row_blocks, int64_t pair_span = 0) override;
  Tensor to_host_f32(const Tensor& t) override;
  // MXFP4 experts stay 4-bit on the device (cuda_backend_moe.cpp).
  bool keeps_mxfp4() const override { return true; }
  Tensor load_bytes(const RawTensor& bytes) override;

  void embedding(const Tensor& table, const std::vector<int32_t>& ids, Tensor& out) override;
  void rms_norm(const Tensor& x, const Tensor& weight, float eps, Tensor& out) override;
  void linear(const Tensor& x, const Tensor& weight, const Tensor& bias, Tensor& out) override;
  void rope(Tensor& x, const std::vector<int32_t>& positions, const std::vector<float>& inv_freq,
            float attention_scale) override;
  void write_kv(LayerKV& kv, const Tensor& k, const Tensor& v, const AttentionMetadata& meta) override;
  void qkv_rope_write(const Tensor& qkv, Tensor& q, Tensor& k, Tensor& v, LayerKV& kv,
                      const std::vector<int32_t>& positions, const std::vector<float>& inv_freq, float attention_scale,
                      const AttentionMetadata& meta) override;
  void linear_qkv_rope_write(const Tensor& x, const Tensor& weight, const Tensor& bias, Tensor& qkv, Tensor& q,
                             Tensor& k, Tensor& v, LayerKV& kv, const std::vector<int32_t>& positions,
                             const std::vector<float>& inv_freq, float attention_scale,
                             const AttentionMetadata& meta) override;
  void attention(const Tensor& q, const LayerKV& kv, const AttentionMetadata& meta, float scale, int64_t block_size,
                 Tensor& out) override;
  // Sinks and windows (GPT-OSS) in the flash kernels (head_dim 16-128) and the chunked one.
  void attention_variant(const Tensor& q, const LayerKV& kv, const AttentionMetadata& meta, float scale,
                         int64_t block_size, const AttentionVariant& variant, Tensor& out) override;
  // Routing, grouping and the experts on the device (cuda_backend_moe.cpp).
  void moe_mlp(const Tensor& x, const MoeWeights& weights, const MoeShape& shape, Tensor& out) override;
  void silu_mul(const Tensor& gate_up, Tensor& out) override;
  void linear_swiglu(const Tensor& x, const Tensor& gate_up, Tensor& gate_up_out, Tensor& act) override;
  void add_inplace(Tensor& x, const Tensor& y) override;
  void add_rms_norm(Tensor& residual, const Tensor& delta, const Tensor& weight, float eps, Tensor& out) override;
  // The residual stream between pre-norm blocks (cuda_backend_residual.cpp).
  bool linear_add_residual(const Tensor& x, const Tensor& weight, const Tensor& bias, Tensor& delta, Tensor& residual,
                           const NextNorm& next) override;
  void form_normed_rows(const NormedRows& in) override;
  void normed_linear_qkv_rope_write(const NormedRows& in, const Tensor& weight, const Tensor& bias, Tensor& qkv,
                                    Tensor& q, Tensor& k, Tensor& v, LayerKV& kv, const std::vector<int32_t>& positions,
                                    const std::vector<float>& inv_freq, float attention_scale,
                                    const AttentionMetadata& meta) override;
  void normed_linear_swiglu(const NormedRows& in, const Tensor& gate_up, Tensor& gate_up_out, Tensor& act) override;
  void split_columns(const Tensor& x, const std::vector<Tensor*>& outs) override;
  void join_columns(const std::vector<const Tensor*>& parts, Tensor& out) override;
  void gather_rows(const Tensor& x, const std::vector<int32_t>& rows, Tensor& out) override;
  void copy(const Tensor& src, Tensor& dst) override;
  void silu_mul_pair(const Tensor& gate, const Tensor& up, Tensor& out) override;
  void softmax(const Tensor& x, float temperature, Tensor& out) override;
  void top_k(const Tensor& x, int32_t k, Tensor& values, Tensor& indices) override;
  void key_summary(const Tensor& keys, std::span<const int32_t> pages, std::span<const int32_t> filled,
                   int64_t block_size, Tensor& kmax, Tensor& kmin) override;
  void page_scores(const Tensor& q, const Tensor& kmax, const Tensor& kmin, Tensor& out) override;
  void convert(const Tensor& src, Tensor& dst) override;
  std::vector<int32_t> pick_tokens(const Tensor& logits, std::span<const RowSampling> rows) override;
  void shape_logits(const Tensor& logits, std::span<const RowSampling> rows);
  void mask_logits(const Tensor& logits, std::span<const RowSampling> rows);
  void* stream_handle() override { return stream_; }
  std::optional<size_t> free_device_memory() override;
  void copy_page(std::vector<LayerKV>& layers, int32_t src, int32_t dst, int64_t block_size) override;
  void copy_slots(std::vector<LayerKV>& layers, std::span<const int64_t> src, std::span<const int64_t> dst) override;

  // Device argmax of fp32 logits [rows, vocab] (greedy decoding without the logits crossing the bus).
  std::vector<int32_t> argmax(const Tensor& logits);
  cudaStream_t stream() const { return stream_; }
  void synchronize() override;

 private:
  Tensor host_result(const std::vector<int64_t>& shape);
  const int32_t* device_ints(const std::vector<int32_t>& host);
  template <typename T>
  T* device_copy(std::span<const T> host);  // arena copy, ordered on the stream
  // The columns of each fp32 row by descending value (the host sampler's order), in the arena.
  const int32_t* sorted_columns(const float* x, int64_t rows, int64_t cols);
  // x itself when it is fp32, else an fp32 copy in the arena.
  const float* as_f32(const Tensor& x);
  std::vector<int32_t> read_ints(const int32_t* device, int64_t count);
  const float* device_floats(const std::vector<float>& host);
  const cuda_backend::DeviceAttention& device_attention(const AttentionMetadata& meta);
  // Whether a weight of `rows` rows loaded with pair_span `span` is in the paired-rows layout: the
  // one rule load_weight and the fused ops share (the weight itself does not record it).
  bool pairs_rows(int64_t rows, int64_t span) const {
    return paired_weights_ && span > 0 && cuda::can_pair_rows(rows, span);
  }
  // A factored in's row scales, its tensors checked (a workspace for them above 8 rows); nullopt
  // when in is formed.
  std::optional<cuda::RowScales> row_scales(const NormedRows& in, int64_t rows);
  // The scaled projection of more than 32 factored rows (cuda_backend_residual.cpp).
  template <typename Finish>
  void scaled_projection(const NormedRows& in, const cuda::RowScales& scales, const Tensor& weight, int64_t rows,
                         Finish finish);
  // The most fp32 output one chunk of a scaled projection writes: 256 MB by default
  // (DRIFT_CUDA_SCALED_OUTPUT_MB), so an 8K prefill at the 8B shape runs q/k/v as one GEMM and
  // gate/up as four.
  int64_t scaled_output_cap_floats_ = int64_t{64} << 20;
  float* scaled_output_ = nullptr;  // this forward's (begin_forward drops it with the arena)
  int64_t scaled_output_floats_ = 0;
  cuda::RopeQkvOutputs rope_qkv_outputs(Tensor& q, LayerKV& kv, const std::vector<int32_t>& positions,
                                        const std::vector<float>& inv_freq, float attention_scale,
                                        const AttentionMetadata& meta);

  // First member: checked before any other member's constructor calls the CUDA runtime.
  int device_ = cuda_backend::require_cuda_device();
  DType storage_ = DType::BF16;
  cuda::ElemType storage_type_ = cuda::ElemType::BF16;
  cudaStream_t stream_ = nullptr;
  cuda_backend::DeviceArena arena_;
  std::unique_ptr<cuda_backend::BlasGemm> gemm_;
  bool blas_broken_ = false;  // cuBLASLt refused a shape: large GEMMs use the skinny kernel  // created once the device is known good
  cuda_backend::ForwardUpload upload_;
  cuda_backend::PinnedStaging staging_;            // small uploads outside the forward's own
  cuda_backend::DeviceAttention adhoc_attention_;  // a plugin's attention call outside the forward
  void* attention_workspace_ = nullptr;
  int64_t attention_workspace_bytes_ = 0;
  // Recorded forwards by shape key (see Backend::replay_forward); valid while neither the arena
  // nor the upload buffer moved (their generations at recording time).
  struct ForwardGraph {
    cudaGraphExec_t exec = nullptr;
    Tensor output;
    std::vector<Tensor> extras;                     // further outputs, in the recording's scratch
    cuda_backend::DeviceArena::Position arena_end;  // the recording's scratch ends here
  };
  std::vector<Tensor> replayed_extras_;  // of the graph replayed last
  void clear_graphs();
  bool graphs_enabled_ = true;
  bool paired_weights_ = true;  // load_weight honours pair_span
  bool capturing_ = false;
  std::unordered_map<uint64_t, ForwardGraph> graphs_;
  std::unordered_set<uint64_t> seen_shapes_;  // run once eagerly: the next one is recorded
  uint64_t graph_generation_ = 0;             // arena + upload generations the graphs belong to
  std::shared_ptr<void> pinned_;  // host memory of the last to_host_f32 result
  size_t pinned_bytes_ = 0;
  std::vector<std::pair<std::vector<float>, std::shared_ptr<float>>> frequency_tables_;
};

}  // namespace drift
