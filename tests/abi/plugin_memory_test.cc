// ABI 1.4's declare_memory inside the real engine (stories260K on the CPU backend), with the
// memory_declaring test plugin: plugins are asked before the KV pool is sized (num_pages 0 then,
// the final count at create); what they declare per token comes out of kv_cache.memory_mb with
// the target's pages; what a plugin that declared holds is capped at its declaration (beyond it,
// tensor_alloc answers DRIFT_ERROR_OUT_OF_MEMORY); a failing or absurd declaration disables the
// plugin, which stops the engine unless the entry is optional.
#include <nlohmann/json.hpp>

#include "abi_test_util.h"
#include "core/engine.h"
#include "core/error.h"
#include "core/model/model_layout.h"
#include "support/test_data.h"

namespace drift::test {
namespace {

using ::testing::HasSubstr;

constexpr double kMemoryMb = 1.0;
constexpr int64_t kBlock = 16;

EngineConfig memory_config(const std::string& settings, bool optional = false) {
  EngineConfig c;
  c.model.path = test_data_path("models/stories260K");
  c.engine.max_num_tokens = 32;
  c.engine.max_seq_len = 256;
  c.kv_cache.block_size = kBlock;
  c.kv_cache.memory_mb = kMemoryMb;
  PluginEntry e;
  e.name = "mem";
  e.path = DRIFT_ABI_PLUGIN_MEMORY_DECLARING;
  e.settings_toml = settings;
  e.optional = optional;
  c.plugins.push_back(e);
  return c;
}

// The target's KV bytes per page of stories260K.
size_t target_page_bytes() {
  return ModelLayout{load_model_config(test_data_path("models/stories260K"))}
      .kv_layout(kBlock, DType::F32)
      .bytes_per_page();
}

PluginInfo mem_info(const Engine& engine) {  // the memory_declaring plugin's
  for (const PluginInfo& info : engine.plugin_infos())
    if (info.name == "mem") return info;
  ADD_FAILURE() << "no plugin 'mem'";
  return {};
}

nlohmann::json mem_stats(const Engine& engine) { return nlohmann::json::parse(engine.plugin_stats().at("mem")); }

TEST(PluginMemory, TheKvPoolMakesRoomForWhatAPluginDeclaresPerToken) {
  const auto budget = static_cast<size_t>(kMemoryMb * 1048576);
  auto plain = Engine::from_config(memory_config("fixed_bytes = 0\nbytes_per_kv_token = 0\n"));
  EXPECT_EQ(plain->kv().num_pages(), static_cast<int64_t>(budget / target_page_bytes()));
  auto engine = Engine::from_config(memory_config("fixed_bytes = 4096\nbytes_per_kv_token = 1000\n"));
  const int64_t pages = engine->kv().num_pages();
  EXPECT_EQ(pages, static_cast<int64_t>(budget / (target_page_bytes() + kBlock * 1000)));
  EXPECT_LT(pages, plain->kv().num_pages());
  const nlohmann::json stats = mem_stats(*engine);
  EXPECT_EQ(stats.at("declare_pages"), 0);  // asked before the pool was sized
  EXPECT_EQ(stats.at("create_pages"), pages);
  EXPECT_EQ(mem_info(*engine).memory_limit, 4096 + 1000 * pages * kBlock);
  EXPECT_EQ(mem_info(*plain).memory_limit, 0);
}

TEST(PluginMemory, WhatAPluginDeclaredItMayHoldAndNotAByteMore) {
  auto engine = Engine::from_config(memory_config("fixed_bytes = 4096\nalloc_bytes = 4096\n"));
  EXPECT_EQ(mem_stats(*engine).at("alloc_status"), DRIFT_OK);
  EXPECT_EQ(mem_info(*engine).memory_peak, 4096);

  LogCapture log;
  auto without = Engine::from_config(memory_config("fixed_bytes = 4096\nalloc_bytes = 4100\n", /*optional=*/true));
  const PluginInfo info = mem_info(*without);
  EXPECT_FALSE(info.enabled);
  EXPECT_THAT(info.error, HasSubstr("create"));
  EXPECT_THAT(log.matching("more than the 4096 it declared"), ::testing::Not(::testing::IsEmpty()))
      << ::testing::PrintToString(log.lines());
  // A plugin without the hook (an older one) declares nothing and is not limited.
  EngineConfig config = memory_config("");
  PluginEntry good;
  good.name = "good";
  good.path = DRIFT_ABI_PLUGIN_GOOD;
  config.plugins.push_back(good);
  auto mixed = Engine::from_config(config);
  for (const PluginInfo& info : mixed->plugin_infos())
    EXPECT_EQ(info.memory_limit, info.name == "good" ? -1 : 0) << info.name;
}

TEST(PluginMemory, AFailingOrAbsurdDeclarationStopsTheEngineNamingThePlugin) {
  for (const auto& [settings, reason] : {std::pair<std::string, std::string>{"fail_declare = true\n", "told to fail"},
                                         {"fixed_bytes = -1\n", "fixed_bytes = -1"},
                                         {"bytes_per_kv_token = 4294967296\n", "bytes_per_kv_token = 4294967296"}}) {
    try {
      Engine::from_config(memory_config(settings));
      ADD_FAILURE() << "the engine started with " << settings;
    } catch (const DriftError& e) {
      EXPECT_THAT(e.what(), HasSubstr("plugin 'mem' could not be loaded"));
      EXPECT_THAT(e.what(), HasSubstr("declare_memory"));
      EXPECT_THAT(e.what(), HasSubstr(reason));
    }
  }
  // Optional: the engine runs without it, its pool sized as if it were not there.
  auto engine = Engine::from_config(memory_config("fixed_bytes = -1\nbytes_per_kv_token = 1000\n", true));
  EXPECT_FALSE(mem_info(*engine).enabled);
  EXPECT_EQ(engine->kv().num_pages(), static_cast<int64_t>(kMemoryMb * 1048576 / target_page_bytes()));
}

}  // namespace
}  // namespace drift::test
