// Engine configs: every file in configs/ loads and builds a working engine; unknown keys, wrong
// types and bad values are errors naming the key, the value and the file.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/config.h"
#include "core/engine.h"
#include "core/error.h"
#include "support/test_data.h"

namespace drift {
namespace {

std::string error_of(const std::string& toml) {
  try {
    parse_config(toml, "bad.toml", "/base");
  } catch (const DriftError& e) {
    return e.what();
  }
  return "(no error)";
}

// A shipped config's model is stories260K (in the checkout's models/) or the SmolLM2 that
// scripts/setup.sh fetches; a missing one fails the test, naming it.
void require_model_of(const EngineConfig& config) {
  if (std::filesystem::is_directory(config.model.path)) return;
  const std::string name = std::filesystem::path(config.model.path).filename().string();
  if (name == "smollm2-135m-instruct") {
    test::smollm2_model_dir();
  } else {
    test::test_data_path("models/" + name);
  }
}

TEST(ConfigTest, EveryShippedConfigLoadsAndRuns) {
  int loaded = 0;
  for (const auto& entry : std::filesystem::directory_iterator(test::source_dir() + "/configs")) {
    if (entry.path().extension() != ".toml") continue;
    SCOPED_TRACE(entry.path().string());
    EngineConfig config = load_config(entry.path().string());
    require_model_of(config);
    ASSERT_TRUE(std::filesystem::is_directory(config.model.path)) << "model path " << config.model.path << " missing";
    if (!config.plugins.empty()) continue;  // plugin configs are exercised by the plugin suites
    // Ranks run `drift rank`; this test binary is not drift.
    if (config.engine.tensor_parallel_size > 1) config.tensor_parallel.rank_executable = test::drift_exe();
    auto engine = Engine::from_config(config);
    SamplingParams p = sampling_params_from(config.generation);  // what `drift generate` sends
    p.max_new_tokens = 4;
    p.ignore_eos = true;
    const int64_t id = engine->add_request({1, 2, 3}, p);
    while (engine->has_unfinished()) engine->step();
    EXPECT_EQ(engine->request(id).output.size(), 4u) << engine->request(id).error;
    if (config.generation.seed != 0) {
      EXPECT_EQ(engine->request(id).seed, config.generation.seed);
    }
    ++loaded;
  }
  EXPECT_GE(loaded, 1);
}

TEST(ConfigTest, ParsesEverySectionAndResolvesPathsAgainstTheFile) {
  EngineConfig c = parse_config(R"(
schema_version = 1
[model]
path = "models/x"
[engine]
backend = "cpu"
max_batch_size = 3
max_num_tokens = 77
max_seq_len = 300
check_kv_integrity = true
[kv_cache]
block_size = 8
num_pages = 12
[scheduler]
policy = "max_utilization"
[generation]
max_new_tokens = 5
temperature = 1
top_p = 0.5
seed = 9
)",
                                "c.toml", "/etc/drift");
  EXPECT_EQ(c.model.path, "/etc/drift/models/x");
  EXPECT_EQ(c.engine.max_batch_size, 3);
  EXPECT_EQ(c.engine.max_num_tokens, 77);
  EXPECT_TRUE(c.engine.check_kv_integrity);
  EXPECT_FALSE(EngineConfig{}.engine.check_kv_integrity) << "integrity checks are opt-in";
  EXPECT_EQ(c.kv_cache.num_pages, 12);
  EXPECT_EQ(c.scheduler.policy, "max_utilization");
  EXPECT_DOUBLE_EQ(c.generation.temperature, 1.0);
  EXPECT_EQ(c.generation.seed, 9u);
}

TEST(ConfigTest, ErrorsNameKeyValueAndFile) {
  EXPECT_EQ(error_of("schema_version = 1\n[engine]\nmax_batch = 3\n"), "bad.toml: unknown key 'engine.max_batch'");
  EXPECT_EQ(error_of("schema_version = 1\nbogus = 1\n"), "bad.toml: unknown key 'bogus'");
  EXPECT_NE(error_of("schema_version = 1\n[engine]\nmax_batch_size = \"8\"\n")
                .find("key 'engine.max_batch_size' has the wrong type (expected an integer, got string"),
            std::string::npos);
  EXPECT_NE(error_of("schema_version = 2\n").find("schema_version = 2 is not supported"), std::string::npos);
  EXPECT_NE(error_of("[model]\npath = \"x\"\n").find("schema_version = (missing)"), std::string::npos);
  EXPECT_EQ(error_of("schema_version = 1\n[engine]\nbackend = \"tpu\"\n"),
            "bad.toml: engine.backend = \"tpu\": must be \"cpu\" or \"cuda\"");
  EXPECT_NE(error_of("schema_version = 1\n[scheduler]\npolicy = \"fast\"\n").find("scheduler.policy = \"fast\""),
            std::string::npos);
  EXPECT_NE(error_of("schema_version = 1\n[kv_cache]\nblock_size = 0\n")
                .find("kv_cache.block_size = 0 is out of range [1, 1024]"),
            std::string::npos);
  EXPECT_NE(error_of("schema_version = 1\n[engine\n").find("bad.toml: TOML syntax error at line 2"), std::string::npos);
  EXPECT_NE(error_of("schema_version = 1\nengine = 3\n").find("'engine' must be a table"), std::string::npos);
}

// Hardening items 1, 7 and 11: every numeric setting has a range, and the message names the file,
// the key, the value and the range.
TEST(ConfigTest, NumericSettingsAreBoundedNamingTheRange) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"[engine]\nnum_threads = 100000\n", "bad.toml: engine.num_threads = 100000 is out of range [0, 1024]"},
      {"[engine]\nnum_threads = 4294967297\n", "bad.toml: engine.num_threads = 4294967297 is out of range [0, 1024]"},
      {"[engine]\nnum_threads = -1\n", "bad.toml: engine.num_threads = -1 is out of range [0, 1024]"},
      {"[engine]\ngrammar_threads = -2\n", "bad.toml: engine.grammar_threads = -2 is out of range [-1, 64]"},
      {"[engine]\ngrammar_threads = 65\n", "bad.toml: engine.grammar_threads = 65 is out of range [-1, 64]"},
      {"[engine]\ngrammar_explored_masks = 1025\n",
       "bad.toml: engine.grammar_explored_masks = 1025 is out of range [-1, 1024]"},
      {"[engine]\nmax_batch_size = 0\n", "bad.toml: engine.max_batch_size = 0 is out of range [1, 65536]"},
      {"[engine]\nmax_batch_size = 1000000\n", "bad.toml: engine.max_batch_size = 1000000 is out of range [1, 65536]"},
      {"[engine]\nmax_num_tokens = 2000000\n",
       "bad.toml: engine.max_num_tokens = 2000000 is out of range [1, 1048576]"},
      {"[engine]\nmax_seq_len = 4294967296\n",
       "bad.toml: engine.max_seq_len = 4294967296 is out of range [0, 2147483647]"},
      {"[kv_cache]\nblock_size = 4096\n", "bad.toml: kv_cache.block_size = 4096 is out of range [1, 1024]"},
      {"[kv_cache]\nnum_pages = 1000000000\n",
       "bad.toml: kv_cache.num_pages = 1000000000 is out of range [0, 134217727]"},
      {"[kv_cache]\nmemory_mb = inf\n", "bad.toml: kv_cache.memory_mb = inf is out of range (0, 16777216]"},
      {"[kv_cache]\nmemory_mb = nan\n", "bad.toml: kv_cache.memory_mb = nan is out of range (0, 16777216]"},
      {"[kv_cache]\nmemory_mb = 1e8\n", "bad.toml: kv_cache.memory_mb = 100000000 is out of range (0, 16777216]"},
      {"[kv_cache]\nmemory_mb = 0\n", "bad.toml: kv_cache.memory_mb = 0 is out of range (0, 16777216]"},
      {"[kv_cache]\nmemory_fraction = 1.0\n",
       "bad.toml: kv_cache.memory_fraction = 1 is out of range [0, 1) (0 = use memory_mb)"},
      {"[kv_cache]\nmemory_fraction = -0.5\n",
       "bad.toml: kv_cache.memory_fraction = -0.5 is out of range [0, 1) (0 = use memory_mb)"},
      {"[speculative]\nmax_draft_tokens = 1000000000\n",
       "bad.toml: speculative.max_draft_tokens = 1000000000 is out of range [0, 1024]"},
      {"[speculative]\nmax_draft_tokens = -1\n",
       "bad.toml: speculative.max_draft_tokens = -1 is out of range [0, 1024]"},
      {"[speculative]\nfallback_below = -0.5\n",
       "bad.toml: speculative.fallback_below = -0.5 is out of range [0, 1024] (a tree's expected accepted tokens)"},
      {"[speculative]\nfallback_below = nan\n",
       "bad.toml: speculative.fallback_below = nan is out of range [0, 1024] (a tree's expected accepted tokens)"},
      {"[speculative]\ndraft_provider = \"a\"\nfallback_provider = \"a\"\n",
       "bad.toml: speculative.fallback_provider = \"a\" is the draft_provider itself"},
  };
  for (const auto& [text, message] : cases) EXPECT_EQ(error_of("schema_version = 1\n" + text), message) << text;
  // The bounds themselves are accepted.
  EXPECT_EQ(parse_config("schema_version = 1\n[engine]\nnum_threads = 1024\n[speculative]\nmax_draft_tokens = 1024\n"
                         "[kv_cache]\nmemory_mb = 16777216\n",
                         "ok.toml", "")
                .engine.num_threads,
            1024);
}

TEST(ConfigTest, ADirectoryIsNotAConfigFile) {
  const std::string dir = test::make_temp_dir("drift-config-dir");
  try {
    load_config(dir);
    ADD_FAILURE() << "a directory was read as a config";
  } catch (const DriftError& e) {
    EXPECT_EQ(std::string(e.what()), "config file '" + dir + "' is a directory, not a file");
  }
  std::filesystem::remove_all(dir);
}

TEST(ConfigTest, PluginEntriesMayBeOptional) {
  EngineConfig c = parse_config(
      "schema_version = 1\n[[plugins]]\nname = \"a\"\noptional = true\n[[plugins]]\nname = \"b\"\n", "p.toml", "");
  ASSERT_EQ(c.plugins.size(), 2u);
  EXPECT_TRUE(c.plugins[0].optional);
  EXPECT_FALSE(c.plugins[1].optional) << "a configured plugin is required unless it says otherwise";
  EXPECT_NE(error_of("schema_version = 1\n[[plugins]]\nname = \"a\"\noptional = 1\n")
                .find("key 'plugins.a.optional' has the wrong type (expected a boolean"),
            std::string::npos);
}

TEST(ConfigTest, GenerationValuesAreCheckedAtLoadNamingFileKeyAndValue) {
  EXPECT_EQ(error_of("schema_version = 1\n[generation]\ntemperature = -1.0\n"),
            "bad.toml: generation.temperature = -1: must be a finite number >= 0");
  EXPECT_EQ(error_of("schema_version = 1\n[generation]\ntop_p = 1.5\n"),
            "bad.toml: generation.top_p = 1.5: must be in (0, 1]");
  EXPECT_EQ(error_of("schema_version = 1\n[generation]\npresence_penalty = 2.5\n"),
            "bad.toml: generation.presence_penalty = 2.5: must be in [-2, 2]");
  EXPECT_EQ(error_of("schema_version = 1\n[generation]\nrepetition_penalty = 0.0\n"),
            "bad.toml: generation.repetition_penalty = 0: must be a finite number > 0 (1 = off)");
  EXPECT_EQ(error_of("schema_version = 1\n[generation]\nmin_p = -0.25\n"),
            "bad.toml: generation.min_p = -0.25: must be in [0, 1]");
  EXPECT_EQ(error_of("schema_version = 1\n[generation]\ntop_k = -3\n"),
            "bad.toml: generation.top_k = -3: must be >= 0 (0 disables)");
  EXPECT_EQ(error_of("schema_version = 1\n[generation]\nmax_new_tokens = 0\n"),
            "bad.toml: generation.max_new_tokens = 0: must be >= 1");
  EXPECT_NE(error_of("schema_version = 1\n[generation]\nseed = -1\n").find("key 'generation.seed' has the wrong type"),
            std::string::npos);
  // A float where an integer belongs is the wrong type, however large (1.1e33 used to reach an
  // undefined float-to-int64 conversion; found by fuzz_engine_config).
  for (const char* seed : {"1.1e33", "7.0", "inf"})
    EXPECT_NE(
        error_of(std::string("schema_version = 1\n[generation]\nseed = ") + seed + "\n")
            .find("key 'generation.seed' has the wrong type (expected a non-negative integer, got floating-point"),
        std::string::npos)
        << seed;
}

TEST(ConfigTest, RequestDefaultsComeFromTheGenerationTable) {
  GenerationSection g;
  g.max_new_tokens = 7;
  g.temperature = 0.5;
  g.top_k = 3;
  g.top_p = 0.8;
  g.min_p = 0.1;
  SamplingParams p = sampling_params_from(g);
  EXPECT_EQ(p.max_new_tokens, 7);
  EXPECT_EQ(p.temperature, 0.5);
  EXPECT_EQ(p.top_k, 3);
  EXPECT_EQ(p.top_p, 0.8);
  EXPECT_EQ(p.min_p, 0.1);
  EXPECT_FALSE(p.seed.has_value()) << "seed 0 means a fresh seed per request";
  g.seed = 42;
  EXPECT_EQ(sampling_params_from(g).seed, 42u);
}

TEST(ConfigTest, MissingModelDirectoryNamesTheFileAndKey) {
  const std::string dir = test::make_temp_dir("drift-config");
  std::ofstream(dir + "/m.toml") << "schema_version = 1\n[model]\npath = \"no-such-model\"\n";
  try {
    Engine::from_config(load_config(dir + "/m.toml"));
    FAIL() << "a missing model directory was accepted";
  } catch (const DriftError& e) {
    EXPECT_EQ(std::string(e.what()),
              dir + "/m.toml: model.path = \"" + dir + "/no-such-model\": the model directory does not exist");
  }
  std::filesystem::remove_all(dir);
}

// Issue 32: a checkpoint file given for its folder was reported as missing.
TEST(ConfigTest, AModelPathThatIsAFileSaysSo) {
  const std::string dir = test::make_temp_dir("drift-config");
  std::ofstream(dir + "/model.safetensors") << "not a folder";
  std::ofstream(dir + "/m.toml") << "schema_version = 1\n[model]\npath = \"model.safetensors\"\n";
  try {
    Engine::from_config(load_config(dir + "/m.toml"));
    FAIL() << "a file was accepted as the model folder";
  } catch (const DriftError& e) {
    EXPECT_EQ(std::string(e.what()), dir + "/m.toml: model.path = \"" + dir +
                                         "/model.safetensors\": is a file, not a checkpoint folder (give the folder "
                                         "that holds config.json and the *.safetensors)");
  }
  std::filesystem::remove_all(dir);
}

// Issue 32: [speculative] roles that name nothing were accepted and the run went on without the
// strategy: speculation on with no draft provider, or a verification policy that is not
// configured while speculation is off (no plugin was loaded, so nothing checked the name).
TEST(ConfigTest, SpeculativeRolesMustNameConfiguredPlugins) {
  EXPECT_EQ(error_of("schema_version = 1\n[speculative]\nenabled = true\n"),
            "bad.toml: speculative.enabled = true, but speculative.draft_provider is not set: name the [[plugins]] "
            "entry that drafts (configured: none), or set enabled = false");
  EXPECT_EQ(error_of("schema_version = 1\n[speculative]\nenabled = true\ndraft_provider = \"ngarm\"\n"
                     "[[plugins]]\nname = \"ngram\"\n"),
            "bad.toml: speculative.draft_provider = \"ngarm\": no [[plugins]] entry has that name (configured: "
            "\"ngram\")");
  EXPECT_EQ(error_of("schema_version = 1\n[speculative]\nverification = \"specpvv\"\n"),
            "bad.toml: speculative.verification = \"specpvv\": no [[plugins]] entry has that name (configured: "
            "none); use \"full\" (the built-in) or add the policy's [[plugins]] entry");
  // What is right is still accepted: the built-in policy, a configured one, a provider named.
  EXPECT_NO_THROW(parse_config("schema_version = 1\n[speculative]\nverification = \"full\"\n", "ok.toml", ""));
  EXPECT_NO_THROW(
      parse_config("schema_version = 1\n[speculative]\nenabled = true\ndraft_provider = \"ngram\"\n"
                   "verification = \"specpv\"\n[[plugins]]\nname = \"ngram\"\n[[plugins]]\n"
                   "name = \"specpv\"\n",
                   "ok.toml", ""));
  // A policy that does not exist is refused before any weight is loaded, with speculation off and
  // no plugin at all (Engine::from_config on a config built in code).
  EngineConfig c;
  c.source = "code.toml";
  c.model.path = test::test_data_path("golden/llama-tiny");
  c.speculative.verification = "nope";
  try {
    Engine::from_config(c);
    FAIL() << "an unknown verification policy was accepted";
  } catch (const DriftError& e) {
    EXPECT_THAT(std::string(e.what()), ::testing::HasSubstr("code.toml: speculative.verification = \"nope\""));
  }
}

// Adaptive speculation is on unless [speculative] adaptive = false; a non-boolean names the key.
TEST(ConfigTest, AdaptiveSpeculationIsOnByDefault) {
  EXPECT_TRUE(
      parse_config("schema_version = 1\n[speculative]\nmax_draft_tokens = 4\n", "ok.toml", "").speculative.adaptive);
  EXPECT_FALSE(
      parse_config("schema_version = 1\n[speculative]\nadaptive = false\n", "ok.toml", "").speculative.adaptive);
  EXPECT_NE(error_of("schema_version = 1\n[speculative]\nadaptive = \"yes\"\n").find("speculative.adaptive"),
            std::string::npos);
}

TEST(ConfigTest, MaxSeqLenDefaultsToTheModelsAndMayNotExceedIt) {
  EngineConfig c;
  c.source = "len.toml";
  c.model.path = test::test_data_path("golden/llama-tiny");  // max_position_embeddings 4096
  c.kv_cache.num_pages = 4;
  EXPECT_EQ(Engine::from_config(c)->options().limits.max_seq_len, 4096) << "0 = the model's";
  c.engine.max_seq_len = 4096;
  EXPECT_EQ(Engine::from_config(c)->options().limits.max_seq_len, 4096);
  c.engine.max_seq_len = 4097;
  try {
    Engine::from_config(c);
    FAIL() << "max_seq_len above max_position_embeddings accepted";
  } catch (const DriftError& e) {
    EXPECT_EQ(std::string(e.what()),
              "len.toml: engine.max_seq_len = 4097 exceeds the model's max_position_embeddings = "
              "4096 (" +
                  c.model.path + "/config.json)");
  }
}

TEST(ConfigTest, PluginEntriesCarryTheirOwnSettingsTable) {
  EngineConfig c = parse_config(R"(
schema_version = 1
[[plugins]]
name = "specpv"
path = "libs/specpv.so"
[plugins.specpv]
n_sink_blocks = 2
[[plugins]]
name = "prefix_cache"
)",
                                "p.toml", "/opt");
  ASSERT_EQ(c.plugins.size(), 2u);
  EXPECT_EQ(c.plugins[0].path, "/opt/libs/specpv.so");
  EXPECT_NE(c.plugins[0].settings_toml.find("n_sink_blocks = 2"), std::string::npos);
  EXPECT_EQ(c.plugins[1].path, "");
  EXPECT_EQ(error_of("schema_version = 1\n[[plugins]]\nname = \"a\"\nwhat = 1\n"),
            "bad.toml: unknown key 'plugins.a.what'");
}

TEST(ConfigTest, KvDtypeTheBackendCannotStoreIsRefused) {
  EngineConfig c;
  c.source = "kv.toml";
  c.model.path = test::test_data_path("golden/llama-tiny");
  c.kv_cache.dtype = "bfloat16";
  try {
    Engine::from_config(c);
    FAIL() << "bfloat16 KV accepted by the fp32 CPU backend";
  } catch (const DriftError& e) {
    EXPECT_EQ(
        std::string(e.what()),
        "kv.toml: kv_cache.dtype = \"bfloat16\" is not supported by backend cpu (it stores float32; use \"auto\")");
  }
}

// GPT-OSS verifies draft trees under its sliding windows with full verification; a verification
// plugin's partial views (page lists) cannot carry a window, so a config that asks for one is
// refused up front, naming the policy and the model type.
TEST(ConfigTest, PartialVerificationWithAGptOssModelIsRefused) {
  EngineConfig c;
  c.source = "spec.toml";
  c.model.path = test::test_data_path("golden/gptoss-tiny");
  c.speculative.enabled = true;
  c.speculative.draft_provider = "ngram";
  c.speculative.verification = "specpv";
  c.plugins.push_back(PluginEntry{"ngram", "", "", false, ""});
  c.plugins.push_back(PluginEntry{"specpv", "", "", false, ""});
  try {
    Engine::from_config(c);
    FAIL() << "a partial view accepted for gpt_oss";
  } catch (const DriftError& e) {
    EXPECT_THAT(std::string(e.what()),
                ::testing::HasSubstr("spec.toml: [speculative] verification = \"specpv\" with model_type gpt_oss"));
  }
  c.speculative.verification = "full";
  c.plugins.pop_back();
  EXPECT_NO_THROW(Engine::from_config(c));
}

TEST(ConfigTest, StorageDtypeTheBackendCannotUseIsRefused) {
  EngineConfig c;
  c.source = "dt.toml";
  c.model.path = test::test_data_path("golden/llama-tiny");
  c.engine.dtype = "float16";
  try {
    Engine::from_config(c);
    FAIL() << "float16 accepted by the fp32 CPU backend";
  } catch (const DriftError& e) {
    EXPECT_EQ(std::string(e.what()),
              "dt.toml: engine.dtype = \"float16\": backend cpu computes in float32 (use \"auto\" or \"float32\")");
  }
  EXPECT_EQ(error_of("schema_version = 1\n[engine]\ndtype = \"fp8\"\n"),
            "bad.toml: engine.dtype = \"fp8\" (expected auto, float32, float16 or bfloat16)");
}

TEST(ConfigTest, MissingFileIsNamed) {
  try {
    load_config("/nonexistent/drift.toml");
    FAIL();
  } catch (const DriftError& e) {
    EXPECT_EQ(std::string(e.what()), "cannot open config file '/nonexistent/drift.toml'");
  }
}

}  // namespace
}  // namespace drift
