// The public C++ helper (include/drift/plugin_helpers.hpp) on its own, as a plugin author uses
// it: no engine library, a fake host table with a log and tensor services that count.
#include "drift/plugin_helpers.hpp"

#include <new>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace {

using drift::plugin::Error;
using drift::plugin::guard;
using drift::plugin::Settings;
using ::testing::HasSubstr;

struct FakeHost {
  drift_host_api_t api{};
  std::vector<std::string> lines;
  int allocs = 0, frees = 0;
  std::vector<float> storage = std::vector<float>(64);

  FakeHost() {
    api.struct_size = sizeof api;
    api.ctx = this;
    api.log = [](void* ctx, int32_t level, const char* message) {
      static_cast<FakeHost*>(ctx)->lines.push_back(std::to_string(level) + " " + message);
    };
    api.tensor_alloc = [](void* ctx, int32_t dtype, int32_t ndim, const int64_t* shape, drift_tensor_t* out) {
      auto& self = *static_cast<FakeHost*>(ctx);
      if (ndim < 1 || shape[0] > 64) return static_cast<drift_status_t>(DRIFT_ERROR_OUT_OF_MEMORY);
      self.allocs++;
      *out = {};
      out->data = self.storage.data();
      out->dtype = dtype;
      out->ndim = ndim;
      for (int32_t d = 0; d < ndim; ++d) out->shape[d] = shape[d];
      return static_cast<drift_status_t>(DRIFT_OK);
    };
    api.tensor_free = [](void* ctx, drift_tensor_t*) { static_cast<FakeHost*>(ctx)->frees++; };
  }
};

std::string error_of(const std::string& toml, void (*read)(Settings&)) {
  try {
    Settings s(toml);
    read(s);
    s.finish();
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), DRIFT_ERROR_INVALID_ARGUMENT) << e.what();
    return e.what();
  }
  return "(no error)";
}

TEST(PluginHelpersTest, GuardTurnsExceptionsIntoStatusesAndOneLogLine) {
  FakeHost host;
  EXPECT_EQ(guard(&host.api, "mine", "on_propose", [] {}), DRIFT_OK);
  EXPECT_EQ(guard(&host.api, "mine", "on_propose", [] { return DRIFT_ERROR_NOT_FOUND; }), DRIFT_ERROR_NOT_FOUND);
  EXPECT_TRUE(host.lines.empty());
  EXPECT_EQ(guard(&host.api, "mine", "create", [] { drift::plugin::fail("bad depth", DRIFT_ERROR_INVALID_ARGUMENT); }),
            DRIFT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(guard(&host.api, "mine", "on_accept", [] { throw std::bad_alloc(); }), DRIFT_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(guard(&host.api, "mine", "on_rewind", [] { throw std::runtime_error("lost"); }), DRIFT_ERROR);
  EXPECT_EQ(guard(&host.api, "mine", "destroy", [] { throw 7; }), DRIFT_ERROR);
  ASSERT_EQ(host.lines.size(), 4u);
  const std::string error = std::to_string(DRIFT_LOG_ERROR) + " ";
  EXPECT_EQ(host.lines[0], error + "mine: create: bad depth");
  EXPECT_EQ(host.lines[1], error + "mine: out of memory in on_accept");
  EXPECT_EQ(host.lines[2], error + "mine: on_rewind: lost");
  EXPECT_EQ(host.lines[3], error + "mine: destroy failed with an unknown exception");
}

TEST(PluginHelpersTest, GuardWithoutALogStillReturnsTheStatus) {
  drift_host_api_t no_log{};
  no_log.struct_size = sizeof no_log;
  EXPECT_EQ(guard(&no_log, "mine", "create", [] { throw std::runtime_error("x"); }), DRIFT_ERROR);
  EXPECT_EQ(guard(nullptr, "mine", "create", [] { throw std::runtime_error("x"); }), DRIFT_ERROR);
}

TEST(PluginHelpersTest, CheckNamesTheServiceAndKeepsItsStatus) {
  EXPECT_NO_THROW(drift::plugin::check(DRIFT_OK, "gemm"));
  try {
    drift::plugin::check(DRIFT_ERROR_NOT_SUPPORTED, "gemm");
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), DRIFT_ERROR_NOT_SUPPORTED);
    EXPECT_THAT(e.what(), HasSubstr("host service gemm returned status"));
  }
}

TEST(PluginHelpersTest, SettingsReadTypedValuesAndDefaults) {
  Settings s(
      "# a comment\n"
      "depth = 4\n"
      "alpha = 0.5  # trailing comment\n"
      "beta = -1_000\n"
      "keep = true\n"
      "name = \"a \\\"quoted\\\" name\"\n"
      "literal = 'C:\\path'\n"
      "tree = \"static\"\n"
      "choices = [\n  [0],\n  [1, 2], # second\n  [0, 0],\n]\n");
  EXPECT_EQ(s.integer("depth", 1, 1, 10), 4);
  EXPECT_EQ(s.integer("absent", 9, 1, 10), 9);
  EXPECT_DOUBLE_EQ(s.number("alpha", 1.0, 0.0, 1.0), 0.5);
  EXPECT_DOUBLE_EQ(s.number("beta", 0.0, -1e6, 1e6), -1000.0);  // integers widen
  EXPECT_TRUE(s.boolean("keep", false));
  EXPECT_EQ(s.string("name", ""), "a \"quoted\" name");
  EXPECT_EQ(s.string("literal", ""), "C:\\path");
  EXPECT_EQ(s.choice("tree", "chain", {"chain", "static", "dynamic"}), "static");
  EXPECT_EQ(s.integer_lists("choices", 0, 8), (std::vector<std::vector<int64_t>>{{0}, {1, 2}, {0, 0}}));
  EXPECT_NO_THROW(s.finish());
}

TEST(PluginHelpersTest, SettingsErrorsNameTheKeyAndTheValue) {
  EXPECT_EQ(error_of("depth = 0", [](Settings& s) { s.integer("depth", 4, 1, 4096); }),
            "setting 'depth' = 0 must be an integer in 1..4096");
  EXPECT_EQ(error_of("depth = 2.5", [](Settings& s) { s.integer("depth", 4, 1, 4096); }),
            "setting 'depth' = 2.5 must be an integer in 1..4096");
  EXPECT_EQ(error_of("topk = \"3\"", [](Settings& s) { s.integer("topk", 4, 1, 4096); }),
            "setting 'topk' = '3' must be an integer in 1..4096");
  EXPECT_EQ(error_of("p = 2", [](Settings& s) { s.number("p", 0.1, 0.0, 1.0); }),
            "setting 'p' = 2 must be a number in [0, 1]");
  EXPECT_EQ(error_of("keep = 1", [](Settings& s) { s.boolean("keep", false); }),
            "setting 'keep' = 1 must be true or false");
  EXPECT_EQ(error_of("draft = \"bush\"",
                     [](Settings& s) {
                       s.choice("draft", "tree", {"tree", "chain"});
                     }),
            "setting 'draft' = 'bush' must be \"tree\" or \"chain\"");
  EXPECT_EQ(error_of("tree = 'x'",
                     [](Settings& s) {
                       s.choice("tree", "chain", {"chain", "static", "dynamic"});
                     }),
            "setting 'tree' = 'x' must be \"chain\", \"static\" or \"dynamic\"");
  EXPECT_EQ(error_of("c = [[0], [-1]]", [](Settings& s) { s.integer_lists("c", 0, 9); }),
            "setting 'c' = [[0], [-1]] must be a list of lists of integers in 0..9");
}

TEST(PluginHelpersTest, UnknownKeysAndSubTablesAreRefused) {
  auto read_depth = [](Settings& s) { s.integer("depth", 4, 1, 9); };
  EXPECT_EQ(error_of("dept = 3", read_depth), "setting 'dept' is unknown (known: depth)");
  EXPECT_EQ(error_of("tree.shape = \"wide\"", read_depth), "setting 'tree' is unknown (known: depth)");
  EXPECT_EQ(error_of("depth = 2\n[extra]\nx = 1\n", read_depth), "setting 'extra' is unknown (known: depth)");
  EXPECT_EQ(error_of("depth = 2", [](Settings& s) { s.allow("path"); }), "setting 'depth' is unknown (known: path)");
  EXPECT_EQ(error_of("", read_depth), "(no error)");
}

TEST(PluginHelpersTest, MalformedTablesDoNotParse) {
  for (const char* bad :
       {"depth = ", "depth 3", "depth = 3 4", "name = \"open", "x = [1, 2", "x = 1\nx = 2", "x = 0x1g"}) {
    try {
      Settings s(bad);
      ADD_FAILURE() << "parsed: " << bad;
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), HasSubstr("settings do not parse: line ")) << bad;
      EXPECT_EQ(e.status(), DRIFT_ERROR_INVALID_ARGUMENT);
    }
  }
}

TEST(PluginHelpersTest, TensorsAreFreedThroughTheHostAndViewsStayInside) {
  FakeHost host;
  {
    drift::plugin::Tensor t(&host.api, DRIFT_DTYPE_F32, {4, 8});
    EXPECT_EQ(t.numel(), 32);
    drift::plugin::Tensor moved = std::move(t);
    EXPECT_TRUE(t.empty());
    const drift_tensor_t v = drift::plugin::view(moved.get(), {2, 8}, 16);
    EXPECT_EQ(static_cast<float*>(v.data), host.storage.data() + 16);
    EXPECT_EQ(v.strides[0], 8);
    const drift_tensor_t r = drift::plugin::rows(moved.get(), 1, 2);
    EXPECT_EQ(static_cast<float*>(r.data), host.storage.data() + 8);
    EXPECT_THROW(drift::plugin::view(moved.get(), {4, 8}, 1), Error);
    EXPECT_THROW(drift::plugin::rows(moved.get(), 3, 2), Error);
  }
  EXPECT_EQ(host.allocs, 1);
  EXPECT_EQ(host.frees, 1);
  EXPECT_THROW(drift::plugin::Tensor(&host.api, DRIFT_DTYPE_F32, {100}), Error);
}

}  // namespace
