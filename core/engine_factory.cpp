// Engine::from_config: turns an EngineConfig into a running engine (backend, weights, KV pages,
// tokenizer, special tokens), logging the capacity it derived.
#include <unistd.h>

#include <algorithm>
#include <thread>

#include <spdlog/spdlog.h>

#include "core/engine.h"
#include "core/error.h"
#include "core/executable_path.h"
#include "core/grammar/constraint_registry.h"
#include "core/kv_window_pages.h"
#include "core/model/model_layout.h"
#include "core/model/model_runner.h"
#include "core/model/model_weights.h"
#include "core/model_path.h"
#include "core/parallel/tensor_parallel_executor.h"
#include "core/plugin/backend_callbacks.h"
#include "core/plugin/engine_plugins.h"
#include "core/plugin/model_weight_service.h"
#include "kernels/cpu/parallel.h"

namespace drift {
namespace {

int64_t max_window(const ModelConfig& model) {
  int64_t window = 0;
  for (const LayerSpec& layer : model.layers) window = std::max(window, layer.attention_window);
  return window;
}

// How the config sized the KV cache, for messages.
std::string kv_budget_setting(const EngineConfig& config) {
  if (config.kv_cache.num_pages > 0) return fmt::format("kv_cache.num_pages = {}", config.kv_cache.num_pages);
  if (config.kv_cache.memory_fraction > 0)
    return fmt::format("kv_cache.memory_fraction = {}", config.kv_cache.memory_fraction);
  return fmt::format("kv_cache.memory_mb = {}", config.kv_cache.memory_mb);
}

// kv_cache.memory_fraction: the pool takes that share of the device memory left once the weights
// are in (the rest stays for activations, workspaces and graphs).
// What plugins declared they will hold whatever the pool's size (their weights and workspaces,
// allocated once they are created, after the pool) comes out of that share first.
int64_t pages_for_free_memory(const EngineConfig& config, const KVLayout& layout, Backend& backend,
                              int64_t plugin_fixed_bytes) {
  const std::optional<size_t> free = backend.free_device_memory();
  DRIFT_CHECK(free.has_value(), "backend {} reports no free device memory", backend.name());
  const auto share = static_cast<size_t>(static_cast<double>(*free) * config.kv_cache.memory_fraction);
  const auto fixed = static_cast<size_t>(plugin_fixed_bytes);
  if (fixed >= share)
    fail("{}: the plugins declare {:.1f} MiB of device memory, all of the {:.1f} MiB that {} leaves for the KV cache",
         config.source, fixed / 1048576.0, share / 1048576.0, kv_budget_setting(config));
  const size_t bytes = share - fixed;
  const int64_t pages = std::min(layout.pages_for_budget(bytes), limits::kMaxKvSlots / config.kv_cache.block_size);
  if (pages < 1)
    fail("{}: {} of the {:.0f} MiB free after loading the weights holds no KV page ({} bytes per page)", config.source,
         kv_budget_setting(config), *free / 1048576.0, layout.bytes_per_page());
  spdlog::info("KV cache: {} of {:.0f} MiB free device memory", kv_budget_setting(config), *free / 1048576.0);
  return pages;
}

int64_t derive_num_pages(const EngineConfig& config, const KVLayout& layout) {
  int64_t pages = config.kv_cache.num_pages;
  if (pages == 0) {
    const auto bytes = static_cast<size_t>(config.kv_cache.memory_mb * 1024.0 * 1024.0);
    pages = std::min(layout.pages_for_budget(bytes), limits::kMaxKvSlots / config.kv_cache.block_size);
  }
  if (pages < 1)
    fail("{}: {} holds no page ({} bytes per page)", config.source, kv_budget_setting(config), layout.bytes_per_page());
  return pages;
}

// Host memory is mapped lazily, so an oversized KV budget would only fail once its pages fill,
// deep into a run; refuse it up front instead, naming the setting.
void check_kv_fits_host_memory(const EngineConfig& config, int64_t pages, const KVLayout& layout,
                               int64_t plugin_fixed_bytes) {
  // Every tensor-parallel rank on this machine keeps its own pool of `pages`.
  const int64_t ranks_here = config.engine.tensor_parallel_size == 1  ? 1
                             : config.tensor_parallel.local_ranks > 0 ? config.tensor_parallel.local_ranks
                                                                      : config.engine.tensor_parallel_size;
  // Plugins run on rank 0 only.
  const auto plugins = static_cast<double>(layout.plugin_bytes(pages));
  const double target = static_cast<double>(layout.total_bytes(pages)) - plugins;
  const double kv_mib = (target * ranks_here + plugins + static_cast<double>(plugin_fixed_bytes)) / 1048576.0;
  const double host_mib = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGE_SIZE) / 1048576.0;
  if (host_mib > 0 && kv_mib > host_mib)
    fail("{}: {} asks for a {:.0f} MiB KV cache ({} pages{}), more than this machine's {:.0f} MiB of memory",
         config.source, kv_budget_setting(config), kv_mib, pages,
         ranks_here > 1 ? fmt::format(" for each of the {} tensor-parallel ranks here", ranks_here) : "", host_mib);
}

// The KV layout, with the sliding-window page group when the model has windowed layers beside
// full ones and the config leaves [kv_cache] window_pages on: the group is sized for the most
// sequences and step tokens the limits allow (one more sequence for Engine::score's probe).
KVLayout kv_layout_for(const EngineConfig& config, const ModelConfig& model, const SchedulerLimits& limits,
                       DType dtype) {
  const ModelLayout model_layout{model};
  KVLayout layout = model_layout.kv_layout(config.kv_cache.block_size, dtype);
  const int64_t windowed = model_layout.window_layers();
  if (windowed == 0 || windowed == model.num_layers || !config.kv_cache.window_pages) return layout;
  layout.window_layers = windowed;
  layout.window_pages_wanted = WindowPages::pages_to_never_run_short(max_window(model), config.kv_cache.block_size,
                                                                     limits.max_batch_size + 1, limits.max_num_tokens);
  return layout;
}

// The checkpoint's files (config.json, generation_config.json, tokenizer files) must agree with
// the model: a stop token the model cannot produce, or a BOS it cannot read, means they do not.
void check_special_tokens_in_vocab(const SpecialTokens& special, const ModelConfig& model, const std::string& dir) {
  auto check = [&](int32_t id, const char* what) {
    if (id < 0 || id >= model.vocab_size)
      fail("{}: the {} token id {} (from its tokenizer and config files) is outside the model's vocabulary [0, {})",
           dir, what, id, model.vocab_size);
  };
  for (int32_t id : special.eos_ids) check(id, "end-of-sequence");
  if (special.bos_id) check(*special.bos_id, "beginning-of-sequence");
}

// GPT-OSS's layers (sinks, windows, experts) run on the CPU and CUDA backends. Draft trees verify
// under its windows with full verification; a partial view (a verification plugin's page lists)
// renumbers positions, which a window cannot measure.
// source: the config's name for messages ("config" when it has none: `--model` on the command line).
void check_backend_runs_model(const std::string& source, const EngineConfig& config, const ModelConfig& model,
                              Backend& backend) {
  if (model.arch != Architecture::GptOss) return;
  if (backend.device() != Device::CPU && backend.device() != Device::CUDA)
    fail(
        "{}: model_type gpt_oss ({}) runs on the cpu and cuda backends; backend {} has no kernels for its "
        "attention sinks, sliding windows and experts",
        source, config.model.path, backend.name());
  if (config.speculative.enabled && config.speculative.verification != "full")
    fail(
        "{}: [speculative] verification = \"{}\" with model_type gpt_oss ({}): partial views of its "
        "sliding-window layers are not implemented; use verification = \"full\"",
        source, config.speculative.verification, config.model.path);
}

// Tensor parallelism (docs/tensor_parallel.md): rank 0 starts and joins the other ranks, sends each
// what to load, loads its own shard, and drives them through TensorParallelExecutor.
struct ParallelRunner {
  std::unique_ptr<ModelExecutor> executor;
  ModelRunner* runner = nullptr;               // rank 0's (or the only) runner
  TensorParallelExecutor* parallel = nullptr;  // when split over ranks
};

std::chrono::milliseconds seconds_to_ms(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000.0));
}

// The CPU threads each rank of this machine uses when engine.num_threads leaves it open: the
// cores shared among them (ranks are separate processes, each with its own pool).
int64_t threads_per_rank(const EngineConfig& config) {
  if (config.engine.num_threads > 0) return config.engine.num_threads;
  const int64_t local =
      config.tensor_parallel.local_ranks > 0 ? config.tensor_parallel.local_ranks : config.engine.tensor_parallel_size;
  return std::max<int64_t>(1, static_cast<int64_t>(std::thread::hardware_concurrency()) / local);
}

// What the local ranks run: the configured program, or this process's own binary when it is drift.
// Another program embedding the engine (a test, a user's server) must name a drift binary: started
// with `rank ...` arguments it would not be a rank, and might start engines of its own.
std::string rank_executable(const EngineConfig& config) {
  if (!config.tensor_parallel.rank_executable.empty()) return config.tensor_parallel.rank_executable;
  const std::filesystem::path self = executable_path();
  if (self.filename() != "drift")
    fail(
        "{}: engine.tensor_parallel_size = {}: this program ({}) is not drift, so it cannot start the ranks; set "
        "[tensor_parallel] rank_executable to a drift binary",
        config.source.empty() ? "config" : config.source, config.engine.tensor_parallel_size, self.string());
  return self.string();
}

ParallelRunner start_parallel_runner(const EngineConfig& config, const ModelConfig& model, const EngineOptions& options,
                                     Backend& backend) {
  const int size = static_cast<int>(config.engine.tensor_parallel_size);
  TensorParallelOptions tp;
  tp.size = size;
  tp.rendezvous = config.tensor_parallel.rendezvous;
  tp.local_ranks = static_cast<int>(config.tensor_parallel.local_ranks);
  tp.rank_executable = rank_executable(config);
  tp.timeout = seconds_to_ms(config.tensor_parallel.timeout_s);
  tp.start_timeout = seconds_to_ms(config.tensor_parallel.start_timeout_s);
  RankSetup setup;
  setup.model_path = std::filesystem::absolute(config.model.path).string();
  setup.backend = config.engine.backend;
  setup.dtype = config.engine.dtype;
  setup.num_threads = threads_per_rank(config);
  setup.remote_num_threads = config.engine.num_threads;
  setup.local_ranks = tp.local_ranks > 0 ? tp.local_ranks : size;
  setup.block_size = options.block_size;
  setup.num_pages = options.num_pages;
  setup.window_pages = options.window_pages;
  setup.timeout_ms = tp.timeout.count();
  setup.log_level = static_cast<int32_t>(spdlog::get_level());
  cpu::set_num_threads(static_cast<int>(setup.num_threads));
  TensorParallelGroup group = start_tensor_parallel_group(tp, setup);
  const ShardPlan plan = ShardPlan::for_rank(model, 0, size);
  ModelWeights weights = load_model_weights(config.model.path, model, plan, backend);
  auto runner = std::make_unique<ModelRunner>(model, std::move(weights), backend, options.num_pages, options.block_size,
                                              options.window_pages, RunnerShard{plan, group.communicator.get()});
  wait_until_ranks_ready(group, setup.model_path, tp.start_timeout);
  ParallelRunner out;
  out.runner = runner.get();
  auto executor = std::make_unique<TensorParallelExecutor>(std::move(group), std::move(runner));
  out.parallel = executor.get();
  out.executor = std::move(executor);
  return out;
}

}  // namespace

std::unique_ptr<Engine> Engine::from_config(const EngineConfig& config) {
  validate_config(config);
  const std::string& dir = config.model.path;
  const std::string& source = config.source.empty() ? std::string("config") : config.source;
  if (dir.empty()) fail("{}: [model] path is not set", source);
  if (const std::string why = check_model_path(dir); !why.empty())
    fail("{}: model.path = \"{}\": {}", source, dir, why);
  ModelConfig model = load_model_config(dir);
  // Positions past the model's range have no trained rotary embedding; a silent cut would hide the
  // config's intent, so an explicit larger value is an error.
  if (config.engine.max_seq_len > model.max_position_embeddings)
    fail("{}: engine.max_seq_len = {} exceeds the model's max_position_embeddings = {} ({}/config.json)", source,
         config.engine.max_seq_len, model.max_position_embeddings, dir);
  // Within its sliding window a Mistral model attends to everything, which is what the kernels do.
  if (model.sliding_window > 0 && config.engine.max_seq_len > model.sliding_window)
    fail(
        "{}: engine.max_seq_len = {} exceeds the model's sliding_window = {} ({}/config.json); sliding-window "
        "attention is not implemented, so sequences must stay within the window",
        source, config.engine.max_seq_len, model.sliding_window, dir);
  if (config.engine.num_threads > 0) cpu::set_num_threads(static_cast<int>(config.engine.num_threads));
  auto backend = create_backend(config);
  check_backend_runs_model(source, config, model, *backend);
  const int64_t tp_size = config.engine.tensor_parallel_size;
  if (const std::string why = check_tensor_parallel_size(model, tp_size); !why.empty())
    fail("{}: {} ({}/config.json)", source, why, dir);
  // Each rank keeps the KV of its own KV heads: pages are sized for one rank's share.
  const ModelConfig rank_model = local_model_config(model, ShardPlan::for_rank(model, 0, static_cast<int>(tp_size)));
  if (config.kv_cache.dtype != "auto" && config.kv_cache.dtype != dtype_name(backend->compute_dtype()))
    fail("{}: kv_cache.dtype = \"{}\" is not supported by backend {} (it stores {}; use \"auto\")", source,
         config.kv_cache.dtype, backend->name(), dtype_name(backend->compute_dtype()));
  // load_tokenizer already set the tokenizer's special tokens, resolving tokenizer_config.json's
  // token strings (bos_token "<|begin_of_text|>", ...) through the tokenizer itself; re-reading
  // them without it would lose those and fall back to config.json's ids.
  auto tokenizer = load_tokenizer_if_present(dir);
  if (!tokenizer) spdlog::info("no tokenizer in {}: token ids only", dir);
  const SpecialTokens special = checkpoint_special_tokens(dir, tokenizer.get());
  check_special_tokens_in_vocab(special, model, dir);
  // Plugins say what they will hold before the pool is sized (ABI 1.4 declare_memory).
  PluginMemory plugin_memory;
  std::unique_ptr<PluginHost> preloaded;
  const bool uses_plugins = !config.plugins.empty() || config.speculative.enabled;
  if (uses_plugins)
    preloaded = preload_plugins(config,
                                engine_model_info(config, model, special, config.kv_cache.block_size, 0,
                                                  backend->device(), backend->compute_dtype()),
                                plugin_memory);
  EngineOptions options;
  options.block_size = config.kv_cache.block_size;
  options.capacity_policy = config.scheduler.policy;
  options.limits.max_batch_size = config.engine.max_batch_size;
  options.limits.max_num_tokens = config.engine.max_num_tokens;
  KVLayout layout = kv_layout_for(config, rank_model, options.limits, backend->compute_dtype());
  layout.plugin_bytes_per_token = plugin_memory.bytes_per_kv_token;
  const bool from_free_memory = config.kv_cache.num_pages == 0 && config.kv_cache.memory_fraction > 0;
  if (from_free_memory && backend->device() == Device::CPU)
    fail(
        "{}: kv_cache.memory_fraction needs a device backend; backend {} sizes its KV cache with memory_mb or "
        "num_pages",
        source, backend->name());
  if (!from_free_memory) options.num_pages = derive_num_pages(config, layout);
  if (backend->device() == Device::CPU)
    check_kv_fits_host_memory(config, options.num_pages, layout, plugin_memory.fixed_bytes);  // before the weights
  options.check_kv_integrity = config.engine.check_kv_integrity;
  // By default no mask workers beside the CPU backend: its forward keeps every core busy, and
  // masks are a fraction of a percent of its step.
  options.grammar_threads = config.engine.grammar_threads < 0 && config.engine.backend == "cpu"
                                ? 0
                                : static_cast<int>(config.engine.grammar_threads);
  options.grammar_explored_masks = static_cast<int>(config.engine.grammar_explored_masks);
  options.speculation.max_draft_tokens = config.speculative.max_draft_tokens;
  options.speculation.max_depth = config.speculative.max_depth;
  options.speculation.adaptive = config.speculative.adaptive;
  options.speculation.fallback_provider = config.speculative.fallback_provider;
  options.speculation.fallback_below = config.speculative.fallback_below;
  options.limits.max_seq_len =
      config.engine.max_seq_len > 0 ? config.engine.max_seq_len : model.max_position_embeddings;
  if (model.sliding_window > 0 && options.limits.max_seq_len > model.sliding_window) {
    spdlog::info("max_seq_len {} (the model's sliding_window; sliding-window attention is not implemented)",
                 model.sliding_window);
    options.limits.max_seq_len = model.sliding_window;
  }

  spdlog::info("loading {} model from {} ({} layers, hidden {}, vocab {}{})", architecture_name(model.arch), dir,
               model.num_layers, model.hidden_size, model.vocab_size,
               tp_size > 1 ? fmt::format(", split over {} ranks", tp_size) : "");
  ModelWeights weights = tp_size > 1 ? ModelWeights{} : load_model_weights(dir, model, *backend);
  if (from_free_memory) options.num_pages = pages_for_free_memory(config, layout, *backend, plugin_memory.fixed_bytes);
  options.window_pages = layout.window_pages_for(options.num_pages);
  options.window = max_window(model);
  const size_t plugin_share = layout.plugin_bytes(options.num_pages);
  spdlog::info("KV cache: {} pages x {} tokens ({:.1f} MiB, {} bytes/token{}{}), backend {}", options.num_pages,
               options.block_size, (layout.total_bytes(options.num_pages) - plugin_share) / 1048576.0,
               layout.bytes_per_page() / options.block_size,
               plugin_share > 0 ? fmt::format("; beside it the plugins' {} bytes/token, {:.1f} MiB",
                                              layout.plugin_bytes_per_token, plugin_share / 1048576.0)
                                : "",
               tp_size > 1 ? " on each rank" : "", backend->name());
  if (options.window_pages > 0)
    spdlog::info(
        "KV cache: the {} sliding-window layers (window {}) keep only what their window sees, in {} pages of "
        "their own ({:.1f} MiB)",
        layout.window_layers, options.window, options.window_pages,
        options.window_pages * layout.window_bytes_per_page() / 1048576.0);

  options.eos_ids = special.eos_ids;

  ParallelRunner runner;
  try {
    if (tp_size > 1) {
      runner = start_parallel_runner(config, model, options, *backend);
    } else {
      auto single = std::make_unique<ModelRunner>(model, std::move(weights), *backend, options.num_pages,
                                                  options.block_size, options.window_pages);
      runner.runner = single.get();
      runner.executor = std::move(single);
    }
  } catch (const std::bad_alloc&) {
    fail("{}: out of memory allocating the KV cache ({} pages, {:.1f} MiB; {})", source, options.num_pages,
         (layout.total_bytes(options.num_pages) - layout.plugin_bytes(options.num_pages)) / 1048576.0,
         kv_budget_setting(config));
  }
  ModelRunner* runner_view = runner.runner;
  TensorParallelExecutor* parallel = runner.parallel;
  auto engine = std::make_unique<Engine>(options, std::move(runner.executor));
  engine->backend_ = std::move(backend);
  engine->tokenizer_ = std::move(tokenizer);
  engine->model_config_ = model;
  // Structured output's vocabulary trie is built now, in the background, not by the first
  // request with a format (Llama 3's 128K tokens take ~110 ms).
  if (engine->tokenizer_) engine->grammars_ = engine->make_grammars();
  if (uses_plugins) {
    Backend& backend_ref = *engine->backend_;
    engine->enable_plugins(
        config, model, special,
        [&](HostCallbacks& cb) {
          if (parallel) {
            // Split over ranks, rank 0 holds one rank's share of the KV heads: plugins get no paged
            // attention over the engine's KV; the shared weights they may read are loaded whole, when
            // one first asks.
            install_compute_callbacks(cb, backend_ref, model, runner_view->rope());
            parallel->set_shared_weights_loader(
                [dir, model, &backend_ref] { return load_shared_weights(dir, model, backend_ref); });
            install_model_weight_service(cb,
                                         [parallel]() -> const ModelWeights& { return parallel->shared_weights(); });
            return;
          }
          EngineKvAccess kv{[runner_view] { return &runner_view->kv_layers(); }, options.block_size, cb.block_table,
                            runner_view->windowed_layers()};
          install_compute_callbacks(cb, backend_ref, model, runner_view->rope(), std::move(kv));
          install_model_weight_service(cb, runner_view->weights());
        },
        std::move(preloaded));
  }
  return engine;
}

}  // namespace drift
