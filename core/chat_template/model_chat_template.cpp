#include "core/chat_template/model_chat_template.h"

#include <filesystem>

#include "core/error.h"
#include "core/json_input.h"
#include "core/text_file.h"

namespace drift {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// A special token in tokenizer_config.json: a string, or an AddedToken object {"content": ...}.
std::string token_string(const json& config, const std::string& key, const std::string& file) {
  if (!config.contains(key) || config[key].is_null()) return "";
  const json& value = config[key];
  if (value.is_string()) return value.get<std::string>();
  if (value.is_object() && value.contains("content") && value["content"].is_string())
    return value["content"].get<std::string>();
  fail("{}: '{}' must be a string or an object with a string 'content', got {}", file, key, value.dump());
}

// tokenizer_config.json's chat_template: a string, or named templates of which "default" is the
// one apply_chat_template uses without a name.
std::optional<std::string> template_from_value(const json& value, const std::string& where) {
  if (value.is_null()) return std::nullopt;
  if (value.is_string()) return value.get<std::string>();
  if (value.is_array()) {
    for (const json& entry : value) {
      if (!entry.is_object() || !entry.contains("name") || !entry.contains("template") || !entry["name"].is_string() ||
          !entry["template"].is_string())
        fail("{}: each named chat template must be {{\"name\": string, \"template\": string}}", where);
      if (entry["name"] == "default") return entry["template"].get<std::string>();
    }
    fail("{}: the named chat templates have none called 'default'", where);
  }
  fail("{}: chat_template must be a string or a list of named templates, got {}", where, value.type_name());
}

json optional_json_file(const fs::path& path) {
  return fs::exists(path) ? read_json_file(path.string()) : json::object();
}

}  // namespace

std::optional<ModelChatTemplate> load_model_chat_template(const std::string& dir) {
  const fs::path root(dir);
  const fs::path config_path = root / "tokenizer_config.json";
  const json config = optional_json_file(config_path);
  std::optional<std::string> source;
  std::string origin;
  if (const fs::path jinja = root / "chat_template.jinja"; fs::exists(jinja)) {
    source = read_text_file(jinja.string(), "chat template");
    origin = jinja.string();
  } else if (const fs::path file = root / "chat_template.json"; fs::exists(file)) {
    source = template_from_value(read_json_file(file.string()).value("chat_template", json()), file.string());
    origin = file.string();
  } else if (config.contains("chat_template")) {
    source = template_from_value(config["chat_template"], config_path.string());
    origin = config_path.string();
  }
  if (!source) return std::nullopt;
  return ModelChatTemplate{ChatTemplate(*source, origin), token_string(config, "bos_token", config_path.string()),
                           token_string(config, "eos_token", config_path.string())};
}

}  // namespace drift
