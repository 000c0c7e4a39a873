#include "core/grammar/structured_output.h"

#include <fmt/format.h>

#include <chrono>
#include <mutex>

#include "core/grammar/gbnf_grammar.h"
#include "core/grammar/json_schema_grammar.h"
#include "core/grammar/lru_map.h"
#include "core/grammar/regex_grammar.h"
#include "core/grammar/tool_call_grammar.h"

namespace drift::grammar {
namespace {

Grammar choice_grammar(const std::vector<std::string>& choices) {
  if (choices.empty()) throw GrammarError("choice: the list of choices is empty");
  GrammarBuilder b;
  const int32_t root = b.named("root");
  std::vector<Sequence> alternatives;
  for (const std::string& c : choices) alternatives.push_back(b.literal(c));
  b.define(root, std::move(alternatives));
  return std::move(b).build(root);
}

Grammar compile(StructuredKind kind, const std::string& text, const std::vector<std::string>& choices) {
  switch (kind) {
    case StructuredKind::JsonSchema:
      return json_schema_grammar(std::string_view(text));
    case StructuredKind::JsonObject:
      return json_object_grammar();
    case StructuredKind::Regex:
      return regex_grammar(text);
    case StructuredKind::Choice:
      return choice_grammar(choices);
    case StructuredKind::Grammar:
      return gbnf_grammar(text);
    case StructuredKind::ToolCalls:
      return tool_call_grammar(tool_call_shape_from_json(text));
  }
  throw GrammarError("unknown structured output kind");
}

// Compiled grammars by key, least recently used dropped first; shared by the server's threads.
class GrammarCache {
 public:
  std::shared_ptr<const Grammar> find(const std::string& key) {
    std::lock_guard lock(mutex_);
    auto* found = grammars_.find(key);
    return found ? *found : nullptr;
  }
  void add(const std::string& key, std::shared_ptr<const Grammar> grammar) {
    std::lock_guard lock(mutex_);
    grammars_.add(key, std::move(grammar));
  }

 private:
  std::mutex mutex_;
  LruMap<std::shared_ptr<const Grammar>> grammars_{256};
};

GrammarCache& cache() {
  static GrammarCache instance;
  return instance;
}

}  // namespace

const char* structured_kind_name(StructuredKind kind) {
  switch (kind) {
    case StructuredKind::JsonSchema:
      return "json_schema";
    case StructuredKind::JsonObject:
      return "json_object";
    case StructuredKind::Regex:
      return "regex";
    case StructuredKind::Choice:
      return "choice";
    case StructuredKind::Grammar:
      return "grammar";
    case StructuredKind::ToolCalls:
      return "tool_calls";
  }
  return "?";
}

std::shared_ptr<const StructuredOutput> make_structured_output(StructuredKind kind, std::string text,
                                                               std::vector<std::string> choices) {
  auto out = std::make_shared<StructuredOutput>();
  out->kind = kind;
  out->key = structured_kind_name(kind);
  out->key += '\0';
  out->key += text;
  for (const std::string& c : choices) {
    out->key += '\0';
    out->key += c;
  }
  out->text = std::move(text);
  out->choices = std::move(choices);
  out->grammar = cache().find(out->key);
  if (!out->grammar) {
    const auto start = std::chrono::steady_clock::now();
    out->grammar = std::make_shared<const Grammar>(compile(kind, out->text, out->choices));
    out->compile_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    cache().add(out->key, out->grammar);
  }
  return out;
}

}  // namespace drift::grammar
