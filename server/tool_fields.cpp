#include "server/tool_fields.h"

#include <set>

#include <fmt/format.h>

#include "core/error.h"
#include "core/json_input.h"

namespace drift::server {
namespace {

using Json = nlohmann::ordered_json;
using tools::ToolChoice;

// OpenAI's rule for function names: letters, digits, '_' and '-', at most 64.
bool valid_function_name(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') return false;
  return true;
}

void check_tool(const Json& tool, const std::string& path, std::set<std::string>& names) {
  const FieldReader fields(tool, path);
  const auto type = fields.string("type");
  if (type != "function")
    throw bad_request(fields.name("type"), fmt::format("{} must be \"function\"", fields.name("type")));
  const Json* function = fields.find("function");
  if (!function) throw bad_request(fields.name("function"), fields.name("function") + " is required");
  const FieldReader f(*function, fields.name("function"));
  const auto name = f.string("name");
  if (!name) throw bad_request(f.name("name"), f.name("name") + " is required");
  if (!valid_function_name(*name))
    throw bad_request(f.name("name"),
                      fmt::format("{} = \"{}\": use letters, digits, '_' and '-', at most 64", f.name("name"), *name));
  if (!names.insert(*name).second)
    throw bad_request(f.name("name"), fmt::format("{} = \"{}\": another tool has that name", f.name("name"), *name));
  f.string("description");  // read for their types: a wrong one is a 400 naming it
  f.boolean("strict");
  if (const Json* parameters = f.find("parameters"); parameters && !parameters->is_object())
    throw bad_request(f.name("parameters"), fmt::format("{} must be a JSON schema (an object), got {}",
                                                        f.name("parameters"), describe_value(*parameters)));
}

ToolChoice read_choice(const FieldReader& body, const std::set<std::string>& names) {
  ToolChoice choice;
  choice.mode = names.empty() ? ToolChoice::Mode::None : ToolChoice::Mode::Auto;
  choice.parallel = body.boolean("parallel_tool_calls").value_or(true);
  const Json* value = body.find("tool_choice");
  if (!value) return choice;
  if (value->is_string()) {
    const std::string mode = value->get<std::string>();
    if (mode == "none")
      choice.mode = ToolChoice::Mode::None;
    else if (mode == "auto")
      choice.mode = names.empty() ? ToolChoice::Mode::None : ToolChoice::Mode::Auto;
    else if (mode == "required")
      choice.mode = ToolChoice::Mode::Required;
    else
      throw bad_request("tool_choice", fmt::format("tool_choice = \"{}\": must be \"none\", \"auto\", \"required\" or "
                                                   "{{\"type\": \"function\", \"function\": {{\"name\": ...}}}}",
                                                   mode));
  } else {
    const FieldReader object(*value, "tool_choice");
    if (object.string("type") != "function")
      throw bad_request("tool_choice.type", "tool_choice.type must be \"function\"");
    const Json* function = object.find("function");
    if (!function) throw bad_request("tool_choice.function", "tool_choice.function is required");
    const auto name = FieldReader(*function, "tool_choice.function").string("name");
    if (!name) throw bad_request("tool_choice.function.name", "tool_choice.function.name is required");
    if (!names.count(*name))
      throw bad_request("tool_choice.function.name",
                        fmt::format("tool_choice.function.name = \"{}\": no tool has that name", *name));
    choice.mode = ToolChoice::Mode::Function;
    choice.function = *name;
  }
  if (choice.mode != ToolChoice::Mode::None && names.empty())
    throw bad_request("tool_choice", "tool_choice asks for a tool call, and the request gives no tools");
  return choice;
}

Json template_tool_call(const Json& call, const std::string& path) {
  const FieldReader fields(call, path);
  const Json* function = fields.find("function");
  if (!function) throw bad_request(fields.name("function"), fields.name("function") + " is required");
  const FieldReader f(*function, fields.name("function"));
  const auto name = f.string("name");
  if (!name) throw bad_request(f.name("name"), f.name("name") + " is required");
  Json arguments = Json::object();
  if (const Json* given = f.find("arguments")) {
    try {  // bounded nesting and no repeated keys, as for every JSON the engine reads
      arguments = given->is_string()
                      ? parse_ordered_json_input(given->get_ref<const std::string&>(), f.name("arguments"))
                      : *given;
    } catch (const DriftError& e) {
      throw bad_request(f.name("arguments"), e.what());
    }
    if (!arguments.is_object())
      throw bad_request(f.name("arguments"), fmt::format("{} must be a JSON object (as text), got {}",
                                                         f.name("arguments"), describe_value(*given)));
  }
  Json out = {{"id", fields.string("id").value_or("")},
              {"type", "function"},
              {"function", {{"name", *name}, {"arguments", arguments}}}};
  return out;
}

}  // namespace

Json template_tool_calls(const Json& tool_calls, const std::string& path) {
  if (!tool_calls.is_array())
    throw bad_request(path, fmt::format("{} must be a list, got {}", path, describe_value(tool_calls)));
  Json out = Json::array();
  for (size_t i = 0; i < tool_calls.size(); ++i)
    out.push_back(template_tool_call(tool_calls[i], fmt::format("{}[{}]", path, i)));
  return out;
}

ToolFields read_tool_fields(const FieldReader& body) {
  ToolFields out;
  std::set<std::string> names;
  const Json* tools = body.find("tools");
  if (tools) {
    if (!tools->is_array())
      throw bad_request("tools", fmt::format("tools must be a list, got {}", describe_value(*tools)));
    for (size_t i = 0; i < tools->size(); ++i) check_tool((*tools)[i], fmt::format("tools[{}]", i), names);
  }
  out.choice = read_choice(body, names);
  if (out.choice.mode != ToolChoice::Mode::None) out.tools = *tools;
  return out;
}

}  // namespace drift::server
