#pragma once
// Shared by the jinja_*_test.cc unit tests: renders a template snippet with one user message
// (content " Hi "), tools None, bos "<s>" / eos "</s>", as the recorded jinja2 expectations did.
// The expected strings in those tests were produced by transformers' own environment
// (transformers.utils.chat_template_utils._compile_jinja_template(src).render(...)), jinja2 3.1.6.
#include <gtest/gtest.h>

#include <ostream>
#include <string>

#include "core/chat_template/chat_template.h"
#include "core/error.h"

namespace drift::test {

struct SnippetCase {
  const char* source;
  const char* expected;  // the rendered text, or for errors a part of the message
};

// gtest names each case by its index ("Snippets/Suite.Test/case3") and prints the snippet itself
// on one line in failure messages.
inline void PrintTo(const SnippetCase& c, std::ostream* os) {
  for (const char* p = c.source; *p; ++p) *os << (*p == '\n' ? std::string("\\n") : std::string(1, *p));
}
inline std::string snippet_case_name(const testing::TestParamInfo<SnippetCase>& info) {
  return "case" + std::to_string(info.index);
}

inline std::string render_snippet(const std::string& source) {
  ChatTemplateInputs inputs;
  inputs.messages = nlohmann::ordered_json::parse(R"([{"role": "user", "content": " Hi "}])");
  inputs.bos_token = "<s>";
  inputs.eos_token = "</s>";
  return ChatTemplate(source, "snippet").render(inputs);
}

// The DriftError text a snippet raises ("" when it renders).
inline std::string render_error(const std::string& source) {
  try {
    render_snippet(source);
  } catch (const DriftError& e) {
    return e.what();
  }
  return "";
}

inline void expect_renders(const SnippetCase& c) {
  SCOPED_TRACE(c.source);
  try {
    EXPECT_EQ(render_snippet(c.source), c.expected);
  } catch (const DriftError& e) {
    ADD_FAILURE() << "render failed: " << e.what();
  }
}

inline void expect_error(const SnippetCase& c) {
  SCOPED_TRACE(c.source);
  const std::string error = render_error(c.source);
  EXPECT_NE(error.find(c.expected), std::string::npos) << "error: " << error;
}

}  // namespace drift::test
