#include "host.h"

#include <algorithm>

namespace eagle3 {

drift_tensor_t host_ints(std::vector<int32_t>& values) {
  drift_tensor_t t{};
  t.data = values.data();
  t.dtype = DRIFT_DTYPE_I32;
  t.device = DRIFT_DEVICE_CPU;
  t.ndim = 1;
  t.shape[0] = static_cast<int64_t>(values.size());
  t.strides[0] = 1;
  return t;
}

Host::Host(const drift_host_api_t* api) : api_(api), model_(api->model_info(api->ctx)) {
  if (!model_) fail("the host gives no model description");
}

using drift::plugin::check;

void Host::log(int32_t level, const std::string& message) const { api_->log(api_->ctx, level, message.c_str()); }

Tensor Host::alloc(int32_t dtype, const std::vector<int64_t>& shape) const { return Tensor(api_, dtype, shape); }

void Host::copy(const drift_tensor_t& src, drift_tensor_t dst) const {
  check(api_->tensor_copy(api_->ctx, stream_, &src, &dst), "tensor_copy");
}

std::vector<Tensor> Host::load(const std::string& path, const std::vector<std::string>& names) const {
  std::vector<const char*> c_names;
  for (const std::string& n : names) c_names.push_back(n.c_str());
  std::vector<drift_tensor_t> out(names.size());
  const drift_status_t status =
      api_->load_safetensors(api_->ctx, path.c_str(), c_names.data(), c_names.size(), out.data());
  if (status != DRIFT_OK) fail("cannot load the tensors of " + path + " (status " + std::to_string(status) + ")");
  std::vector<Tensor> tensors;
  for (const drift_tensor_t& t : out) tensors.emplace_back(api_, t);
  return tensors;
}

bool Host::model_weight(const char* name, drift_tensor_t& out) const {
  const drift_status_t status = api_->model_weight(api_->ctx, name, &out);
  if (status == DRIFT_ERROR_NOT_FOUND) return false;
  check(status, "model_weight");
  return true;
}

drift_tensor_t Host::hidden_states(drift_seq_id_t seq, int32_t layer) const {
  drift_tensor_t t{};
  check(api_->hidden_states(api_->ctx, seq, layer, &t), "hidden_states");
  return t;
}

std::vector<drift_token_t> Host::sequence_tokens(drift_seq_id_t seq) const {
  const drift_token_t* tokens = nullptr;
  int64_t n = 0;
  check(api_->sequence_tokens(api_->ctx, seq, &tokens, &n), "sequence_tokens");
  return {tokens, tokens + n};
}

void Host::embedding(const drift_tensor_t& table, const std::vector<int32_t>& ids, drift_tensor_t out) const {
  std::vector<int32_t> copy = ids;
  const drift_tensor_t index = host_ints(copy);
  check(api_->embedding(api_->ctx, stream_, &table, &index, &out), "embedding");
}

void Host::gemm(const drift_tensor_t& x, const drift_tensor_t& w, drift_tensor_t out) const {
  check(api_->gemm(api_->ctx, stream_, &x, &w, nullptr, &out), "gemm");
}

void Host::rms_norm(const drift_tensor_t& x, const drift_tensor_t& weight, float eps, drift_tensor_t out) const {
  check(api_->rms_norm(api_->ctx, stream_, &x, &weight, eps, &out), "rms_norm");
}

void Host::rope(drift_tensor_t x, const std::vector<int32_t>& positions) const {
  std::vector<int32_t> copy = positions;
  const drift_tensor_t index = host_ints(copy);
  check(api_->rope(api_->ctx, stream_, &x, &index), "rope");
}

void Host::attention(drift_attention_args_t args) const {
  args.struct_size = sizeof(args);
  check(api_->attention(api_->ctx, stream_, &args), "attention");
}

void Host::silu_mul(const drift_tensor_t& gate, const drift_tensor_t& up, drift_tensor_t out) const {
  check(api_->silu_mul(api_->ctx, stream_, &gate, &up, &out), "silu_mul");
}

void Host::softmax(const drift_tensor_t& x, drift_tensor_t out) const {
  check(api_->softmax(api_->ctx, stream_, &x, 1.0f, &out), "softmax");
}

void Host::top_k(const drift_tensor_t& x, int32_t k, drift_tensor_t values, drift_tensor_t indices) const {
  check(api_->top_k(api_->ctx, stream_, &x, k, &values, &indices), "top_k");
}

void Host::add(const drift_tensor_t& x, const drift_tensor_t& y, drift_tensor_t out) const {
  check(api_->add(api_->ctx, stream_, &x, &y, &out), "add");
}

void Host::concat(const std::vector<drift_tensor_t>& parts, drift_tensor_t out) const {
  std::vector<const drift_tensor_t*> pointers;
  for (const drift_tensor_t& p : parts) pointers.push_back(&p);
  check(api_->concat(api_->ctx, stream_, pointers.data(), pointers.size(), &out), "concat");
}

}  // namespace eagle3
