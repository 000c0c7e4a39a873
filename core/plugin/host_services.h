#pragma once
// Host services: the drift_host_api_t table each plugin receives.
//
// HostCallbacks is what the engine fills: one std::function per service that depends on the
// engine or its backend (hidden states, block tables, compute primitives, ...). The C entry
// points in the table are thunks forwarding to these callbacks; a callback left unset makes
// its service answer DRIFT_ERROR_NOT_SUPPORTED, which is the correct answer for an engine
// that cannot provide it. A callback may throw DriftError: the thunk logs it against the
// plugin and returns DRIFT_ERROR, so no exception ever unwinds into plugin code.
//
// PluginContext is one plugin's side of it: its name (for log lines), its parsed settings,
// the tensors it allocated, and its own copy of the table whose ctx points back here.
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>

#include "core/model/model_config.h"
#include "core/plugin/plugin_settings.h"
#include "core/tensor.h"
#include "core/tokenizer/tokenizer.h"
#include "drift/plugin.h"

namespace drift {

struct HostCallbacks {
  // Tensor memory on the engine device. Unset: host memory (right for the CPU backend).
  std::function<drift_status_t(int32_t dtype, std::span<const int64_t> shape, drift_tensor_t* out)>
      tensor_alloc;
  std::function<void(drift_tensor_t* tensor)> tensor_free;
  std::function<drift_status_t(void* stream, const drift_tensor_t* src, drift_tensor_t* dst)>
      tensor_copy;
  // Must allocate the way tensor_alloc does (alloc_host_tensor when that is unset): the
  // plugin frees the results with tensor_free. Can wrap SafetensorsCheckpoint + to_f32.
  std::function<drift_status_t(const std::string& path, std::span<const char* const> names,
                               drift_tensor_t* out)>
      load_safetensors;

  // Engine state (read-only views valid until the calling hook returns).
  std::function<drift_status_t(drift_seq_id_t, int32_t layer, drift_tensor_t* out)> hidden_states;
  std::function<drift_status_t(drift_seq_id_t, const drift_token_t**, int64_t*)> sequence_tokens;
  std::function<drift_status_t(drift_seq_id_t, const drift_page_id_t**, int64_t* num_pages,
                               int64_t* num_tokens)>
      block_table;
  std::function<drift_status_t(drift_page_id_t, drift_page_info_t*)> page_info;
  std::function<drift_status_t(drift_seq_id_t, int32_t layer, const drift_page_id_t* pages, int32_t num_pages,
                               drift_tensor_t* kmax, drift_tensor_t* kmin)>
      page_key_summary;
  // A cache manager stopped holding `page` (host->release_pages): drop the KV reference it had.
  std::function<void(drift_page_id_t)> release_page;

  // Compute primitives on the current backend; same contracts as in drift/plugin.h.
  using T = drift_tensor_t;
  std::function<drift_status_t(void*, const T* table, const T* ids, T* out)> embedding;
  std::function<drift_status_t(void*, const T* x, const T* w, const T* bias, T* out)> gemm;
  std::function<drift_status_t(void*, const T* x, const T* weight, float eps, T* out)> rms_norm;
  std::function<drift_status_t(void*, T* x, const T* positions)> rope;
  std::function<drift_status_t(void*, const drift_attention_args_t*)> attention;
  std::function<drift_status_t(void*, const T* gate, const T* up, T* out)> silu_mul;
  std::function<drift_status_t(void*, const T* x, float temperature, T* out)> softmax;
  std::function<drift_status_t(void*, const T* x, int32_t k, T* values, T* indices)> top_k;
  // 1.2
  std::function<drift_status_t(void*, const T* x, const T* y, T* out)> add;
  std::function<drift_status_t(void*, const T* const* parts, size_t num_parts, T* out)> concat;
  std::function<drift_status_t(const char* name, T* out)> model_weight;
  // 1.3
  std::function<drift_status_t(drift_seq_id_t, int32_t layer, drift_tensor_t* out)> query_states;
  std::function<drift_status_t(void*, const T* q, const T* kmax, const T* kmin, T* out)> page_scores;
};

// State shared by every plugin of one PluginHost.
struct HostState {
  HostCallbacks callbacks;
  drift_model_info_t model_info{};  // struct_size set by the host
};

// The ABI's names for the engine's dtypes and devices (DRIFT_DTYPE_*, DRIFT_DEVICE_*).
int32_t to_drift_dtype(DType dtype);
int32_t to_drift_device(Device device);

// drift_model_info_t from the checkpoint's config, the special tokens the engine uses (the
// tokenizer's, which may differ from config.json's) and the KV pool (num_pages 0: not sized).
drift_model_info_t make_model_info(const ModelConfig& config, const SpecialTokens& special, int64_t block_size,
                                   int64_t num_pages, int32_t device, int32_t activation_dtype);

// Zeroed, 64-byte aligned, row-major host memory; release with std::free(out->data).
drift_status_t alloc_host_tensor(int32_t dtype, std::span<const int64_t> shape,
                                 drift_tensor_t* out);
size_t drift_dtype_size(int32_t dtype);  // 0 for unknown dtypes
// A drift_tensor_t describing `t` (row-major strides), e.g. a view of an engine tensor.
drift_tensor_t describe_tensor(const Tensor& t);
int64_t tensor_numel(const drift_tensor_t& tensor);

class PluginContext {
 public:
  // Throws DriftError when the settings do not parse.
  PluginContext(std::string name, const std::string& settings_toml, HostState* state, std::string base_dir = "");
  ~PluginContext();  // frees (and logs) tensors the plugin leaked
  PluginContext(const PluginContext&) = delete;
  PluginContext& operator=(const PluginContext&) = delete;

  const drift_host_api_t* api() const { return &api_; }
  const std::string& name() const { return name_; }
  const PluginSettings& settings() const { return settings_; }
  HostState& state() const { return *state_; }
  void log(int32_t level, const char* message) const;
  // The last message the plugin logged at DRIFT_LOG_ERROR ("" when none).
  const std::string& last_error() const { return last_error_; }

  // Tensor bookkeeping, so a plugin can only free what it was given and leaks are visible, and
  // the bytes its tensors take: a plugin that declared its memory (declare_memory, ABI 1.4)
  // holds at most that much (memory_limit; -1: no limit).
  void track(const drift_tensor_t& tensor);
  bool untrack(const void* data);
  void set_memory_limit(int64_t bytes) { memory_limit_ = bytes; }
  int64_t memory_limit() const { return memory_limit_; }
  int64_t live_bytes() const { return live_bytes_; }
  int64_t peak_bytes() const { return peak_bytes_; }
  // Whether `more` bytes fit under the limit; when not, logs why (naming the service).
  bool may_hold(int64_t more, const char* service) const;

  // host->release_pages for this plugin: PluginHost checks the pages against what the plugin
  // holds. Unset: the service answers DRIFT_ERROR_NOT_SUPPORTED.
  using PageReleaser = std::function<drift_status_t(std::span<const drift_page_id_t>)>;
  void set_page_releaser(PageReleaser releaser) { page_releaser_ = std::move(releaser); }
  const PageReleaser& page_releaser() const { return page_releaser_; }

 private:
  std::string name_;
  PluginSettings settings_;
  HostState* state_;
  std::unordered_map<void*, int64_t> live_tensors_;  // data -> bytes
  int64_t live_bytes_ = 0, peak_bytes_ = 0, memory_limit_ = -1;
  PageReleaser page_releaser_;
  mutable std::string last_error_;
  drift_host_api_t api_{};
};

}  // namespace drift
