#include "core/config.h"

#include <algorithm>
#include <filesystem>
#include <set>
#include <sstream>

#include <toml++/toml.h>

#include "core/error.h"
#include "core/parallel/rendezvous.h"
#include "core/text_file.h"

namespace drift {
namespace {

// Reads one [section] table, refusing keys it does not know and values of the wrong type, with
// messages naming the file, the key and the value.
class SectionReader {
 public:
  SectionReader(const toml::table& table, std::string section, std::string source)
      : table_(table), section_(std::move(section)), source_(std::move(source)) {}

  // Call after reading every key: any key of the table nobody asked for is an error.
  void reject_unknown_keys() const {
    for (const auto& [key, value] : table_)
      if (!known_.count(std::string(key.str())))
        fail("{}: unknown key '{}{}'", source_, prefix(), std::string(key.str()));
  }

  // A key handled elsewhere (a sub-table), accepted by the unknown-key check.
  void allow(const std::string& key) { known_.insert(key); }

  template <typename T>
  void read(const char* key, T& out) {
    known_.insert(key);
    const toml::node* node = table_.get(key);
    if (!node) return;
    if constexpr (std::is_same_v<T, double>) {
      if (auto v = node->value<double>()) {
        out = *v;
        return;
      }  // integers convert too
    } else if constexpr (std::is_same_v<T, uint64_t>) {
      // Only an integer node: toml++ would convert a float (seed = 1.1e33) to int64, which is
      // undefined behaviour when it does not fit (found by fuzz_engine_config).
      if (node->is_integer() && *node->value<int64_t>() >= 0) {
        out = static_cast<uint64_t>(*node->value<int64_t>());
        return;
      }
    } else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      if (node->is_integer()) {
        out = static_cast<T>(*node->value<int64_t>());
        return;
      }
    } else {
      if (auto v = node->value_exact<T>()) {
        out = *v;
        return;
      }
    }
    fail("{}: key '{}{}' has the wrong type (expected {}, got {})", source_, prefix(), key, type_name<T>(),
         describe(*node));
  }

 private:
  std::string prefix() const { return section_.empty() ? "" : section_ + "."; }
  template <typename T>
  static const char* type_name() {
    if constexpr (std::is_same_v<T, bool>)
      return "a boolean";
    else if constexpr (std::is_same_v<T, std::string>)
      return "a string";
    else if constexpr (std::is_same_v<T, double>)
      return "a number";
    else if constexpr (std::is_same_v<T, uint64_t>)
      return "a non-negative integer";
    else
      return "an integer";
  }
  static std::string describe(const toml::node& node) {
    std::ostringstream s;
    s << node.type() << " ";
    node.visit([&](const auto& v) {
      if constexpr (toml::is_value<decltype(v)>)
        s << v;
      else
        s << "...";
    });
    return s.str();
  }

  const toml::table& table_;
  std::string section_, source_;
  std::set<std::string> known_;
};

const toml::table* section(const toml::table& root, const char* name, const std::string& source) {
  const toml::node* node = root.get(name);
  if (!node) return nullptr;
  if (!node->is_table()) fail("{}: '{}' must be a table ([{}])", source, name, name);
  return node->as_table();
}

std::string resolve_path(const std::string& path, const std::string& base_dir) {
  if (path.empty() || base_dir.empty() || std::filesystem::path(path).is_absolute()) return path;
  return (std::filesystem::path(base_dir) / path).lexically_normal().string();
}

std::string to_toml_text(const toml::table& table) {
  std::ostringstream s;
  s << table;
  return s.str();
}

// [[plugins]] entries: name, path, and the plugin's own settings as the sub-table named after
// it, which TOML writes right below the entry as [plugins.<name>] (DESIGN.md's spelling).
void read_plugins(const toml::table& root, EngineConfig& config, const std::string& source,
                  const std::string& base_dir) {
  const toml::node* list = root.get("plugins");
  if (!list) return;
  if (!list->is_array_of_tables()) fail("{}: 'plugins' must be an array of tables ([[plugins]])", source);
  for (const auto& node : *list->as_array()) {
    const toml::table& entry = *node.as_table();
    PluginEntry plugin;
    const toml::node* name = entry.get("name");
    if (!name || !name->is_string()) fail("{}: a [[plugins]] entry has no string 'name'", source);
    plugin.name = *name->value<std::string>();
    SectionReader r(entry, "plugins." + plugin.name, source);
    r.read("name", plugin.name);
    r.read("path", plugin.path);
    r.read("optional", plugin.optional);
    r.allow(plugin.name);
    if (const toml::node* settings = entry.get(plugin.name)) {
      if (!settings->is_table()) fail("{}: plugins.{} must be a table of the plugin's settings", source, plugin.name);
      plugin.settings_toml = to_toml_text(*settings->as_table());
    }
    plugin.path = resolve_path(plugin.path, base_dir);
    plugin.base_dir = base_dir;
    config.plugins.push_back(std::move(plugin));
    r.reject_unknown_keys();
  }
}

void read_sections(const toml::table& root, EngineConfig& c, const std::string& source, const std::string& base_dir) {
  if (const auto* t = section(root, "model", source)) {
    SectionReader r(*t, "model", source);
    r.read("path", c.model.path);
    c.model.path = resolve_path(c.model.path, base_dir);
    r.reject_unknown_keys();
  }
  if (const auto* t = section(root, "engine", source)) {
    SectionReader r(*t, "engine", source);
    r.read("backend", c.engine.backend);
    r.read("dtype", c.engine.dtype);
    r.read("max_batch_size", c.engine.max_batch_size);
    r.read("max_num_tokens", c.engine.max_num_tokens);
    r.read("max_seq_len", c.engine.max_seq_len);
    r.read("num_threads", c.engine.num_threads);
    r.read("check_kv_integrity", c.engine.check_kv_integrity);
    r.read("grammar_threads", c.engine.grammar_threads);
    r.read("grammar_explored_masks", c.engine.grammar_explored_masks);
    r.read("tensor_parallel_size", c.engine.tensor_parallel_size);
    r.reject_unknown_keys();
  }
  if (const auto* t = section(root, "kv_cache", source)) {
    SectionReader r(*t, "kv_cache", source);
    r.read("block_size", c.kv_cache.block_size);
    r.read("num_pages", c.kv_cache.num_pages);
    r.read("memory_mb", c.kv_cache.memory_mb);
    r.read("memory_fraction", c.kv_cache.memory_fraction);
    r.read("dtype", c.kv_cache.dtype);
    r.read("window_pages", c.kv_cache.window_pages);
    r.reject_unknown_keys();
  }
  if (const auto* t = section(root, "scheduler", source)) {
    SectionReader r(*t, "scheduler", source);
    r.read("policy", c.scheduler.policy);
    r.reject_unknown_keys();
  }
  if (const auto* t = section(root, "generation", source)) {
    SectionReader r(*t, "generation", source);
    r.read("max_new_tokens", c.generation.max_new_tokens);
    r.read("temperature", c.generation.temperature);
    r.read("top_k", c.generation.top_k);
    r.read("top_p", c.generation.top_p);
    r.read("min_p", c.generation.min_p);
    r.read("seed", c.generation.seed);
    r.read("presence_penalty", c.generation.presence_penalty);
    r.read("frequency_penalty", c.generation.frequency_penalty);
    r.read("repetition_penalty", c.generation.repetition_penalty);
    r.reject_unknown_keys();
  }
  if (const auto* t = section(root, "speculative", source)) {
    SectionReader r(*t, "speculative", source);
    r.read("enabled", c.speculative.enabled);
    r.read("draft_provider", c.speculative.draft_provider);
    r.read("verification", c.speculative.verification);
    r.read("max_draft_tokens", c.speculative.max_draft_tokens);
    r.read("max_depth", c.speculative.max_depth);
    r.read("fallback_provider", c.speculative.fallback_provider);
    r.read("fallback_below", c.speculative.fallback_below);
    r.read("adaptive", c.speculative.adaptive);
    r.reject_unknown_keys();
  }
  if (const auto* t = section(root, "tensor_parallel", source)) {
    SectionReader r(*t, "tensor_parallel", source);
    r.read("rendezvous", c.tensor_parallel.rendezvous);
    r.read("local_ranks", c.tensor_parallel.local_ranks);
    r.read("timeout_s", c.tensor_parallel.timeout_s);
    r.read("start_timeout_s", c.tensor_parallel.start_timeout_s);
    r.read("rank_executable", c.tensor_parallel.rank_executable);
    c.tensor_parallel.rank_executable = resolve_path(c.tensor_parallel.rank_executable, base_dir);
    r.reject_unknown_keys();
  }
  read_plugins(root, c, source, base_dir);
}

std::string plugin_names(const EngineConfig& c) {
  std::string names;
  for (const PluginEntry& p : c.plugins) names += (names.empty() ? "\"" : ", \"") + p.name + "\"";
  return names.empty() ? "none" : names;
}

// [speculative]'s roles must name [[plugins]] entries whether or not speculation is on: a policy
// that does not exist, or speculation switched on with nothing to draft, would otherwise run
// silently without the strategy the file asks for. (Whether an entry is of the right kind is
// known once it is loaded: PluginHost::select.)
void check_speculation_roles(const EngineConfig& c, const std::string& src) {
  const SpeculativeSection& s = c.speculative;
  if (s.enabled && s.draft_provider.empty())
    fail(
        "{}: speculative.enabled = true, but speculative.draft_provider is not set: name the [[plugins]] entry "
        "that drafts (configured: {}), or set enabled = false",
        src, plugin_names(c));
  auto configured = [&](const std::string& name) {
    return std::any_of(c.plugins.begin(), c.plugins.end(), [&](const PluginEntry& p) { return p.name == name; });
  };
  if (s.enabled && !configured(s.draft_provider))
    fail("{}: speculative.draft_provider = \"{}\": no [[plugins]] entry has that name (configured: {})", src,
         s.draft_provider, plugin_names(c));
  const bool builtin = s.verification.empty() || s.verification == "full";
  if (!builtin && !configured(s.verification))
    fail(
        "{}: speculative.verification = \"{}\": no [[plugins]] entry has that name (configured: {}); use \"full\" "
        "(the built-in) or add the policy's [[plugins]] entry",
        src, s.verification, plugin_names(c));
}

// Tensor parallelism runs on the CPU backend's communicator so far (the NCCL one is the GPU half of
// the work), with full verification: a partial view's page lists and kept queries would be one
// rank's heads only.
void check_tensor_parallel(const EngineConfig& c, const std::string& src) {
  const int64_t size = c.engine.tensor_parallel_size;
  if (size < 1 || size > limits::kMaxTensorParallel)
    fail("{}: engine.tensor_parallel_size = {} is out of range [1, {}]", src, size, limits::kMaxTensorParallel);
  const TensorParallelSection& tp = c.tensor_parallel;
  if (tp.local_ranks < 0 || tp.local_ranks > size)
    fail("{}: tensor_parallel.local_ranks = {} is out of range [0, engine.tensor_parallel_size = {}] (0: all)", src,
         tp.local_ranks, size);
  if (!(tp.timeout_s > 0 && tp.timeout_s <= 86400))
    fail("{}: tensor_parallel.timeout_s = {} is out of range (0, 86400]", src, tp.timeout_s);
  if (!(tp.start_timeout_s > 0 && tp.start_timeout_s <= 86400))
    fail("{}: tensor_parallel.start_timeout_s = {} is out of range (0, 86400]", src, tp.start_timeout_s);
  parse_rendezvous_address(tp.rendezvous, src + ": tensor_parallel.rendezvous");
  if (size == 1) return;
  if (c.engine.backend != "cpu")
    fail(
        "{}: engine.tensor_parallel_size = {} with engine.backend = \"{}\": tensor parallelism runs on the cpu "
        "backend so far (the NCCL communicator for cuda is not built yet)",
        src, size, c.engine.backend);
  if (c.speculative.verification != "full" && !c.speculative.verification.empty())
    fail(
        "{}: speculative.verification = \"{}\" with engine.tensor_parallel_size = {}: a partial-verification policy "
        "reads one rank's KV heads only; use verification = \"full\"",
        src, c.speculative.verification, size);
}

}  // namespace

EngineConfig parse_config(const std::string& toml_text, const std::string& source_name, const std::string& base_dir) {
  toml::table root;
  try {
    root = toml::parse(toml_text, source_name);
  } catch (const toml::parse_error& e) {
    fail("{}: TOML syntax error at line {}, column {}: {}", source_name, e.source().begin.line, e.source().begin.column,
         e.description());
  }
  EngineConfig config;
  config.source = source_name;
  int64_t schema_version = -1;
  {
    SectionReader top(root, "", source_name);
    top.read("schema_version", schema_version);
    for (const char* name :
         {"model", "engine", "kv_cache", "scheduler", "generation", "speculative", "tensor_parallel", "plugins"})
      top.allow(name);
    top.reject_unknown_keys();
  }
  if (schema_version != 1)
    fail("{}: schema_version = {} is not supported (this build reads schema_version = 1)", source_name,
         schema_version < 0 ? std::string("(missing)") : std::to_string(schema_version));
  read_sections(root, config, source_name, base_dir);
  validate_config(config);
  return config;
}

EngineConfig load_config(const std::string& path) {
  return parse_config(read_text_file(path, "config file"), path, std::filesystem::path(path).parent_path().string());
}

std::string check_backend_name(const std::string& backend) {
  return backend == "cpu" || backend == "cuda" ? "" : "must be \"cpu\" or \"cuda\"";
}

SamplingParams sampling_params_from(const GenerationSection& generation) {
  SamplingParams p;
  p.max_new_tokens = generation.max_new_tokens;
  p.temperature = generation.temperature;
  p.top_k = generation.top_k;
  p.top_p = generation.top_p;
  p.min_p = generation.min_p;
  if (generation.seed != 0) p.seed = generation.seed;
  p.presence_penalty = generation.presence_penalty;
  p.frequency_penalty = generation.frequency_penalty;
  p.repetition_penalty = generation.repetition_penalty;
  return p;
}

void validate_config(const EngineConfig& c) {
  const std::string& src = c.source.empty() ? std::string("config") : c.source;
  // Every numeric setting has a range; the message names the file, the key, the value and the
  // range. Upper bounds keep a typo from exhausting the machine (threads, memory) or overflowing
  // the engine's 32-bit token positions and KV slot numbers.
  auto in_range = [&](const char* key, int64_t v, int64_t lo, int64_t hi) {
    if (v < lo || v > hi) fail("{}: {} = {} is out of range [{}, {}]", src, key, v, lo, hi);
  };
  if (std::string bad = check_backend_name(c.engine.backend); !bad.empty())
    fail("{}: engine.backend = \"{}\": {}", src, c.engine.backend, bad);
  static const std::set<std::string> storage = {"auto", "float32", "float16", "bfloat16"};
  if (!storage.count(c.engine.dtype))
    fail("{}: engine.dtype = \"{}\" (expected auto, float32, float16 or bfloat16)", src, c.engine.dtype);
  in_range("engine.max_batch_size", c.engine.max_batch_size, 1, limits::kMaxBatchSize);
  in_range("engine.max_num_tokens", c.engine.max_num_tokens, 1, limits::kMaxNumTokens);
  in_range("engine.max_seq_len", c.engine.max_seq_len, 0, limits::kMaxSeqLen);
  in_range("engine.num_threads", c.engine.num_threads, 0, limits::kMaxThreads);
  in_range("engine.grammar_threads", c.engine.grammar_threads, -1, 64);
  // The most the mask cache is meant to hold explored (grammar::ConstraintRegistry::kExploredMasks).
  in_range("engine.grammar_explored_masks", c.engine.grammar_explored_masks, -1, 1024);
  in_range("kv_cache.block_size", c.kv_cache.block_size, 1, limits::kMaxBlockSize);
  in_range("kv_cache.num_pages", c.kv_cache.num_pages, 0, limits::kMaxKvSlots / c.kv_cache.block_size);
  if (!(c.kv_cache.memory_mb > 0 && c.kv_cache.memory_mb <= limits::kMaxMemoryMb))
    fail("{}: kv_cache.memory_mb = {} is out of range (0, {}]", src, c.kv_cache.memory_mb, limits::kMaxMemoryMb);
  if (!(c.kv_cache.memory_fraction >= 0 && c.kv_cache.memory_fraction < 1))
    fail("{}: kv_cache.memory_fraction = {} is out of range [0, 1) (0 = use memory_mb)", src,
         c.kv_cache.memory_fraction);
  static const std::set<std::string> dtypes = {"auto", "float32", "float16", "bfloat16"};
  if (!dtypes.count(c.kv_cache.dtype))
    fail("{}: kv_cache.dtype = \"{}\" (expected auto, float32, float16 or bfloat16)", src, c.kv_cache.dtype);
  if (c.scheduler.policy != "guaranteed_no_evict" && c.scheduler.policy != "max_utilization")
    fail("{}: scheduler.policy = \"{}\" (expected guaranteed_no_evict or max_utilization)", src, c.scheduler.policy);
  if (const auto bad = find_invalid_sampling_param(sampling_params_from(c.generation)))
    fail("{}: generation.{} = {}: {}", src, bad->field, bad->value, bad->requirement);
  in_range("speculative.max_draft_tokens", c.speculative.max_draft_tokens, 0, limits::kMaxDraftTokens);
  in_range("speculative.max_depth", c.speculative.max_depth, 0, limits::kMaxDraftTokens);
  if (!(c.speculative.fallback_below >= 0 && c.speculative.fallback_below <= limits::kMaxDraftTokens))
    fail("{}: speculative.fallback_below = {} is out of range [0, {}] (a tree's expected accepted tokens)", src,
         c.speculative.fallback_below, limits::kMaxDraftTokens);
  check_speculation_roles(c, src);
  check_tensor_parallel(c, src);
  if (!c.speculative.fallback_provider.empty() && c.speculative.fallback_provider == c.speculative.draft_provider)
    fail("{}: speculative.fallback_provider = \"{}\" is the draft_provider itself", src,
         c.speculative.fallback_provider);
}

}  // namespace drift
