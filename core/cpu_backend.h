#pragma once
// CpuBackend: the fp32 reference implementation of Backend over kernels/cpu.
#include "core/backend.h"

namespace drift {

class CpuBackend final : public Backend {
 public:
  std::string name() const override { return "cpu"; }
  Device device() const override { return Device::CPU; }
  DType compute_dtype() const override { return DType::F32; }

  Tensor alloc(std::vector<int64_t> shape, DType dtype) override;
  Tensor upload(const Tensor& host_f32) override { return host_f32; }
  Tensor to_host_f32(const Tensor& t) override { return t; }

  void embedding(const Tensor& table, const std::vector<int32_t>& ids, Tensor& out) override;
  void rms_norm(const Tensor& x, const Tensor& weight, float eps, Tensor& out) override;
  void linear(const Tensor& x, const Tensor& weight, const Tensor& bias, Tensor& out) override;
  void rope(Tensor& x, const std::vector<int32_t>& positions, const std::vector<float>& inv_freq,
            float attention_scale) override;
  void write_kv(LayerKV& kv, const Tensor& k, const Tensor& v, const AttentionMetadata& meta) override;
  void attention(const Tensor& q, const LayerKV& kv, const AttentionMetadata& meta, float scale,
                 int64_t block_size, Tensor& out) override;
  void attention_variant(const Tensor& q, const LayerKV& kv, const AttentionMetadata& meta, float scale,
                         int64_t block_size, const AttentionVariant& variant, Tensor& out) override;
  void moe_mlp(const Tensor& x, const MoeWeights& weights, const MoeShape& shape, Tensor& out) override;
  void silu_mul(const Tensor& gate_up, Tensor& out) override;
  void add_inplace(Tensor& x, const Tensor& y) override;
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
  void copy_page(std::vector<LayerKV>& layers, int32_t src, int32_t dst, int64_t block_size) override;
  void copy_slots(std::vector<LayerKV>& layers, std::span<const int64_t> src, std::span<const int64_t> dst) override;
};

}  // namespace drift
