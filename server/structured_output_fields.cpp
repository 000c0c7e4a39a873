#include "server/structured_output_fields.h"

#include <fmt/format.h>

#include <optional>

namespace drift::server {
namespace {

using Json = nlohmann::ordered_json;
using grammar::StructuredKind;

// One request's ask: the field that gave it, and what it asks.
struct Ask {
  std::string field;
  StructuredKind kind;
  std::string text;
  std::vector<std::string> choices;
};

std::string schema_text(const Json& value, const std::string& field) {
  if (value.is_string()) return value.get<std::string>();  // vLLM takes the schema as JSON text too
  if (value.is_object() || value.is_boolean()) return value.dump();
  throw bad_request(field, fmt::format("{} must be a JSON schema (an object), got {}", field, describe_value(value)));
}

std::string text_of(const Json& value, const std::string& field, const char* what) {
  if (!value.is_string() || value.get<std::string>().empty())
    throw bad_request(field,
                      fmt::format("{} must be a non-empty string ({}), got {}", field, what, describe_value(value)));
  return value.get<std::string>();
}

std::vector<std::string> choices_of(const Json& value, const std::string& field) {
  if (!value.is_array() || value.empty())
    throw bad_request(field,
                      fmt::format("{} must be a non-empty list of strings, got {}", field, describe_value(value)));
  std::vector<std::string> out;
  for (size_t i = 0; i < value.size(); ++i) {
    if (!value[i].is_string())
      throw bad_request(fmt::format("{}[{}]", field, i),
                        fmt::format("{}[{}] must be a string, got {}", field, i, describe_value(value[i])));
    out.push_back(value[i].get<std::string>());
  }
  return out;
}

std::optional<Ask> from_response_format(const FieldReader& body) {
  const Json* format = body.find("response_format");
  if (!format) return std::nullopt;
  const FieldReader fields(*format, "response_format");
  const std::string type = fields.string("type").value_or("");
  if (type == "text") return std::nullopt;
  if (type == "json_object") return Ask{"response_format", StructuredKind::JsonObject, "", {}};
  if (type == "json_schema") {
    const Json* spec = fields.find("json_schema");
    if (!spec)
      throw bad_request("response_format.json_schema",
                        "response_format.json_schema is required for type \"json_schema\"");
    const FieldReader schema_fields(*spec, "response_format.json_schema");
    const Json* schema = schema_fields.find("schema");
    if (!schema)
      throw bad_request("response_format.json_schema.schema", "response_format.json_schema.schema is required");
    return Ask{"response_format.json_schema.schema",
               StructuredKind::JsonSchema,
               schema_text(*schema, "response_format.json_schema.schema"),
               {}};
  }
  throw bad_request(
      "response_format.type",
      fmt::format("response_format.type = \"{}\": must be \"text\", \"json_object\" or \"json_schema\"", type));
}

void add_vllm_fields(const FieldReader& body, std::vector<Ask>& asks) {
  if (const Json* v = body.find("guided_json"))
    asks.push_back({"guided_json", StructuredKind::JsonSchema, schema_text(*v, "guided_json"), {}});
  if (const Json* v = body.find("guided_regex"))
    asks.push_back({"guided_regex", StructuredKind::Regex, text_of(*v, "guided_regex", "a regex"), {}});
  if (const Json* v = body.find("guided_choice"))
    asks.push_back({"guided_choice", StructuredKind::Choice, "", choices_of(*v, "guided_choice")});
  if (const Json* v = body.find("guided_grammar"))
    asks.push_back({"guided_grammar", StructuredKind::Grammar, text_of(*v, "guided_grammar", "a GBNF grammar"), {}});
  if (const Json* v = body.find("grammar"))
    asks.push_back({"grammar", StructuredKind::Grammar, text_of(*v, "grammar", "a GBNF grammar"), {}});
  if (auto json_object = body.boolean("guided_json_object"); json_object && *json_object)
    asks.push_back({"guided_json_object", StructuredKind::JsonObject, "", {}});
}

void add_structured_outputs(const FieldReader& body, std::vector<Ask>& asks) {
  const Json* object = body.find("structured_outputs");
  if (!object) return;
  const FieldReader so(*object, "structured_outputs");
  if (const Json* v = so.find("json"))
    asks.push_back({so.name("json"), StructuredKind::JsonSchema, schema_text(*v, so.name("json")), {}});
  if (const Json* v = so.find("regex"))
    asks.push_back({so.name("regex"), StructuredKind::Regex, text_of(*v, so.name("regex"), "a regex"), {}});
  if (const Json* v = so.find("choice"))
    asks.push_back({so.name("choice"), StructuredKind::Choice, "", choices_of(*v, so.name("choice"))});
  if (const Json* v = so.find("grammar"))
    asks.push_back(
        {so.name("grammar"), StructuredKind::Grammar, text_of(*v, so.name("grammar"), "a GBNF grammar"), {}});
  if (auto json_object = so.boolean("json_object"); json_object && *json_object)
    asks.push_back({so.name("json_object"), StructuredKind::JsonObject, "", {}});
  for (const auto& [key, _] : object->items())
    if (key != "json" && key != "regex" && key != "choice" && key != "grammar" && key != "json_object" &&
        key != "disable_any_whitespace" && key != "disable_additional_properties" && key != "whitespace_pattern")
      throw bad_request(so.name(key.c_str()),
                        fmt::format("{} is not a structured output this server knows", so.name(key.c_str())));
  for (const char* changes_output : {"whitespace_pattern", "disable_any_whitespace"})
    if (so.find(changes_output))
      throw bad_request(so.name(changes_output), fmt::format("{} is not supported (the whitespace rule is fixed: "
                                                             "docs/structured_output.md)",
                                                             so.name(changes_output)));
}

}  // namespace

std::shared_ptr<const grammar::StructuredOutput> read_structured_output(const FieldReader& body) {
  std::vector<Ask> asks;
  if (auto ask = from_response_format(body)) asks.push_back(std::move(*ask));
  add_vllm_fields(body, asks);
  add_structured_outputs(body, asks);
  if (body.find("guided_whitespace_pattern"))
    throw bad_request(
        "guided_whitespace_pattern",
        "guided_whitespace_pattern is not supported (the whitespace rule is fixed: docs/structured_output.md)");
  if (asks.empty()) return nullptr;
  if (asks.size() > 1)
    throw bad_request(asks[1].field, fmt::format("{} and {} both ask for a structured output; give one", asks[0].field,
                                                 asks[1].field));
  Ask& ask = asks[0];
  try {
    return grammar::make_structured_output(ask.kind, std::move(ask.text), std::move(ask.choices));
  } catch (const grammar::GrammarError& e) {
    throw bad_request(ask.field, fmt::format("{} cannot be compiled: {}", ask.field, e.what()));
  }
}

}  // namespace drift::server
