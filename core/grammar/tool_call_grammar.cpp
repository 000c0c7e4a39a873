#include "core/grammar/tool_call_grammar.h"

#include <fmt/format.h>

#include "core/grammar/json_schema_grammar.h"

namespace drift::grammar {

using Json = nlohmann::ordered_json;

std::string tool_call_shape_json(const ToolCallShape& shape) {
  Json functions = Json::array();
  for (const auto& [name, parameters] : shape.functions)
    functions.push_back({{"name", name}, {"parameters", parameters}});
  const Json j = {{"before", shape.before},           {"call_prefix", shape.call_prefix},
                  {"name_suffix", shape.name_suffix}, {"call_suffix", shape.call_suffix},
                  {"separator", shape.separator},     {"after", shape.after},
                  {"parallel", shape.parallel},       {"functions", functions}};
  return j.dump();
}

ToolCallShape tool_call_shape_from_json(std::string_view text) {
  try {
    const Json j = Json::parse(text);
    ToolCallShape shape;
    shape.before = j.at("before");
    shape.call_prefix = j.at("call_prefix");
    shape.name_suffix = j.at("name_suffix");
    shape.call_suffix = j.at("call_suffix");
    shape.separator = j.at("separator");
    shape.after = j.at("after");
    shape.parallel = j.at("parallel");
    for (const Json& f : j.at("functions")) shape.functions.emplace_back(f.at("name"), f.at("parameters"));
    return shape;
  } catch (const nlohmann::json::exception& e) {
    throw GrammarError(fmt::format("tool calls: malformed call shape: {}", e.what()));
  }
}

Grammar tool_call_grammar(const ToolCallShape& shape) {
  if (shape.functions.empty()) throw GrammarError("tool calls: no function to call");
  GrammarBuilder b;
  std::vector<Sequence> calls;
  for (size_t i = 0; i < shape.functions.size(); ++i) {
    const auto& [name, parameters] = shape.functions[i];
    Grammar arguments;
    try {
      arguments = json_schema_grammar(parameters);
    } catch (const GrammarError& e) {
      throw GrammarError(fmt::format("functions[{}] ({}): parameters: {}", i, name, e.what()));
    }
    Sequence call = b.literal(shape.call_prefix + name + shape.name_suffix);
    call.push_back(GrammarBuilder::ref(b.embed(arguments, name + ".")));
    for (Symbol s : b.literal(shape.call_suffix)) call.push_back(s);
    calls.push_back(std::move(call));
  }
  const Symbol one_call = b.choice(std::move(calls), "call");
  Sequence body = b.literal(shape.before);
  body.push_back(one_call);
  if (shape.parallel) {
    Sequence more = b.literal(shape.separator);
    more.push_back(one_call);
    body.push_back(b.repeat(more, 0, std::nullopt, "more-calls"));
  }
  for (Symbol s : b.literal(shape.after)) body.push_back(s);
  const int32_t root = b.named("root");
  b.define(root, {std::move(body)});
  return std::move(b).build(root);
}

}  // namespace drift::grammar
