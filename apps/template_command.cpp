// drift template: prints a conversation rendered with a chat template — the model's, or a .jinja
// file's — exactly, and nothing else, so templates can be checked against other renderers.
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "apps/command_registry.h"
#include "apps/engine_options.h"
#include "core/chat_template/model_chat_template.h"
#include "core/error.h"
#include "core/json_input.h"
#include "core/text_file.h"

namespace po = boost::program_options;

namespace drift::app {
namespace {

struct TemplateArgs {
  std::string model_dir, template_file, bos_token, eos_token;
  std::string messages_file, tools_file, context_file;
  bool add_generation_prompt = false;
};

nlohmann::ordered_json read_ordered_json(const std::string& path, const std::string& option) {
  return parse_ordered_json_input(read_text_file(path, option + " file"), path);
}

ChatTemplateInputs inputs_from(const TemplateArgs& a) {
  ChatTemplateInputs inputs;
  inputs.messages = read_ordered_json(a.messages_file, "--messages");
  if (!inputs.messages.is_array())
    fail("--messages {}: must hold a JSON list of messages, got {}", a.messages_file, inputs.messages.type_name());
  if (!a.tools_file.empty()) {
    inputs.tools = read_ordered_json(a.tools_file, "--tools");
    if (!inputs.tools.is_array())
      fail("--tools {}: must hold a JSON list of tools, got {}", a.tools_file, inputs.tools.type_name());
  }
  if (!a.context_file.empty()) {
    inputs.extra_context = read_ordered_json(a.context_file, "--context");
    if (!inputs.extra_context.is_object())
      fail("--context {}: must hold a JSON object of template variables", a.context_file);
  }
  inputs.add_generation_prompt = a.add_generation_prompt;
  return inputs;
}

int run_template(const std::vector<std::string>& args) {
  TemplateArgs a;
  po::options_description desc("drift template options");
  desc.add_options()("help,h", "show this help")
      ("model", po::value(&a.model_dir), "checkpoint directory whose chat template (and bos/eos tokens) to use")
      ("template", po::value(&a.template_file), "a .jinja template file instead of a model's")
      ("bos-token", po::value(&a.bos_token), "with --template: the bos_token the template sees")
      ("eos-token", po::value(&a.eos_token), "with --template: the eos_token the template sees")
      ("messages", po::value(&a.messages_file), "JSON file: the list of messages (OpenAI / transformers shape)")
      ("tools", po::value(&a.tools_file), "JSON file: the list of tool definitions")
      ("context", po::value(&a.context_file), "JSON file: an object of further template variables (e.g. enable_thinking)")
      ("add-generation-prompt", po::bool_switch(&a.add_generation_prompt), "end with the assistant turn's opening");
  po::variables_map vm;
  const char* usage = "usage: drift template (--model DIR | --template FILE.jinja [--bos-token S] [--eos-token S]) "
                      "--messages FILE.json [--tools FILE.json] [--add-generation-prompt]";
  if (!parse_command_line(args, desc, vm, usage)) return 0;
  if (a.model_dir.empty() == a.template_file.empty()) fail("give exactly one of --model DIR and --template FILE");
  if (a.messages_file.empty()) fail("--messages FILE.json is required");
  if (!a.model_dir.empty() && (vm.count("bos-token") || vm.count("eos-token")))
    fail("--bos-token / --eos-token go with --template; a model's come from its tokenizer_config.json");

  ChatTemplateInputs inputs = inputs_from(a);
  std::string text;
  if (!a.model_dir.empty()) {
    auto model = load_model_chat_template(a.model_dir);
    if (!model) fail("--model {}: the checkpoint has no chat template", a.model_dir);
    inputs.bos_token = model->bos_token;
    inputs.eos_token = model->eos_token;
    text = model->tmpl.render(inputs);
  } else {
    inputs.bos_token = a.bos_token;
    inputs.eos_token = a.eos_token;
    text = ChatTemplate(read_text_file(a.template_file, "--template file"), a.template_file).render(inputs);
  }
  if (!text.empty() && std::fwrite(text.data(), 1, text.size(), stdout) != text.size())
    fail("writing the rendered template to standard output failed: {}", std::strerror(errno));
  return 0;
}

}  // namespace

DRIFT_REGISTER_COMMAND(template_, "template", "print a conversation rendered with a chat template", run_template);

}  // namespace drift::app
