// The Jinja engine: trim_blocks, lstrip_blocks, '-' / '+' markers, comments, raw and generation blocks. Each snippet
// must render exactly as jinja2 3.1.6 in transformers' environment rendered it (see jinja_test_util.h).
#include "jinja_test_util.h"

namespace drift::test {
namespace {

const SnippetCase kCases[] = {
    {R"J({% if true %}
  x
{% endif %}
  y)J",
     R"J(  x
  y)J"},
    {R"J(a  {%- if true -%}  b  {%- endif -%}  c)J", R"J(abc)J"},
    {R"J({% for i in [1,2] %}
  {{ i }}
{% endfor %})J",
     R"J(  1
  2
)J"},
    {R"J(  {{- 'v' }}  
{# c #}
z)J",
     R"J(v  
z)J"},
    {R"J({%+ if true %}k{% endif %})J", R"J(k)J"},
    {R"J({% raw %}{{ x }}{% endraw %})J", R"J({{ x }})J"},
    {R"J({% generation %}gen {{ 1 }}{% endgeneration %})J", R"J(gen 1)J"},
};

class JinjaWhitespaceTest : public testing::TestWithParam<SnippetCase> {};

TEST_P(JinjaWhitespaceTest, RendersLikeJinja2) { expect_renders(GetParam()); }

INSTANTIATE_TEST_SUITE_P(Snippets, JinjaWhitespaceTest, testing::ValuesIn(kCases), test::snippet_case_name);

}  // namespace
}  // namespace drift::test
