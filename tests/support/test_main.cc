// main() of the suites that link drift_test_support. The engine finds plugins named in a config
// beside the running executable (core/plugin/plugin_search.h): for build/apps/drift and the
// suites directly in build/tests that is build/plugins, but the suites in build/tests/<area>/
// would look in build/tests/plugins. So the build's plugin folder is appended to
// DRIFT_PLUGIN_PATH (the caller's entries stay first) before GoogleTest runs; child `drift`
// processes inherit it, which changes nothing for them (they find build/plugins themselves).
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "support/test_data.h"

int main(int argc, char** argv) {
  const char* given = std::getenv("DRIFT_PLUGIN_PATH");
  std::string path = given && *given ? std::string(given) + ":" : std::string();
  setenv("DRIFT_PLUGIN_PATH", (path + drift::test::plugin_build_dir()).c_str(), 1);
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
