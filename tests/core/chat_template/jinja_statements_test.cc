// The Jinja engine: loop variables, for else / filter / break / continue, scoping, namespace, set forms, macros, call /
// filter / with blocks. Each snippet must render exactly as jinja2 3.1.6 in transformers' environment rendered it (see
// jinja_test_util.h).
#include "jinja_test_util.h"

namespace drift::test {
namespace {

const SnippetCase kCases[] = {
    {R"J({% for x in 'abc' %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 )J"
     R"J(}}{{ loop.first }}{{ loop.last }}{{ loop.length }}|{% endfor %})J",
     R"J(1032TrueFalse3|2121FalseFalse3|3210FalseTrue3|)J"},
    {R"J({% for x in [1,2,3] %}{{ loop.previtem is defined }}{{ loop.nextitem | default('-') }}{{ l)J"
     R"J(oop.cycle('a','b') }}{{ loop.depth }};{% endfor %})J",
     R"J(False2a1;True3b1;True-a1;)J"},
    {R"J({% for x in [1,2,3,4] if x is even %}{{ x }}{{ loop.length }}{% else %}none{% endfor %})J", R"J(2242)J"},
    {R"J({% for x in [] %}{{ x }}{% else %}empty{% endfor %})J", R"J(empty)J"},
    {R"J({% for x in [1,2,3,4] %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 4 %}{% break %})J"
     R"J({% endif %}{{ x }}{% endfor %})J",
     R"J(13)J"},
    {R"J({% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}={{ v }};{% endfor %})J", R"J(a=1;b=2;)J"},
    {R"J({% set x = 1 %}{% for i in [1] %}{% set x = 2 %}{% endfor %}{{ x }})J", R"J(1)J"},
    {R"J({% set ns = namespace(x=1) %}{% for i in [1,2] %}{% set ns.x = ns.x + i %}{% endfor %}{{ n)J"
     R"J(s.x }})J",
     R"J(4)J"},
    {R"J({% set a, b = 1, 2 %}{{ a }}{{ b }})J", R"J(12)J"},
    {R"J({% set t %}hello {{ 1 + 1 }}{% endset %}[{{ t }}])J", R"J([hello 2])J"},
    {R"J({% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('Bob') }})J"
     R"J( {{ greet('Al', punct='?') }})J",
     R"J(Hi Bob! Hi Al?)J"},
    {R"J({% macro m(a) %}[{{ a }}]{% endmacro %}{{ m() }})J", R"J([])J"},
    {R"J({% macro wrap() %}<{{ caller() }}>{% endmacro %}{% call wrap() %}in{% endcall %})J", R"J(<in>)J"},
    {R"J({% filter upper %}abc{% endfilter %} {% set y | upper %}low{% endset %}{{ y }})J", R"J(ABC LOW)J"},
    {R"J({% with a = 5 %}{{ a }}{% endwith %}{{ a }})J", R"J(5)J"},
};

class JinjaStatementsTest : public testing::TestWithParam<SnippetCase> {};

TEST_P(JinjaStatementsTest, RendersLikeJinja2) { expect_renders(GetParam()); }

INSTANTIATE_TEST_SUITE_P(Snippets, JinjaStatementsTest, testing::ValuesIn(kCases), test::snippet_case_name);

}  // namespace
}  // namespace drift::test
