// The model runner refuses a KV pool the attention kernels cannot address: they index slots in
// 32 bits (page ids already are), so 2^31 slots or more is a clear error, not a wrapped index.
#include <gtest/gtest.h>

#include <limits>

#include "core/cpu_backend.h"
#include "core/error.h"
#include "core/model/model_config.h"
#include "core/model/model_runner.h"
#include "core/model/model_weights.h"
#include "support/test_data.h"

namespace drift {
namespace {

TEST(KvPoolLimitTest, RefusesMoreSlotsThanThirtyTwoBitsAddress) {
  const std::string dir = test::test_data_path("golden/llama-tiny");
  ASSERT_FALSE(dir.empty());
  const ModelConfig model = load_model_config(dir);
  CpuBackend backend;
  constexpr int64_t kBlock = 16;
  const int64_t too_many = std::numeric_limits<int32_t>::max() / kBlock + 1;  // refused before any allocation
  try {
    ModelRunner runner(model, load_model_weights(dir, model, backend), backend, too_many, kBlock);
    FAIL() << "a pool of " << too_many << " pages was accepted";
  } catch (const DriftError& e) {
    EXPECT_NE(std::string(e.what()).find("2^31 slots"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace drift
