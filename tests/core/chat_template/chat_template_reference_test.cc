// The renderer against transformers: every case tools/chat_templates/record_expected.py recorded
// (55 real templates x conversations x add_generation_prompt) must render to exactly the text
// apply_chat_template produced, or throw a DriftError containing the message it raised.
#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "core/chat_template/chat_template.h"
#include "core/chat_template/model_chat_template.h"
#include "core/error.h"
#include "support/test_data.h"

namespace drift {
namespace {

using json = nlohmann::ordered_json;

const json& expected() {
  static const json document = [] {
    std::ifstream in(test::source_dir() + "/tests/data/chat_templates/expected.json");
    if (!in) throw std::runtime_error("tests/data/chat_templates/expected.json is missing");
    return json::parse(in);
  }();
  return document;
}

std::vector<std::string> template_names() {
  std::vector<std::string> names;
  for (const json& c : expected()["cases"]) {
    const std::string name = c["template"].get<std::string>();
    if (names.empty() || names.back() != name) names.push_back(name);
  }
  return names;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

ChatTemplate load(const std::string& name) {
  if (name == expected()["smollm2_template"].get<std::string>()) {
    auto model = load_model_chat_template(test::smollm2_model_dir());
    if (!model) throw std::runtime_error("SmolLM2 has no chat template");
    return std::move(model->tmpl);
  }
  const std::string path = test::test_data_path("chat_templates/" + name + ".jinja");
  return ChatTemplate(read_file(path), path);
}

// The instant the recording pinned strftime_now to, in the UTC local time both sides use.
std::time_t recorded_now() {
  setenv("TZ", "UTC", 1);
  tzset();
  std::tm tm{};
  tm.tm_year = 2026 - 1900;
  tm.tm_mon = 6;
  tm.tm_mday = 26;
  tm.tm_hour = 12;
  return timegm(&tm);
}

class ChatTemplateReferenceTest : public testing::TestWithParam<std::string> {};

TEST_P(ChatTemplateReferenceTest, RendersLikeTransformers) {
  const ChatTemplate tmpl = load(GetParam());
  const json& doc = expected();
  for (const json& c : doc["cases"]) {
    if (c["template"] != GetParam()) continue;
    const json& conversation = doc["conversations"][c["conversation"].get<std::string>()];
    ChatTemplateInputs inputs;
    inputs.messages = conversation["messages"];
    if (conversation.contains("tools")) inputs.tools = conversation["tools"];
    inputs.add_generation_prompt = c["add_generation_prompt"].get<bool>();
    inputs.bos_token = doc["bos_token"].get<std::string>();
    inputs.eos_token = doc["eos_token"].get<std::string>();
    inputs.now = recorded_now();
    SCOPED_TRACE(c["conversation"].get<std::string>() +
                 (inputs.add_generation_prompt ? ", add_generation_prompt" : ", no generation prompt"));
    if (c.contains("error")) {
      try {
        const std::string text = tmpl.render(inputs);
        ADD_FAILURE() << "expected an error containing: " << c["error"].get<std::string>() << "\ngot text:\n" << text;
      } catch (const DriftError& e) {
        EXPECT_NE(std::string(e.what()).find(c["error"].get<std::string>()), std::string::npos) << e.what();
      }
      continue;
    }
    try {
      EXPECT_EQ(tmpl.render(inputs), c["expected"].get<std::string>());
    } catch (const DriftError& e) {
      ADD_FAILURE() << "render failed: " << e.what();
    }
  }
}

std::string test_name(const testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  for (char& ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return name;
}

INSTANTIATE_TEST_SUITE_P(RealTemplates, ChatTemplateReferenceTest, testing::ValuesIn(template_names()), test_name);

}  // namespace
}  // namespace drift
