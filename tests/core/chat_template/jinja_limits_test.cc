// What Python's unbounded integers and recursion limit handle, a C++ renderer must bound itself: a
// template (a file from any checkpoint) that recurses, nests or computes without limit gets a
// clear error naming the template, never a crash, undefined behaviour or exhausted memory.
#include <gtest/gtest.h>

#include <string>

#include "jinja_test_util.h"

namespace drift::test {
namespace {

TEST(JinjaLimitsTest, RunawayMacroRecursionIsARecursionError) {
  const std::string error = render_error("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}");
  EXPECT_NE(error.find("RecursionError: maximum recursion depth exceeded"), std::string::npos) << error;
  EXPECT_NE(error.find("chat template snippet"), std::string::npos) << error;
  // Bounded recursion renders (jinja2: "3210").
  EXPECT_EQ(render_snippet("{% macro f(n) %}{{ n }}{% if n > 0 %}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(3) }}"),
            "3210");
}

TEST(JinjaLimitsTest, DeepNestingIsASyntaxErrorNotAStackOverflow) {
  const std::string parens = std::string(5000, '(') + "1" + std::string(5000, ')');
  EXPECT_NE(render_error("{{ " + parens + " }}").find("nested too deeply"), std::string::npos);
  std::string nots;
  for (int i = 0; i < 5000; ++i) nots += "not ";
  EXPECT_NE(render_error("{{ " + nots + "1 }}").find("nested too deeply"), std::string::npos);
  std::string blocks;
  for (int i = 0; i < 5000; ++i) blocks += "{% if true %}";
  EXPECT_NE(render_error(blocks).find("nested too deeply"), std::string::npos);
  EXPECT_EQ(render_snippet("{{ ((((1 + 2)))) * -(-(3)) }}"), "9");
}

TEST(JinjaLimitsTest, IntegerOverflowIsAnErrorNotUndefinedBehaviour) {
  for (const char* expr :
       {"9223372036854775807 + 1", "-9223372036854775807 - 2", "4611686018427387904 * 2", "2 ** 63",
        "(-9223372036854775807 - 1) // -1", "-(-9223372036854775807 - 1)", "(-9223372036854775807 - 1) | abs"}) {
    const std::string error = render_error(std::string("{{ ") + expr + " }}");
    EXPECT_NE(error.find("OverflowError"), std::string::npos) << expr << ": " << error;
  }
  EXPECT_EQ(render_snippet("{{ 2 ** 62 }} {{ (-2) ** 63 }} {{ 1 ** 1000000000000 }} {{ -7 // 2 }} {{ -7 % 3 }}"),
            "4611686018427387904 -9223372036854775808 1 -4 2");
}

TEST(JinjaLimitsTest, RepeatingASequenceBeyondTheLimitIsAnError) {
  EXPECT_NE(render_error("{{ 'ab' * 1000000000000 }}").find("beyond DriftEngine's limit"), std::string::npos);
  EXPECT_NE(render_error("{{ [1, 2] * 1000000000000 }}").find("beyond DriftEngine's limit"), std::string::npos);
  EXPECT_EQ(render_snippet("{{ 'ab' * 3 }}{{ [0] * 2 }}{{ 'x' * -1 }}"), "ababab[0, 0]");
}

}  // namespace
}  // namespace drift::test
