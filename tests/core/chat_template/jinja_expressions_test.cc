// The Jinja engine: output of Python values, operators, tests, globals, subscripts and slices, template variables. Each
// snippet must render exactly as jinja2 3.1.6 in transformers' environment rendered it (see jinja_test_util.h).
#include "jinja_test_util.h"

namespace drift::test {
namespace {

const SnippetCase kCases[] = {
    {R"J([{{ nothing }}] {{ nothing is defined }} {{ nothing is undefined }})J", R"J([] False True)J"},
    {R"J({{ none }} {{ true }} {{ false }} {{ [1, 'a', none, 2.0] }} {{ {'k': 'v'} }} {{ (1,) }} {{)J"
     R"J( 1/2 }} {{ 7//2 }} {{ 7%3 }} {{ 2**10 }} {{ -7//2 }})J",
     R"J(None True False [1, 'a', None, 2.0] {'k': 'v'} (1,) 0.5 3 1 1024 -4)J"},
    {R"J({{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ 'a' in 'abc' }} {{ 2 not in [1,2] }} {{ not 0 }} {{ 0 o)J"
     R"J(r 'x' }} {{ 1 and 'y' }} {{ 'a' if false else 'b' }})J",
     R"J(True False True False True x y b)J"},
    {R"J({{ 1 is number }} {{ 1 is integer }} {{ true is integer }} {{ 1.0 is float }} {{ 'a' is st)J"
     R"J(ring }} {{ {} is mapping }} {{ [] is sequence }} {{ none is none }} {{ 3 is odd }} {{ 4 is)J"
     R"J( even }} {{ 9 is divisibleby 3 }} {{ 'ab' is lower }} {{ 'AB' is upper }} {{ true is boole)J"
     R"J(an }} {{ 2 is in [1,2] }} {{ 1 is sameas 1 }} {{ range is callable }} {{ 5 is gt 3 }} {{ 5)J"
     R"J( is ne 5 }})J",
     R"J(True True False True True True True True True True True True True True True True True True)J"
     R"J( False)J"},
    {R"J({% for m in messages %}{{ m.role }}:{{ m['content'] | trim }}{% endfor %}{{ bos_token }}{{)J"
     R"J( eos_token }}{{ add_generation_prompt }}{{ tools is none }})J",
     R"J(user:Hi<s></s>FalseTrue)J"},
    {R"J({{ range(3) | list }} {{ range(1, 7, 2) | list }} {{ dict(a=1, b=2) }} {% set c = cycler(')J"
     R"J(x','y') %}{{ c.next() }}{{ c.next() }}{{ c.next() }} {% set j = joiner('-') %}{{ j() }}a{{)J"
     R"J( j() }}b)J",
     R"J([0, 1, 2] [1, 3, 5] {'a': 1, 'b': 2} xyx a-b)J"},
    {R"J({{ [1,2,3][1:] }} {{ 'hello'[::-1] }} {{ [1,2,3][-1] }} {{ 'abc'[0] }} {{ [1,2,3].0 }})J",
     R"J([2, 3] olleh 3 a 1)J"},
    {R"J({{ messages[0] }} {{ messages | selectattr('role', 'equalto', 'user') | list | length }})J",
     R"J({'role': 'user', 'content': ' Hi '} 1)J"},
};

class JinjaExpressionsTest : public testing::TestWithParam<SnippetCase> {};

TEST_P(JinjaExpressionsTest, RendersLikeJinja2) { expect_renders(GetParam()); }

INSTANTIATE_TEST_SUITE_P(Snippets, JinjaExpressionsTest, testing::ValuesIn(kCases), test::snippet_case_name);

}  // namespace
}  // namespace drift::test
