// Errors: the engine throws a DriftError carrying jinja2's exception type and message (as
// transformers raised them, see jinja_test_util.h), the template name and line; unsupported
// constructs and syntax errors are refused at parse time naming the construct and line.
#include "jinja_test_util.h"

namespace drift::test {
namespace {

const SnippetCase kRuntimeErrors[] = {
    {R"J({{ raise_exception('Custom failure: ' ~ 3) }})J", R"J(TemplateError: Custom failure: 3)J"},
    {R"J({{ nothing.attr }})J", R"J(UndefinedError: 'nothing' is undefined)J"},
    {R"J({% set x = [1] %}{{ x.append(2) }})J",
     R"J(SecurityError: access to attribute 'append' of 'list' object is unsafe.)J"},
    {R"J({{ [1,2] | map('string') | tojson }})J", R"J(TypeError: Object of type generator is not JSON serializable)J"},
    {R"J({{ 'a' + 1 }})J", R"J(TypeError: can only concatenate str (not "int") to str)J"},
};

class JinjaRuntimeErrorTest : public testing::TestWithParam<SnippetCase> {};

TEST_P(JinjaRuntimeErrorTest, RaisesLikeJinja2) { expect_error(GetParam()); }

INSTANTIATE_TEST_SUITE_P(Snippets, JinjaRuntimeErrorTest, testing::ValuesIn(kRuntimeErrors), test::snippet_case_name);

TEST(JinjaErrorTest, RaiseExceptionMessageNamesTemplateAndLine) {
  const std::string error = render_error("a\n{% if true %}\n{{ raise_exception('No system role!') }}{% endif %}");
  EXPECT_NE(error.find("snippet"), std::string::npos) << error;
  EXPECT_NE(error.find("line 3"), std::string::npos) << error;
  EXPECT_NE(error.find("TemplateError: No system role!"), std::string::npos) << error;
}

TEST(JinjaErrorTest, UnsupportedConstructNamesConstructAndLine) {
  EXPECT_NE(render_error("a\nb\n{% include 'other.jinja' %}").find("unsupported Jinja construct 'include' at line 3"),
            std::string::npos);
  EXPECT_NE(render_error("{% extends 'base' %}").find("unsupported Jinja construct 'extends' at line 1"),
            std::string::npos);
  EXPECT_NE(render_error("{% for x in y recursive %}{% endfor %}").find("unsupported Jinja construct 'recursive'"),
            std::string::npos);
  // Refused when the template is parsed, before anything renders.
  EXPECT_THROW(ChatTemplate("{% block body %}{% endblock %}", "t"), DriftError);
}

// Lines and messages as jinja2's TemplateSyntaxError reports them.
TEST(JinjaErrorTest, SyntaxErrorsNameTheLine) {
  const SnippetCase cases[] = {
      {"line one\n{% if %}\nx{% endif %}", "line 2: TemplateSyntaxError: Expected an expression"},
      {"a\nb\n{{ 1 + }}", "line 3: TemplateSyntaxError: unexpected 'end of print statement'"},
      {"{% for x in [1] %}\n{{ x }}\n", "line 2: TemplateSyntaxError: Unexpected end of template"},
      {"x\n{{ foo(1, }}", "line 2: TemplateSyntaxError: unexpected '}'"},
      {"{% if true %}\n\n{% endfor %}", "line 3: TemplateSyntaxError: Encountered unknown tag 'endfor'"},
  };
  for (const SnippetCase& c : cases) {
    SCOPED_TRACE(c.source);
    try {
      ChatTemplate(c.source, "snippet");
      ADD_FAILURE() << "parsed";
    } catch (const DriftError& e) {
      EXPECT_NE(std::string(e.what()).find(c.expected), std::string::npos) << e.what();
    }
  }
}

// Printing an undefined value gives "", but reading from one raises UndefinedError.
TEST(JinjaErrorTest, UndefinedBehaviour) {
  EXPECT_EQ(render_snippet("[{{ missing }}]{{ missing | length }}{% for x in missing %}x{% endfor %}"), "[]0");
  EXPECT_NE(render_error("{{ missing.field }}").find("UndefinedError: 'missing' is undefined"), std::string::npos);
  EXPECT_NE(render_error("{{ messages[0].nope.deeper }}").find("'dict object' has no attribute 'nope'"),
            std::string::npos);
}

}  // namespace
}  // namespace drift::test
