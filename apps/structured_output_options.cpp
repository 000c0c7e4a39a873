#include "apps/structured_output_options.h"

#include <fmt/format.h>

#include "core/error.h"
#include "core/text_file.h"

namespace drift::app {
namespace {

using grammar::StructuredKind;

struct Given {
  std::string option;  // as the user wrote it, with its value
  StructuredKind kind;
  std::string text;
  std::vector<std::string> choices;
};

std::vector<Given> given(const StructuredOutputArgs& a) {
  std::vector<Given> out;
  if (!a.json_schema_file.empty())
    out.push_back({"--json-schema " + a.json_schema_file,
                   StructuredKind::JsonSchema,
                   read_text_file(a.json_schema_file, "JSON schema file"),
                   {}});
  if (a.json_object) out.push_back({"--json-object", StructuredKind::JsonObject, "", {}});
  if (!a.regex.empty()) out.push_back({"--regex " + a.regex, StructuredKind::Regex, a.regex, {}});
  if (!a.choices.empty()) out.push_back({"--choice", StructuredKind::Choice, "", a.choices});
  if (!a.grammar_file.empty())
    out.push_back({"--grammar " + a.grammar_file,
                   StructuredKind::Grammar,
                   read_text_file(a.grammar_file, "GBNF grammar file"),
                   {}});
  return out;
}

}  // namespace

void add_structured_output_options(boost::program_options::options_description& desc, StructuredOutputArgs& a) {
  namespace po = boost::program_options;
  desc.add_options()("json-schema", po::value(&a.json_schema_file),
                     "FILE: the output is JSON that the JSON schema in FILE validates (docs/structured_output.md)")(
      "json-object", po::bool_switch(&a.json_object), "the output is one JSON object")(
      "regex", po::value(&a.regex), "the output matches this regular expression in full")(
      "choice", po::value(&a.choices), "TEXT (repeatable): the output is exactly one of these")(
      "grammar", po::value(&a.grammar_file), "FILE: the output follows the GBNF grammar in FILE");
}

std::shared_ptr<const grammar::StructuredOutput> structured_output_from_args(const StructuredOutputArgs& args) {
  std::vector<Given> all = given(args);
  if (all.empty()) return nullptr;
  if (all.size() > 1) fail("{} and {}: give one structured output", all[0].option, all[1].option);
  try {
    return grammar::make_structured_output(all[0].kind, std::move(all[0].text), std::move(all[0].choices));
  } catch (const grammar::GrammarError& e) {
    fail("{}: {}", all[0].option, e.what());
  }
}

}  // namespace drift::app
