// The Jinja engine: built-in filters and transformers' tojson. Each snippet must render exactly as jinja2 3.1.6 in
// transformers' environment rendered it (see jinja_test_util.h).
#include "jinja_test_util.h"

namespace drift::test {
namespace {

const SnippetCase kCases[] = {
    {R"J({{ '  a b  ' | trim }}|{{ 'xxaxx' | trim('x') }})J", R"J(a b|a)J"},
    {R"J({{ {'b': [1, 2.5, none, true], 'a': 'é"'} | tojson }})J", R"J({"b": [1, 2.5, null, true], "a": "é\""})J"},
    {R"J({{ {'b': 1, 'a': [1,2]} | tojson(indent=2, sort_keys=true) }})J",
     R"J({
  "a": [
    1,
    2
  ],
  "b": 1
})J"},
    {R"J({{ [1,2] | tojson(separators=(',', ':')) }})J", R"J([1,2])J"},
    {R"J({{ [1,2,3] | length }}{{ 'héllo' | length }}{{ {'a':1} | count }})J", R"J(351)J"},
    {R"J({{ 'Hello World' | lower }} {{ 'hello world' | upper }} {{ 'hello wORLD-foo(bar' | title })J"
     R"J(} {{ 'hELLO' | capitalize }})J",
     R"J(hello world HELLO WORLD Hello World-Foo(Bar Hello)J"},
    {R"J({{ 'aaa' | replace('a', 'b', 2) }} {{ [1,2,3] | join(', ') }} {{ [1,2,3] | first }} {{ [1,)J"
     R"J(2,3] | last }})J",
     R"J(bba 1, 2, 3 1 3)J"},
    {R"J({{ undefined_var | default('dflt') }} {{ '' | default('empty', true) }} {{ none | d('n') })J"
     R"J(})J",
     R"J(dflt empty None)J"},
    {R"J({{ [3,1,2] | sort }} {{ [3,1,2] | sort(reverse=true) }} {{ ['b','A','c'] | sort }} {{ [{'n)J"
     R"J(':2},{'n':1}] | sort(attribute='n') }})J",
     R"J([1, 2, 3] [3, 2, 1] ['A', 'b', 'c'] [{'n': 1}, {'n': 2}])J"},
    {R"J({{ [1,2,2,3,1] | unique | list }} {{ [1,2,3] | reverse | list }} {{ 'abc' | reverse }})J",
     R"J([1, 2, 3] [3, 2, 1] cba)J"},
    {R"J({{ [{'r':'a','v':1},{'r':'b','v':2}] | selectattr('r', 'equalto', 'a') | list }} {{ [{'r':)J"
     R"J('a'},{'r':'b'}] | rejectattr('r', 'eq', 'a') | map(attribute='r') | list }})J",
     R"J([{'r': 'a', 'v': 1}] ['b'])J"},
    {R"J({{ [1,2,3,4] | select('odd') | list }} {{ [1,2,3,4] | reject('odd') | list }} {{ ['a','b'])J"
     R"J( | map('upper') | join }})J",
     R"J([1, 3] [2, 4] AB)J"},
    {R"J({{ '42' | int }} {{ '4.7' | int }} {{ 'x' | int(7) }} {{ '2.5' | float }} {{ -3 | abs }} {)J"
     R"J({ 2.5 | round }} {{ 3.14159 | round(2) }})J",
     R"J(42 4 7 2.5 3 2.0 3.14)J"},
    {R"J({{ 'a
b

c' | indent(2) }}|{{ 'a
b' | indent(2, true) }})J",
     R"J(a
  b

  c|  a
  b)J"},
    {R"J({{ {'b':1,'a':2} | dictsort }} {{ {'b':1,'a':2} | items | list }} {{ [1,2,3] | sum }} {{ [)J"
     R"J(1,5,3] | max }} {{ [4,2,8] | min }})J",
     R"J([('a', 2), ('b', 1)] [('b', 1), ('a', 2)] 6 5 2)J"},
    {R"J({{ [1,2,3,4,5] | batch(2) | list }} {{ 'one two  three' | wordcount }} {{ 'ab' | center(6))J"
     R"J( }}|)J",
     R"J([[1, 2], [3, 4], [5]] 3   ab  |)J"},
    {R"J({{ '%s-%d' | format('a', 3) }} {{ '%s and %s' % ('x', 'y') }} {{ 'x' ~ 1 ~ none }})J",
     R"J(a-3 x and y x1None)J"},
    {R"J({{ [] | first }}|{{ [3,4] | first }})J", R"J(|3)J"},
    {R"J({{ '%.2f' | format(3.14159) }} {{ '%5s|%-5s|' % ('a','b') }} {{ 1e20 }} {{ 0.1 + 0.2 }} {{)J"
     R"J( 10 / 4 }})J",
     R"J(3.14     a|b    | 1e+20 0.30000000000000004 2.5)J"},
};

class JinjaFiltersTest : public testing::TestWithParam<SnippetCase> {};

TEST_P(JinjaFiltersTest, RendersLikeJinja2) { expect_renders(GetParam()); }

INSTANTIATE_TEST_SUITE_P(Snippets, JinjaFiltersTest, testing::ValuesIn(kCases), test::snippet_case_name);

}  // namespace
}  // namespace drift::test
