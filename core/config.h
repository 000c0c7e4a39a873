#pragma once
// EngineConfig: the TOML file (schema_version = 1) that names the model, the backend, the KV
// cache, the scheduler, speculation and plugins. Unknown keys and wrong types are errors
// naming the key and the file. Relative paths are resolved against the config file's folder.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/sampling_params.h"

namespace drift {

// The accepted range of each numeric setting (docs/config.md lists them). Lower bounds are in
// validate_config; these upper bounds stop a typo from exhausting the machine (threads, memory)
// or overflowing the engine's 32-bit token positions and KV slot numbers.
namespace limits {
inline constexpr int64_t kMaxBatchSize = 65536;
inline constexpr int64_t kMaxNumTokens = 1 << 20;
inline constexpr int64_t kMaxSeqLen = 2147483647;  // positions are int32
inline constexpr int64_t kMaxThreads = 1024;
inline constexpr int64_t kMaxBlockSize = 1024;
inline constexpr int64_t kMaxKvSlots = 2147483647;  // num_pages x block_size: slots are int32
inline constexpr double kMaxMemoryMb = 16777216.0;  // 16 TiB
inline constexpr int64_t kMaxDraftTokens = 1024;    // per sequence and step
inline constexpr int64_t kMaxTensorParallel = 64;
}  // namespace limits

struct ModelSection {
  std::string path;  // checkpoint directory
};

struct EngineSection {
  std::string backend = "cpu";  // cpu | cuda
  // Storage of weights, activations and KV: auto (cpu: float32; cuda: the checkpoint's float16 or
  // bfloat16, bfloat16 for float32 checkpoints) | float32 (cpu) | bfloat16 | float16 (cuda)
  std::string dtype = "auto";
  int64_t max_batch_size = 32;      // running sequences at once
  int64_t max_num_tokens = 512;     // per-step token budget (decode + prefill chunks)
  int64_t max_seq_len = 0;          // 0: the model's max_position_embeddings
  int64_t num_threads = 0;          // CPU backend worker threads; 0: hardware concurrency
  bool check_kv_integrity = false;  // verify the KV cache's invariants after every step (tests, debugging)
  int64_t grammar_threads = -1;     // structured-output mask workers; -1: by the cores, 0: none
  int64_t grammar_explored_masks = -1;  // a new grammar's masks the workers compute first; -1: the most, 0: none
  // Ranks one model is split over (docs/tensor_parallel.md): attention heads and MLP columns, one
  // process per rank; [tensor_parallel] says where they meet.
  int64_t tensor_parallel_size = 1;
};

// How the ranks of a tensor-parallel engine (engine.tensor_parallel_size > 1) meet and fail.
struct TensorParallelSection {
  std::string rendezvous = "127.0.0.1:0";  // rank 0 listens here (port 0: any free port)
  // Ranks run on this machine: 0 .. local_ranks - 1 (0: all). The others are started elsewhere
  // with `drift rank --rendezvous HOST:PORT --rank R --size N`.
  int64_t local_ranks = 0;
  double timeout_s = 60.0;         // a step waits this long for any rank before ending the engine
  double start_timeout_s = 600.0;  // joining and loading the shards
  std::string rank_executable;     // what the local ranks run; "": this drift binary
};

struct KVCacheSection {
  int64_t block_size = 16;       // tokens per page
  int64_t num_pages = 0;         // explicit page count; 0: derive from memory_mb
  double memory_mb = 256.0;      // KV memory budget when num_pages = 0
  double memory_fraction = 0.0;  // > 0 (device backends): that share of the device memory free
                                 // once the weights are loaded, instead of memory_mb
  std::string dtype = "auto";    // auto (backend's default) | float32 | float16 | bfloat16
  // Sliding-window layers (gpt_oss) keep only the pages their window still sees, in a page group
  // of their own; false: every layer keeps full-context KV (what a cache manager plugin needs).
  bool window_pages = true;
};

struct SchedulerSection {
  std::string policy = "guaranteed_no_evict";  // guaranteed_no_evict | max_utilization
};

struct GenerationSection {  // defaults for requests that do not say otherwise
  int64_t max_new_tokens = 128;
  double temperature = 0.0;
  int64_t top_k = 0;
  double top_p = 1.0;
  double min_p = 0.0;
  uint64_t seed = 0;
  double presence_penalty = 0.0;
  double frequency_penalty = 0.0;
  double repetition_penalty = 1.0;
};

struct SpeculativeSection {
  bool enabled = false;
  std::string draft_provider;         // plugin name
  std::string verification = "full";  // built-in "full" or a plugin name
  int64_t max_draft_tokens = 0;       // draft tree nodes per sequence and step (the tree's max nodes)
  int64_t max_depth = 0;              // deepest draft node verified; 0 = no limit beyond max_draft_tokens
  // Hybrid drafting: when draft_provider's tree scores below fallback_below (the sum of its
  // nodes' path probabilities: the tokens it expects accepted), fallback_provider drafts instead.
  std::string fallback_provider;  // "" = none
  double fallback_below = 1.0;
  // Adaptive speculation: each step, each request's draft budget (0 .. max_draft_tokens) is chosen
  // from the measured step times and its acceptance so far (core/speculation/adaptive_speculation.h);
  // false drafts max_draft_tokens every step.
  bool adaptive = true;
};

struct PluginEntry {
  std::string name;
  std::string path;           // explicit .so path, or "" to search by name
  std::string settings_toml;  // the plugin's own [plugins.<name>] table, as TOML text
  bool optional = false;      // true: a load failure falls back instead of stopping the engine
  std::string base_dir;       // the config file's folder: relative path settings resolve here
};

struct EngineConfig {
  std::string source;  // file the config came from ("" for defaults)
  ModelSection model;
  EngineSection engine;
  KVCacheSection kv_cache;
  SchedulerSection scheduler;
  GenerationSection generation;
  SpeculativeSection speculative;
  TensorParallelSection tensor_parallel;
  std::vector<PluginEntry> plugins;
};

EngineConfig load_config(const std::string& path);
EngineConfig parse_config(const std::string& toml_text, const std::string& source_name, const std::string& base_dir);
// Checks cross-field rules (positive sizes, known backend/policy names, sampling values in
// range). Throws DriftError naming the file, the key and the value.
void validate_config(const EngineConfig& config);

// "" when `backend` names a backend, else the requirement it breaks; callers name where the value
// came from (engine.backend in a file, --backend on the command line).
std::string check_backend_name(const std::string& backend);

// The sampling parameters a request gets from [generation] when it does not say otherwise (seed 0:
// unset, so the engine picks a fresh one).
SamplingParams sampling_params_from(const GenerationSection& generation);

}  // namespace drift
