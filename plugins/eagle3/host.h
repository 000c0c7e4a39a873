#pragma once
// Host: the eagle3 plugin's C++ face of drift_host_api_t. Every service call is checked; a
// failure throws HostError naming the service, which the hook boundary (eagle3.cc) turns into a
// status -- exceptions never cross the C ABI. Tensor is a plugin-owned tensor freed through the
// host; view() and rows() describe parts of one without owning them.
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <vector>

#include "drift/plugin.h"

namespace eagle3 {

struct HostError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

[[noreturn]] void fail(const std::string& message);

int64_t numel(const drift_tensor_t& t);
size_t element_size(int32_t dtype);
// A contiguous view of `base`'s memory with another shape, starting `offset` elements in.
drift_tensor_t view(const drift_tensor_t& base, std::initializer_list<int64_t> shape, int64_t offset = 0);
// Rows [first, first + count) of a tensor whose first dimension counts rows.
drift_tensor_t rows(const drift_tensor_t& base, int64_t first, int64_t count);

class Host;

// A tensor the plugin allocated (or loaded); freed through the host when destroyed.
class Tensor {
 public:
  Tensor() = default;
  Tensor(const Host* host, drift_tensor_t t) : host_(host), t_(t) {}
  ~Tensor() { reset(); }
  Tensor(Tensor&& other) noexcept : host_(other.host_), t_(other.t_) { other.t_ = {}; }
  Tensor& operator=(Tensor&& other) noexcept;
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;

  const drift_tensor_t& get() const { return t_; }
  const drift_tensor_t* operator->() const { return &t_; }
  bool empty() const { return t_.data == nullptr; }
  void reset();

 private:
  const Host* host_ = nullptr;
  drift_tensor_t t_{};
};

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
  void free(drift_tensor_t& t) const;
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
  void check(drift_status_t status, const char* service) const;

  const drift_host_api_t* api_;
  const drift_model_info_t* model_;
  void* stream_ = nullptr;
};

// A host I32 tensor over `values` (index inputs of the compute services).
drift_tensor_t host_ints(std::vector<int32_t>& values);

}  // namespace eagle3
