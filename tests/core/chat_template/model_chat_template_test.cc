// Finding a checkpoint's chat template: the files transformers reads, in its order of precedence,
// with bos/eos token strings in either of tokenizer_config.json's shapes.
#include <gtest/gtest.h>

#include <fstream>

#include "core/chat_template/model_chat_template.h"
#include "core/error.h"
#include "support/test_data.h"

namespace drift {
namespace {

std::string write(const std::string& dir, const std::string& name, const std::string& text) {
  std::ofstream(dir + "/" + name) << text;
  return dir + "/" + name;
}

std::string render(const ModelChatTemplate& t) {
  ChatTemplateInputs inputs;
  inputs.messages = nlohmann::ordered_json::array({{{"role", "user"}, {"content", "hi"}}});
  inputs.bos_token = t.bos_token;
  inputs.eos_token = t.eos_token;
  return t.tmpl.render(inputs);
}

TEST(ModelChatTemplateTest, NoTemplateIsNullopt) {
  const std::string dir = test::make_temp_dir("tmpl-none");
  EXPECT_FALSE(load_model_chat_template(dir).has_value());
  write(dir, "tokenizer_config.json", R"({"bos_token": "<s>"})");
  EXPECT_FALSE(load_model_chat_template(dir).has_value());
}

TEST(ModelChatTemplateTest, TokenizerConfigStringWithAddedTokenObjects) {
  const std::string dir = test::make_temp_dir("tmpl-config");
  write(dir, "tokenizer_config.json",
        R"({"bos_token": {"content": "<s>", "__type": "AddedToken"}, "eos_token": "</s>",
            "chat_template": "{{ bos_token }}{{ messages[0]['content'] }}{{ eos_token }}"})");
  auto t = load_model_chat_template(dir);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->bos_token, "<s>");
  EXPECT_EQ(t->eos_token, "</s>");
  EXPECT_EQ(render(*t), "<s>hi</s>");
}

TEST(ModelChatTemplateTest, NamedTemplatesUseDefault) {
  const std::string dir = test::make_temp_dir("tmpl-named");
  write(
      dir, "tokenizer_config.json",
      R"({"chat_template": [{"name": "tool_use", "template": "T"}, {"name": "default", "template": "D{{ messages|length }}"}]})");
  EXPECT_EQ(render(*load_model_chat_template(dir)), "D1");
  write(dir, "tokenizer_config.json", R"({"chat_template": [{"name": "tool_use", "template": "T"}]})");
  EXPECT_THROW(load_model_chat_template(dir), DriftError);
  write(dir, "tokenizer_config.json", R"({"chat_template": 7})");
  try {
    load_model_chat_template(dir);
    ADD_FAILURE() << "a number as chat_template was accepted";
  } catch (const DriftError& e) {
    EXPECT_NE(std::string(e.what()).find("tokenizer_config.json"), std::string::npos) << e.what();
  }
}

TEST(ModelChatTemplateTest, JinjaFileTakesPrecedence) {
  const std::string dir = test::make_temp_dir("tmpl-jinja");
  write(dir, "tokenizer_config.json", R"({"eos_token": "E", "chat_template": "config"})");
  write(dir, "chat_template.json", R"({"chat_template": "json{{ eos_token }}"})");
  EXPECT_EQ(render(*load_model_chat_template(dir)), "jsonE");
  write(dir, "chat_template.jinja", "jinja{{ eos_token }}");
  EXPECT_EQ(render(*load_model_chat_template(dir)), "jinjaE");
}

TEST(ModelChatTemplateTest, BadTemplateNamesItsFile) {
  const std::string dir = test::make_temp_dir("tmpl-bad");
  const std::string path = write(dir, "chat_template.jinja", "{% if %}");
  try {
    load_model_chat_template(dir);
    ADD_FAILURE() << "a broken template parsed";
  } catch (const DriftError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace drift
