// The Jinja engine: Python str and dict methods called from templates. Each snippet must render exactly as jinja2 3.1.6
// in transformers' environment rendered it (see jinja_test_util.h).
#include "jinja_test_util.h"

namespace drift::test {
namespace {

const SnippetCase kCases[] = {
    {R"J({{ '  a b  '.strip() }}|{{ 'a,b,c'.split(',') }}|{{ 'a b'.split() }}|{{ 'abc'.startswith(')J"
     R"J(ab') }}|{{ 'abc'.endswith('bc') }})J",
     R"J(a b|['a', 'b', 'c']|['a', 'b']|True|True)J"},
    {R"J({{ 'Hello'.upper() }} {{ 'Hello'.lower() }} {{ 'hello world'.title() }} {{ 'abcabc'.find(')J"
     R"J(c') }} {{ 'abcabc'.rfind('c') }} {{ 'a-b'.replace('-', '+') }})J",
     R"J(HELLO hello Hello World 2 5 a+b)J"},
    {R"J({{ '{} and {}'.format('x', 'y') }} {{ ', '.join(['a','b']) }} {{ 'l1
l2'.splitlines() }} {)J"
     R"J({ 'aaa'.count('a') }} {{ '123'.isdigit() }} {{ 'xxhixx'.lstrip('x') }} {{ 'xxhixx'.rstrip()J"
     R"J('x') }})J",
     R"J(x and y a, b ['l1', 'l2'] 3 True hixx xxhi)J"},
    {R"J({{ {'a': 1}.get('a') }} {{ {'a': 1}.get('b', 'no') }} {{ {'a': 1}.keys() | list }} {{ {'a')J"
     R"J(: 1}.values() | list }})J",
     R"J(1 no ['a'] [1])J"},
};

class JinjaMethodsTest : public testing::TestWithParam<SnippetCase> {};

TEST_P(JinjaMethodsTest, RendersLikeJinja2) { expect_renders(GetParam()); }

INSTANTIATE_TEST_SUITE_P(Snippets, JinjaMethodsTest, testing::ValuesIn(kCases), test::snippet_case_name);

}  // namespace
}  // namespace drift::test
