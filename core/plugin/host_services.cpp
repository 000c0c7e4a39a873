#include "core/plugin/host_services.h"

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <utility>

#include <spdlog/spdlog.h>

namespace drift {
namespace {

PluginContext& context_of(void* ctx) { return *static_cast<PluginContext*>(ctx); }

// Runs an engine callback on behalf of a plugin: an exception becomes a logged DRIFT_ERROR,
// because it must not unwind through the plugin's (possibly C) frames.
template <typename Call>
drift_status_t shield(PluginContext& c, const char* service, Call&& call) {
  try {
    return call();
  } catch (const std::exception& e) {
    spdlog::error("[plugin {}] host service {} failed: {}", c.name(), service, e.what());
  } catch (...) {
    spdlog::error("[plugin {}] host service {} failed", c.name(), service);
  }
  return DRIFT_ERROR;
}

// The generic thunk: C signature (void* ctx, Args...) -> HostCallbacks::*Member(Args...).
template <auto Member, typename Fn>
struct Forward;
template <auto Member, typename... Args>
struct Forward<Member, drift_status_t (*)(void*, Args...)> {
  static drift_status_t call(void* ctx, Args... args) {
    PluginContext& c = context_of(ctx);
    const auto& callback = c.state().callbacks.*Member;
    if (!callback) return DRIFT_ERROR_NOT_SUPPORTED;
    return shield(c, "call", [&] { return callback(args...); });
  }
};

void log_thunk(void* ctx, int32_t level, const char* message) {
  context_of(ctx).log(level, message);
}

drift_status_t get_int(void* ctx, const char* key, int64_t* out) {
  return context_of(ctx).settings().get_int(key, out);
}
drift_status_t get_double(void* ctx, const char* key, double* out) {
  return context_of(ctx).settings().get_double(key, out);
}
drift_status_t get_bool(void* ctx, const char* key, bool* out) {
  return context_of(ctx).settings().get_bool(key, out);
}
drift_status_t get_string(void* ctx, const char* key, char* buf, size_t cap, size_t* len) {
  return context_of(ctx).settings().get_string(key, buf, cap, len);
}
drift_status_t get_path(void* ctx, const char* key, char* buf, size_t cap, size_t* len) {
  return context_of(ctx).settings().get_path(key, buf, cap, len);
}

const drift_model_info_t* model_info(void* ctx) { return &context_of(ctx).state().model_info; }

drift_status_t tensor_alloc(void* ctx, int32_t dtype, int32_t ndim, const int64_t* shape,
                            drift_tensor_t* out) {
  PluginContext& c = context_of(ctx);
  if (!out || ndim < 0 || ndim > DRIFT_MAX_DIMS || (ndim > 0 && !shape))
    return DRIFT_ERROR_INVALID_ARGUMENT;
  std::span<const int64_t> dims(shape, static_cast<size_t>(ndim));
  int64_t bytes = static_cast<int64_t>(drift_dtype_size(dtype));
  for (int64_t d : dims)  // a negative dimension, or a size past int64, is no tensor
    if (d < 0 || __builtin_mul_overflow(bytes, d, &bytes)) return DRIFT_ERROR_INVALID_ARGUMENT;
  if (!c.may_hold(bytes, "tensor_alloc")) return DRIFT_ERROR_OUT_OF_MEMORY;
  const auto& callback = c.state().callbacks.tensor_alloc;
  drift_status_t status = callback ? shield(c, "tensor_alloc", [&] { return callback(dtype, dims, out); })
                                   : alloc_host_tensor(dtype, dims, out);
  if (status == DRIFT_OK) c.track(*out);
  return status;
}

void release(PluginContext& c, drift_tensor_t* tensor) {
  const auto& callback = c.state().callbacks.tensor_free;
  if (callback)
    shield(c, "tensor_free", [&] { callback(tensor); return DRIFT_OK; });
  else
    std::free(tensor->data);
  *tensor = drift_tensor_t{};
}

void tensor_free(void* ctx, drift_tensor_t* tensor) {
  PluginContext& c = context_of(ctx);
  if (!tensor || !tensor->data) return;
  if (!c.untrack(tensor->data)) {
    spdlog::error("[plugin {}] tensor_free of memory the host did not allocate for it; ignored",
                  c.name());
    return;
  }
  release(c, tensor);
}

bool is_contiguous(const drift_tensor_t& t) {
  int64_t expected = 1;
  for (int32_t d = t.ndim - 1; d >= 0; --d) {
    if (t.shape[d] != 1 && t.strides[d] != expected) return false;
    expected *= t.shape[d];
  }
  return true;
}

drift_status_t host_copy(const drift_tensor_t* src, drift_tensor_t* dst) {
  if (!src || !dst || src->dtype != dst->dtype || tensor_numel(*src) != tensor_numel(*dst))
    return DRIFT_ERROR_INVALID_ARGUMENT;
  if (src->device != DRIFT_DEVICE_CPU || dst->device != DRIFT_DEVICE_CPU)
    return DRIFT_ERROR_NOT_SUPPORTED;
  if (!is_contiguous(*src) || !is_contiguous(*dst)) return DRIFT_ERROR_NOT_SUPPORTED;
  std::copy_n(static_cast<const char*>(src->data), tensor_numel(*src) * drift_dtype_size(src->dtype),
              static_cast<char*>(dst->data));
  return DRIFT_OK;
}

drift_status_t tensor_copy(void* ctx, void* stream, const drift_tensor_t* src, drift_tensor_t* dst) {
  PluginContext& c = context_of(ctx);
  const auto& callback = c.state().callbacks.tensor_copy;
  if (callback) return shield(c, "tensor_copy", [&] { return callback(stream, src, dst); });
  return host_copy(src, dst);
}

drift_status_t load_safetensors(void* ctx, const char* path, const char* const* names,
                                size_t num_names, drift_tensor_t* out) {
  PluginContext& c = context_of(ctx);
  const auto& callback = c.state().callbacks.load_safetensors;
  if (!callback) return DRIFT_ERROR_NOT_SUPPORTED;
  if (!path || (num_names > 0 && (!names || !out))) return DRIFT_ERROR_INVALID_ARGUMENT;
  std::span<const char* const> wanted(names, num_names);
  drift_status_t status = shield(c, "load_safetensors", [&] { return callback(path, wanted, out); });
  if (status != DRIFT_OK) return status;
  int64_t bytes = 0;  // sizes are known once loaded: over the limit, they go again
  for (size_t i = 0; i < num_names; ++i)
    bytes += static_cast<int64_t>(tensor_numel(out[i]) * drift_dtype_size(out[i].dtype));
  if (!c.may_hold(bytes, "load_safetensors")) {
    for (size_t i = 0; i < num_names; ++i) release(c, &out[i]);
    return DRIFT_ERROR_OUT_OF_MEMORY;
  }
  for (size_t i = 0; i < num_names; ++i) c.track(out[i]);
  return status;
}

drift_status_t release_pages(void* ctx, const drift_page_id_t* pages, int32_t num_pages) {
  PluginContext& c = context_of(ctx);
  if (!c.page_releaser()) return DRIFT_ERROR_NOT_SUPPORTED;
  if (num_pages < 0 || (num_pages > 0 && !pages)) return DRIFT_ERROR_INVALID_ARGUMENT;
  const std::span<const drift_page_id_t> list(pages, static_cast<size_t>(num_pages));
  return shield(c, "release_pages", [&] { return c.page_releaser()(list); });
}

#define DRIFT_FORWARD(api, field) \
  (api).field = &Forward<&HostCallbacks::field, decltype((api).field)>::call

void fill_table(drift_host_api_t& api, PluginContext* ctx) {
  api.struct_size = sizeof(drift_host_api_t);
  api.abi_major = DRIFT_ABI_MAJOR;
  api.abi_minor = DRIFT_ABI_MINOR;
  api.ctx = ctx;
  api.log = &log_thunk;
  api.get_setting_int = &get_int;
  api.get_setting_double = &get_double;
  api.get_setting_bool = &get_bool;
  api.get_setting_string = &get_string;
  api.model_info = &model_info;
  api.tensor_alloc = &tensor_alloc;
  api.tensor_free = &tensor_free;
  api.tensor_copy = &tensor_copy;
  api.load_safetensors = &load_safetensors;
  DRIFT_FORWARD(api, hidden_states);
  DRIFT_FORWARD(api, sequence_tokens);
  DRIFT_FORWARD(api, block_table);
  DRIFT_FORWARD(api, page_info);
  DRIFT_FORWARD(api, page_key_summary);
  DRIFT_FORWARD(api, embedding);
  DRIFT_FORWARD(api, gemm);
  DRIFT_FORWARD(api, rms_norm);
  DRIFT_FORWARD(api, rope);
  DRIFT_FORWARD(api, attention);
  DRIFT_FORWARD(api, silu_mul);
  DRIFT_FORWARD(api, softmax);
  DRIFT_FORWARD(api, top_k);
  api.release_pages = &release_pages;
  DRIFT_FORWARD(api, add);
  DRIFT_FORWARD(api, concat);
  DRIFT_FORWARD(api, model_weight);
  api.get_setting_path = &get_path;
  DRIFT_FORWARD(api, query_states);
  DRIFT_FORWARD(api, page_scores);
}

}  // namespace

PluginContext::PluginContext(std::string name, const std::string& settings_toml, HostState* state, std::string base_dir)
    : name_(std::move(name)), settings_(name_, settings_toml, std::move(base_dir)), state_(state) {
  fill_table(api_, this);
}

PluginContext::~PluginContext() {
  if (live_tensors_.empty()) return;
  spdlog::warn("[plugin {}] leaked {} tensor(s); the host frees them", name_, live_tensors_.size());
  for (const auto& [data, bytes] : live_tensors_) {
    drift_tensor_t tensor{};
    tensor.data = data;
    release(*this, &tensor);
  }
}

void PluginContext::track(const drift_tensor_t& tensor) {
  const auto bytes = static_cast<int64_t>(tensor_numel(tensor) * drift_dtype_size(tensor.dtype));
  if (!live_tensors_.emplace(tensor.data, bytes).second) return;
  live_bytes_ += bytes;
  peak_bytes_ = std::max(peak_bytes_, live_bytes_);
}

bool PluginContext::untrack(const void* data) {
  auto it = live_tensors_.find(const_cast<void*>(data));
  if (it == live_tensors_.end()) return false;
  live_bytes_ -= it->second;
  live_tensors_.erase(it);
  return true;
}

bool PluginContext::may_hold(int64_t more, const char* service) const {
  if (memory_limit_ < 0 || more <= memory_limit_ - live_bytes_) return true;
  spdlog::error(
      "[plugin {}] {} of {} bytes refused: it would hold {} bytes, more than the {} it declared "
      "(declare_memory)",
      name_, service, more, live_bytes_ + more, memory_limit_);
  return false;
}

void PluginContext::log(int32_t level, const char* message) const {
  static constexpr spdlog::level::level_enum levels[] = {
      spdlog::level::debug, spdlog::level::info, spdlog::level::warn, spdlog::level::err};
  auto lvl = levels[std::clamp<int32_t>(level, DRIFT_LOG_DEBUG, DRIFT_LOG_ERROR)];
  if (level >= DRIFT_LOG_ERROR) last_error_ = message ? message : "";
  spdlog::log(lvl, "[plugin {}] {}", name_, message ? message : "(null)");
}

int32_t to_drift_dtype(DType dtype) {
  switch (dtype) {
    case DType::F32: return DRIFT_DTYPE_F32;
    case DType::F16: return DRIFT_DTYPE_F16;
    case DType::BF16: return DRIFT_DTYPE_BF16;
    case DType::I32: return DRIFT_DTYPE_I32;
    case DType::I64:
    case DType::Bool:
    case DType::U8:
      return -1;  // checkpoint-only dtypes, never handed to plugins
  }
  return -1;
}

int32_t to_drift_device(Device device) { return device == Device::CPU ? DRIFT_DEVICE_CPU : DRIFT_DEVICE_CUDA; }

drift_model_info_t make_model_info(const ModelConfig& config, const SpecialTokens& special, int64_t block_size,
                                   int64_t num_pages, int32_t device, int32_t activation_dtype) {
  drift_model_info_t info{};
  info.struct_size = sizeof(info);
  info.device = device;
  info.activation_dtype = activation_dtype;
  info.vocab_size = config.vocab_size;
  info.hidden_size = config.hidden_size;
  info.intermediate_size = config.intermediate_size;
  info.num_layers = config.num_layers;
  info.num_heads = config.num_heads;
  info.num_kv_heads = config.num_kv_heads;
  info.head_dim = config.head_dim;
  info.max_position_embeddings = config.max_position_embeddings;
  info.rms_norm_eps = config.rms_norm_eps;
  info.rope_theta = config.rope.theta;
  info.block_size = block_size;
  info.num_pages = num_pages;
  info.bos_token_id = special.bos_id.value_or(-1);
  for (int32_t eos : special.eos_ids) {
    if (info.num_eos_tokens == DRIFT_MAX_EOS_TOKENS) break;
    info.eos_token_ids[info.num_eos_tokens++] = eos;
  }
  return info;
}

}  // namespace drift
