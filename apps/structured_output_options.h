#pragma once
// The CLI's structured-output options (generate, chat, bench): --json-schema FILE, --json-object,
// --regex PATTERN, --choice TEXT (repeatable) and --grammar FILE (GBNF) -- at most one kind.
#include <memory>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "core/grammar/structured_output.h"

namespace drift::app {

struct StructuredOutputArgs {
  std::string json_schema_file;
  bool json_object = false;
  std::string regex;
  std::vector<std::string> choices;
  std::string grammar_file;
};

void add_structured_output_options(boost::program_options::options_description& desc, StructuredOutputArgs& args);

// Null when none is given. DriftError naming the option (and the file) when two are given, a
// file cannot be read, or the schema, regex or grammar cannot be compiled.
std::shared_ptr<const grammar::StructuredOutput> structured_output_from_args(const StructuredOutputArgs& args);

}  // namespace drift::app
