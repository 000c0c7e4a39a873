// Host services as a plugin sees them: the drift_host_api_t table of one PluginContext.
#include <stdexcept>

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/plugin/host_services.h"

namespace drift {
namespace {

struct Fixture {
  HostState state;
  PluginContext context{"test", "depth = 3\nratio = 0.5\non = true\n[tree]\nname = \"wide\"\n", &state};
  const drift_host_api_t* api = context.api();
};

TEST(HostServices, TableIdentifiesItself) {
  Fixture f;
  EXPECT_EQ(f.api->struct_size, sizeof(drift_host_api_t));
  EXPECT_EQ(f.api->abi_major, static_cast<uint32_t>(DRIFT_ABI_MAJOR));
  EXPECT_EQ(f.api->ctx, &f.context);
}

TEST(HostServices, SettingsByDottedKeyWithTypes) {
  Fixture f;
  int64_t depth = 0;
  double ratio = 0;
  bool on = false;
  char name[3];
  size_t len = 0;
  EXPECT_EQ(f.api->get_setting_int(f.api->ctx, "depth", &depth), DRIFT_OK);
  EXPECT_EQ(depth, 3);
  EXPECT_EQ(f.api->get_setting_double(f.api->ctx, "ratio", &ratio), DRIFT_OK);
  EXPECT_EQ(ratio, 0.5);
  EXPECT_EQ(f.api->get_setting_double(f.api->ctx, "depth", &ratio), DRIFT_OK);  // widens
  EXPECT_EQ(f.api->get_setting_bool(f.api->ctx, "on", &on), DRIFT_OK);
  EXPECT_TRUE(on);
  EXPECT_EQ(f.api->get_setting_string(f.api->ctx, "tree.name", name, sizeof name, &len), DRIFT_OK);
  EXPECT_EQ(len, 4u);
  EXPECT_STREQ(name, "wi");  // truncated to the buffer, full length reported
  EXPECT_EQ(f.api->get_setting_int(f.api->ctx, "missing", &depth), DRIFT_ERROR_NOT_FOUND);
  EXPECT_EQ(f.api->get_setting_int(f.api->ctx, "ratio", &depth), DRIFT_ERROR_INVALID_ARGUMENT);
}

TEST(HostServices, MalformedSettingsNameThePlugin) {
  HostState state;
  try {
    PluginContext context("specpv", "n_sink_blocks = \n", &state);
    FAIL() << "expected DriftError";
  } catch (const DriftError& e) {
    EXPECT_NE(std::string(e.what()).find("settings of plugin 'specpv'"), std::string::npos) << e.what();
  }
}

TEST(HostServices, HostTensorsAllocCopyFree) {
  Fixture f;
  int64_t shape[] = {2, 3};
  drift_tensor_t a{}, b{};
  ASSERT_EQ(f.api->tensor_alloc(f.api->ctx, DRIFT_DTYPE_F32, 2, shape, &a), DRIFT_OK);
  ASSERT_EQ(f.api->tensor_alloc(f.api->ctx, DRIFT_DTYPE_F32, 2, shape, &b), DRIFT_OK);
  EXPECT_EQ(a.device, DRIFT_DEVICE_CPU);
  EXPECT_EQ(a.strides[0], 3);
  EXPECT_EQ(a.strides[1], 1);
  for (int i = 0; i < 6; ++i) static_cast<float*>(a.data)[i] = static_cast<float>(i);
  ASSERT_EQ(f.api->tensor_copy(f.api->ctx, nullptr, &a, &b), DRIFT_OK);
  EXPECT_EQ(static_cast<float*>(b.data)[5], 5.0f);
  drift_tensor_t ints{};
  ASSERT_EQ(f.api->tensor_alloc(f.api->ctx, DRIFT_DTYPE_I32, 2, shape, &ints), DRIFT_OK);
  EXPECT_EQ(f.api->tensor_copy(f.api->ctx, nullptr, &a, &ints), DRIFT_ERROR_INVALID_ARGUMENT);
  f.api->tensor_free(f.api->ctx, &a);
  EXPECT_EQ(a.data, nullptr);
  drift_tensor_t foreign = b;
  float not_ours = 0;
  foreign.data = &not_ours;
  f.api->tensor_free(f.api->ctx, &foreign);  // refused and logged: not the host's memory
  EXPECT_EQ(foreign.data, &not_ours);
  f.api->tensor_free(f.api->ctx, &b);
  // `ints` is leaked on purpose: the context frees it (and says so) when it goes.
}

TEST(HostServices, UnsetCallbacksAreNotSupported) {
  Fixture f;
  drift_tensor_t t{};
  const drift_token_t* tokens = nullptr;
  int64_t n = 0;
  EXPECT_EQ(f.api->hidden_states(f.api->ctx, 1, 0, &t), DRIFT_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(f.api->sequence_tokens(f.api->ctx, 1, &tokens, &n), DRIFT_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(f.api->gemm(f.api->ctx, nullptr, &t, &t, nullptr, &t), DRIFT_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(f.api->load_safetensors(f.api->ctx, "x.safetensors", nullptr, 0, nullptr),
            DRIFT_ERROR_NOT_SUPPORTED);
}

TEST(HostServices, CallbacksAreForwardedAndTheirExceptionsStopAtTheThunk) {
  Fixture f;
  static const drift_token_t seq_tokens[] = {7, 8, 9};
  f.state.callbacks.sequence_tokens = [](drift_seq_id_t seq, const drift_token_t** out, int64_t* n) {
    if (seq != 4) return DRIFT_ERROR_NOT_FOUND;
    *out = seq_tokens;
    *n = 3;
    return DRIFT_OK;
  };
  f.state.callbacks.softmax = [](void*, const drift_tensor_t*, float, drift_tensor_t*) -> drift_status_t {
    throw DriftError("backend exploded");
  };
  const drift_token_t* tokens = nullptr;
  int64_t n = 0;
  EXPECT_EQ(f.api->sequence_tokens(f.api->ctx, 4, &tokens, &n), DRIFT_OK);
  EXPECT_EQ(n, 3);
  EXPECT_EQ(tokens[2], 9);
  EXPECT_EQ(f.api->sequence_tokens(f.api->ctx, 5, &tokens, &n), DRIFT_ERROR_NOT_FOUND);
  drift_tensor_t t{};
  EXPECT_EQ(f.api->softmax(f.api->ctx, nullptr, &t, 1.0f, &t), DRIFT_ERROR);
}

TEST(HostServices, ModelInfoFromConfig) {
  ModelConfig config;
  config.vocab_size = 32000;
  config.num_layers = 4;
  config.num_kv_heads = 2;
  SpecialTokens special;
  special.bos_id = 1;
  special.eos_ids = {2, 3};
  drift_model_info_t info = make_model_info(config, special, 16, 128, DRIFT_DEVICE_CPU, DRIFT_DTYPE_F32);
  EXPECT_EQ(info.struct_size, sizeof(info));
  EXPECT_EQ(info.vocab_size, 32000);
  EXPECT_EQ(info.block_size, 16);
  EXPECT_EQ(info.num_pages, 128);
  EXPECT_EQ(info.bos_token_id, 1);
  ASSERT_EQ(info.num_eos_tokens, 2);
  EXPECT_EQ(info.eos_token_ids[1], 3);
}

}  // namespace
}  // namespace drift
