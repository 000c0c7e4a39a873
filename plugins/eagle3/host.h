#pragma once
// Host: the eagle3 plugin's C++ face of drift_host_api_t's compute and state services, on the
// stream of the running hook. Every service call is checked (drift::plugin::check); a failure
// throws an Error naming the service, which the hook boundary (eagle3.cc, drift::plugin::guard)
// turns into a status -- exceptions never cross the C ABI.
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <vector>

#include "drift/plugin.h"
#include "drift/plugin_helpers.hpp"

namespace eagle3 {

// The generic pieces come from the public C++ helper: a failure carries its status (Error,
// fail), a plugin-owned tensor is freed through the host (Tensor), views describe parts of one.
using HostError = drift::plugin::Error;
using drift::plugin::element_size;
using drift::plugin::fail;
using drift::plugin::numel;
using drift::plugin::rows;
using drift::plugin::Tensor;
using drift::plugin::view;

class Host {
 public:
  explicit Host(const drift_host_api_t* api);

  const drift_host_api_t* api() const { return api_; }
  const drift_model_info_t& model() const { return *model_; }
  int32_t activation_dtype() const { return model_->activation_dtype; }
  void set_stream(void* stream) { stream_ = stream; }
  void log(int32_t level, const std::string& message) const;

  // Memory.
  Tensor alloc(int32_t dtype, const std::vector<int64_t>& shape) const;
  void copy(const drift_tensor_t& src, drift_tensor_t dst) const;  // dst may be a view
  std::vector<Tensor> load(const std::string& path, const std::vector<std::string>& names) const;
  bool model_weight(const char* name, drift_tensor_t& out) const;  // false: the target has none

  // Engine state.
  drift_tensor_t hidden_states(drift_seq_id_t seq, int32_t layer) const;
  std::vector<drift_token_t> sequence_tokens(drift_seq_id_t seq) const;

  // Compute (outputs preallocated by the caller; see drift/plugin.h).
  void embedding(const drift_tensor_t& table, const std::vector<int32_t>& ids, drift_tensor_t out) const;
  void gemm(const drift_tensor_t& x, const drift_tensor_t& w, drift_tensor_t out) const;
  void rms_norm(const drift_tensor_t& x, const drift_tensor_t& weight, float eps, drift_tensor_t out) const;
  void rope(drift_tensor_t x, const std::vector<int32_t>& positions) const;
  void attention(drift_attention_args_t args) const;
  void silu_mul(const drift_tensor_t& gate, const drift_tensor_t& up, drift_tensor_t out) const;
  void softmax(const drift_tensor_t& x, drift_tensor_t out) const;
  void top_k(const drift_tensor_t& x, int32_t k, drift_tensor_t values, drift_tensor_t indices) const;
  void add(const drift_tensor_t& x, const drift_tensor_t& y, drift_tensor_t out) const;
  void concat(const std::vector<drift_tensor_t>& parts, drift_tensor_t out) const;

 private:
  const drift_host_api_t* api_;
  const drift_model_info_t* model_;
  void* stream_ = nullptr;
};

// A host I32 tensor over `values` (index inputs of the compute services).
drift_tensor_t host_ints(std::vector<int32_t>& values);

}  // namespace eagle3
