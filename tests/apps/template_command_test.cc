// `drift template`: the rendered text exactly and nothing else on stdout, from a .jinja file or a
// model's tokenizer_config.json; bad input is an error naming what is wrong, with nothing printed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "support/run_command.h"
#include "support/test_data.h"

namespace drift {
namespace {

using test::run_command;
using test::shell_quote;
using ::testing::HasSubstr;

class TemplateCommandTest : public ::testing::Test {
 protected:
  std::string write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ + "/" + name) << text;
    return shell_quote(dir_ + "/" + name);
  }
  test::CommandResult drift(const std::string& args) {
    return run_command(shell_quote(test::drift_exe()) + " template " + args);
  }
  std::string dir_ = test::make_temp_dir("template-cli");
};

constexpr const char* kChatMl =
    "{%- for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content | trim }}<|im_end|>\n{% endfor -%}\n"
    "{%- if tools %}tools={{ tools | tojson }}\n{% endif -%}\n"
    "{%- if add_generation_prompt %}{{ bos_token }}<|im_start|>assistant\n{% endif %}";

TEST_F(TemplateCommandTest, PrintsExactlyTheRenderedText) {
  const std::string messages =
      write("m.json", R"([{"role": "user", "content": "  hi  "}, {"role": "assistant", "content": "yo"}])");
  const std::string tools = write("t.json", R"([{"type": "function", "function": {"name": "f", "parameters": {}}}])");
  const std::string tmpl = write("c.jinja", kChatMl);
  auto r = drift("--template " + tmpl + " --messages " + messages + " --bos-token '<s>' --add-generation-prompt");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\nyo<|im_end|>\n<s><|im_start|>assistant\n");
  r = drift("--template " + tmpl + " --messages " + messages + " --tools " + tools);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr(R"(tools=[{"type": "function", "function": {"name": "f", "parameters": {}}}])"));
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("assistant\n\n")));
}

TEST_F(TemplateCommandTest, ModelTemplateWithItsSpecialTokens) {
  const std::string model = test::smollm2_model_dir();
  const std::string messages = write("m.json", R"([{"role": "user", "content": "What is the capital of France?"}])");
  auto r = drift("--model " + shell_quote(model) + " --messages " + messages + " --add-generation-prompt");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
            "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n");
}

TEST_F(TemplateCommandTest, BadInputIsAnErrorNamingIt) {
  const std::string messages = write("m.json", R"([{"role": "user", "content": "x"}])");
  const std::string good = write("good.jinja", "{{ messages[0].content }}");
  struct Case {
    std::string args, expected;
  };
  const Case cases[] = {
      {"--messages " + messages, "exactly one of --model DIR and --template FILE"},
      {"--template " + good, "--messages FILE.json is required"},
      {"--template " + good + " --messages " + write("obj.json", R"({"role": "user"})"), "must hold a JSON list"},
      {"--template " + good + " --messages " + write("bad.json", "[{"), "corrupt JSON"},
      {"--template " + good + " --messages " + write("dup.json", R"([{"role": "a", "role": "b"}])"),
       "appears more than once"},
      {"--template " + write("u.jinja", "line one\n{{ messages | frobnicate }}") + " --messages " + messages,
       "frobnicate"},
      {"--template " + write("r.jinja", "{{ raise_exception('no system role here') }}") + " --messages " + messages,
       "no system role here"},
      {"--template " + dir_ + "/absent.jinja --messages " + messages, "absent.jinja"},
      {"--model " + dir_ + " --messages " + messages, "has no chat template"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.args);
    auto r = drift(c.args);
    EXPECT_NE(r.exit_code, 0);
    EXPECT_EQ(r.out, "");
    EXPECT_THAT(r.err, HasSubstr(c.expected));
  }
  // An unsupported construct is named with its line.
  auto r = drift("--template " + write("u2.jinja", "a\nb\n{{ x | frobnicate }}") + " --messages " + messages);
  EXPECT_THAT(r.err, HasSubstr("line 3"));
}

}  // namespace
}  // namespace drift
