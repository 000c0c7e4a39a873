// Engine start-up cost that must not grow with the KV budget (hardening item 12): the pool used
// to be zero-filled up front, so a 4 GiB budget took ~10 s before the first token. Its pages now
// come from the kernel as they are first written; the check is on memory actually touched
// (resident set), not on time.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "core/config.h"
#include "core/engine.h"
#include "core/error.h"
#include "support/test_data.h"

namespace drift {
namespace {

// This process's resident set in KiB (VmRSS in /proc/self/status).
int64_t resident_kib() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6));
  return -1;
}

TEST(EngineStartup, LargeKvBudgetIsNotTouchedUntilUsed) {
  EngineConfig config;
  config.model.path = test::test_data_path("models/stories260K");
  config.kv_cache.memory_mb = 4096;
  const int64_t before = resident_kib();
  ASSERT_GT(before, 0);
  auto engine = Engine::from_config(config);
  const int64_t after_start = resident_kib();
  EXPECT_LT(after_start - before, 256 * 1024) << "starting with a 4 GiB KV budget touched "
                                              << (after_start - before) / 1024 << " MiB";
  // And the lazily mapped cache computes exactly what a small, ordinary one does.
  auto greedy = [](Engine& e) {
    SamplingParams params;
    params.max_new_tokens = 32;
    const int64_t id = e.add_request({1, 403, 407}, params);
    while (e.has_unfinished()) e.step();
    e.kv().check_integrity();
    return e.request(id).output;
  };
  config.kv_cache.memory_mb = 1;
  auto small = Engine::from_config(config);
  const std::vector<int32_t> expected = greedy(*small);
  EXPECT_EQ(expected.size(), 32u);
  EXPECT_EQ(greedy(*engine), expected);
}

// memory_fraction sizes the pool from free device memory: the CPU backend has none to report, so
// the setting is refused by name rather than silently ignored.
TEST(EngineStartup, MemoryFractionNeedsADeviceBackend) {
  EngineConfig config;
  config.source = "f.toml";
  config.model.path = test::test_data_path("models/stories260K");
  config.kv_cache.memory_fraction = 0.5;
  try {
    Engine::from_config(config);
    FAIL() << "expected an error";
  } catch (const DriftError& e) {
    EXPECT_EQ(std::string(e.what()),
              "f.toml: kv_cache.memory_fraction needs a device backend; backend cpu sizes its KV cache with memory_mb "
              "or num_pages");
  }
}

}  // namespace
}  // namespace drift
