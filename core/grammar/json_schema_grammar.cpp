#include "core/grammar/json_schema_grammar.h"

#include <fmt/format.h>

#include <functional>
#include <map>
#include <set>

#include "core/grammar/regex_grammar.h"

namespace drift::grammar {
namespace {

using Json = nlohmann::ordered_json;

constexpr int kMaxIndent = 20;
constexpr int64_t kMaxDigits = 16, kMaxExponentDigits = 3;
constexpr int64_t kMaxRepeat = 10000;

// Keywords that only describe (never constrain) a value.
const std::set<std::string, std::less<>> kAnnotations = {
    "$schema",  "$id",        "$comment",         "title",           "description", "default",
    "examples", "deprecated", "readOnly",         "writeOnly",       "$defs",       "definitions",
    "strict",   "name",       "contentMediaType", "contentEncoding", "$anchor"};
const std::map<std::string, std::string, std::less<>> kFormatPatterns = {
    {"date", R"(\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01]))"},
    {"time", R"(([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d{1,9})?(Z|[+-]([01]\d|2[0-3]):[0-5]\d))"},
    {"date-time",
     R"(\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])T([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d{1,9})?(Z|[+-]([01]\d|2[0-3]):[0-5]\d))"},
    {"uuid", R"([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})"},
};

class SchemaCompiler {
 public:
  explicit SchemaCompiler(const Json& root) : root_(root) {}

  Grammar compile() {
    const int32_t root = b_.named("root");
    Sequence body = value(root_, "");
    b_.define(root, {body});
    define_any_value();
    return std::move(b_).build(root);
  }

  Grammar any_object() {
    const int32_t root = b_.named("root");
    b_.define(root, {{any_object_symbol()}});
    define_any_value();
    return std::move(b_).build(root);
  }

 private:
  [[noreturn]] static void fail(const std::string& where, const std::string& what) {
    throw GrammarError(fmt::format("json_schema at '{}': {}", where.empty() ? "/" : where, what));
  }

  Sequence cat(std::initializer_list<Sequence> parts) {
    Sequence out;
    for (const Sequence& p : parts) out.insert(out.end(), p.begin(), p.end());
    return out;
  }
  Sequence lit(std::string_view text) { return b_.literal(text); }

  Symbol rule_once(const char* name, const std::function<std::vector<Sequence>()>& make) {
    const int32_t rule = b_.named(name);
    if (!b_.defined(rule)) b_.define(rule, make());
    return GrammarBuilder::ref(rule);
  }

  Symbol ws() {
    return rule_once("ws", [&] {
      Symbol indent = b_.repeat({b_.characters({{' ', ' '}, {'\t', '\t'}}, false, "indent")}, 0, kMaxIndent, "indent");
      return std::vector<Sequence>{{}, lit(" "), cat({lit("\n"), {indent}})};
    });
  }
  Symbol digits(int64_t min, int64_t max) {
    return b_.repeat({b_.characters({{'0', '9'}}, false, "digit")}, min, max, "digits");
  }
  Symbol integer() {
    return rule_once("integer", [&] {
      Sequence whole = cat({{b_.optional(lit("-"), "sign")}});
      Symbol magnitude =
          b_.choice({lit("0"), {b_.characters({{'1', '9'}}, false, "digit"), digits(0, kMaxDigits - 1)}}, "int");
      whole.push_back(magnitude);
      return std::vector<Sequence>{whole};
    });
  }
  Symbol number() {
    return rule_once("number", [&] {
      Symbol fraction = b_.optional(cat({lit("."), {digits(1, kMaxDigits)}}), "fraction");
      Symbol exponent = b_.optional({b_.characters({{'e', 'e'}, {'E', 'E'}}, false, "e"),
                                     b_.optional({b_.characters({{'+', '+'}, {'-', '-'}}, false, "sign")}, "sign"),
                                     digits(1, kMaxExponentDigits)},
                                    "exponent");
      return std::vector<Sequence>{{integer(), fraction, exponent}};
    });
  }
  Symbol string_char() {
    return rule_once("char", [&] {
      Symbol plain = b_.characters({{'"', '"'}, {'\\', '\\'}, {0, 0x1F}}, true, "plain");
      Symbol escape = b_.characters(
          {{'"', '"'}, {'\\', '\\'}, {'/', '/'}, {'b', 'b'}, {'f', 'f'}, {'n', 'n'}, {'r', 'r'}, {'t', 't'}}, false,
          "escape");
      Symbol hex = b_.characters({{'0', '9'}, {'a', 'f'}, {'A', 'F'}}, false, "hex");
      return std::vector<Sequence>{{plain}, cat({lit("\\"), {escape}}), cat({lit("\\u"), {hex, hex, hex, hex}})};
    });
  }
  Symbol any_string() {
    return rule_once("string", [&] {
      return std::vector<Sequence>{cat({lit("\""), {b_.repeat({string_char()}, 0, std::nullopt, "chars")}, lit("\"")})};
    });
  }
  // Any JSON value: a forward reference, defined once compile() is done (it is recursive).
  Symbol any_value() {
    any_value_used_ = true;
    return GrammarBuilder::ref(b_.named("value"));
  }
  Symbol any_object_symbol() {
    return rule_once("object", [&] {
      Sequence member = cat({{any_string(), ws()}, lit(":"), {ws(), any_value()}});
      member.push_back(b_.repeat(cat({{ws()}, lit(","), {ws(), any_string(), ws()}, lit(":"), {ws(), any_value()}}), 0,
                                 std::nullopt, "members"));
      return std::vector<Sequence>{cat({lit("{"), {ws(), b_.optional(member, "members"), ws()}, lit("}")})};
    });
  }
  Symbol any_array() {
    return rule_once("array", [&] {
      Sequence items{any_value(), b_.repeat(cat({{ws()}, lit(","), {ws(), any_value()}}), 0, std::nullopt, "items")};
      return std::vector<Sequence>{cat({lit("["), {ws(), b_.optional(items, "items"), ws()}, lit("]")})};
    });
  }
  void define_any_value() {
    if (!any_value_used_) return;
    rule_once("value", [&] {
      return std::vector<Sequence>{{any_object_symbol()}, {any_array()}, {any_string()}, {number()},
                                   lit("true"),           lit("false"),  lit("null")};
    });
  }

  Sequence value(const Json& schema, const std::string& where);
  Sequence typed(const Json& schema, const std::string& type, const std::string& where);
  Sequence string_value(const Json& schema, const std::string& where);
  Sequence object_value(const Json& schema, const std::string& where);
  Sequence array_value(const Json& schema, const std::string& where);
  Sequence reference(const std::string& ref, const std::string& where);
  void check_keywords(const Json& schema, const std::string& where);

  const Json& root_;
  GrammarBuilder b_;
  bool any_value_used_ = false;
  std::map<std::string, int32_t> refs_;  // "$ref" target -> its rule
};

// Keywords this compiler enforces; anything else that constrains a value is refused.
const std::set<std::string, std::less<>> kCompiled = {
    "type",    "enum",     "const",      "anyOf",     "oneOf",
    "allOf",   "$ref",     "properties", "required",  "additionalProperties",
    "items",   "minItems", "maxItems",   "minLength", "maxLength",
    "pattern", "format",   "nullable"};

void SchemaCompiler::check_keywords(const Json& schema, const std::string& where) {
  for (const auto& [key, _] : schema.items()) {
    if (kCompiled.contains(key) || kAnnotations.contains(key)) continue;
    fail(where, fmt::format("the keyword '{}' is not supported (structured output would not enforce it)", key));
  }
}

Sequence SchemaCompiler::value(const Json& schema, const std::string& where) {
  if (schema.is_boolean()) {
    if (!schema.get<bool>()) fail(where, "the schema 'false' admits no value");
    return {any_value()};
  }
  if (!schema.is_object()) fail(where, "a schema must be an object or a boolean");
  check_keywords(schema, where);
  Sequence out;
  if (auto it = schema.find("$ref"); it != schema.end()) {
    if (!it->is_string()) fail(where + "/$ref", "must be a string");
    out = reference(it->get<std::string>(), where + "/$ref");
  } else if (auto c = schema.find("const"); c != schema.end()) {
    out = lit(c->dump());
  } else if (auto e = schema.find("enum"); e != schema.end()) {
    if (!e->is_array() || e->empty()) fail(where + "/enum", "must be a non-empty array");
    std::vector<Sequence> alts;
    for (const Json& v : *e) alts.push_back(lit(v.dump()));
    out = {b_.choice(std::move(alts), "enum")};
  } else if (auto any = schema.contains("anyOf") ? schema.find("anyOf") : schema.find("oneOf"); any != schema.end()) {
    const std::string at = where + "/" + any.key();
    if (!any->is_array() || any->empty()) fail(at, "must be a non-empty array");
    std::vector<Sequence> alts;
    for (size_t i = 0; i < any->size(); ++i) alts.push_back(value((*any)[i], fmt::format("{}/{}", at, i)));
    out = {b_.choice(std::move(alts), "any-of")};
  } else if (auto all = schema.find("allOf"); all != schema.end()) {
    if (!all->is_array() || all->size() != 1)
      fail(where + "/allOf", "only an allOf of exactly one schema is supported");
    out = value((*all)[0], where + "/allOf/0");
  } else if (auto type = schema.find("type"); type != schema.end()) {
    if (type->is_string()) {
      out = typed(schema, type->get<std::string>(), where);
    } else if (type->is_array() && !type->empty()) {
      std::vector<Sequence> alts;
      for (const Json& t : *type) {
        if (!t.is_string()) fail(where + "/type", "must hold type names");
        alts.push_back(typed(schema, t.get<std::string>(), where));
      }
      out = {b_.choice(std::move(alts), "types")};
    } else {
      fail(where + "/type", "must be a type name or a non-empty array of them");
    }
  } else if (schema.contains("properties")) {
    out = object_value(schema, where);
  } else if (schema.contains("items")) {
    out = array_value(schema, where);
  } else {
    out = {any_value()};
  }
  if (schema.value("nullable", false)) out = {b_.choice({out, lit("null")}, "nullable")};
  return out;
}

Sequence SchemaCompiler::typed(const Json& schema, const std::string& type, const std::string& where) {
  if (type == "string") return string_value(schema, where);
  if (type == "integer") return {integer()};
  if (type == "number") return {number()};
  if (type == "boolean") return {b_.choice({lit("true"), lit("false")}, "boolean")};
  if (type == "null") return lit("null");
  if (type == "object") return object_value(schema, where);
  if (type == "array") return array_value(schema, where);
  fail(where + "/type", fmt::format("unknown type '{}'", type));
}

int64_t bound(const Json& schema, const char* key, const std::string& where) {
  auto it = schema.find(key);
  if (it == schema.end()) return -1;
  if (!it->is_number_unsigned() || it->get<uint64_t>() > static_cast<uint64_t>(kMaxRepeat))
    throw GrammarError(fmt::format("json_schema at '{}/{}': must be an integer in [0, {}]", where, key, kMaxRepeat));
  return it->get<int64_t>();
}

Sequence SchemaCompiler::string_value(const Json& schema, const std::string& where) {
  std::optional<std::string> pattern;
  if (auto p = schema.find("pattern"); p != schema.end()) {
    if (!p->is_string()) fail(where + "/pattern", "must be a string");
    pattern = p->get<std::string>();
  } else if (auto f = schema.find("format"); f != schema.end() && f->is_string()) {
    if (auto known = kFormatPatterns.find(f->get<std::string>()); known != kFormatPatterns.end())
      pattern = known->second;
  }
  const int64_t min = bound(schema, "minLength", where), max = bound(schema, "maxLength", where);
  if (pattern) {
    if (min >= 0 || max >= 0) fail(where, "minLength / maxLength together with a pattern or format are not supported");
    // The pattern describes the string's characters; those JSON must escape cannot come out raw.
    ByteSet escaped;
    escaped.add_range(0, 0x1F);
    escaped.add('"');
    escaped.add('\\');
    b_.exclude_bytes(escaped);
    Symbol body;
    try {
      body = regex_symbol(b_, *pattern, "pattern");
    } catch (const GrammarError& e) {
      b_.exclude_bytes({});
      fail(where + "/pattern", e.what());
    }
    b_.exclude_bytes({});
    return cat({lit("\""), {body}, lit("\"")});
  }
  if (min < 0 && max < 0) return {any_string()};
  if (max >= 0 && min > max) fail(where, "minLength exceeds maxLength");
  Symbol chars =
      b_.repeat({string_char()}, std::max<int64_t>(min, 0), max >= 0 ? std::optional(max) : std::nullopt, "chars");
  return cat({lit("\""), {chars}, lit("\"")});
}

Sequence SchemaCompiler::object_value(const Json& schema, const std::string& where) {
  const Json* properties = nullptr;
  if (auto p = schema.find("properties"); p != schema.end()) {
    if (!p->is_object()) fail(where + "/properties", "must be an object");
    properties = &*p;
  }
  std::set<std::string> required;
  if (auto r = schema.find("required"); r != schema.end()) {
    if (!r->is_array()) fail(where + "/required", "must be an array of names");
    for (const Json& name : *r) {
      if (!name.is_string()) fail(where + "/required", "must be an array of names");
      required.insert(name.get<std::string>());
    }
  }
  // Extra members: additionalProperties true or a schema; absent means none when properties are
  // listed (strict mode) and any otherwise.
  std::optional<Sequence> extra_value;
  auto additional = schema.find("additionalProperties");
  if (additional == schema.end()) {
    if (!properties && required.empty()) return {any_object_symbol()};
  } else if (additional->is_boolean()) {
    if (additional->get<bool>()) extra_value = Sequence{any_value()};
  } else {
    extra_value = value(*additional, where + "/additionalProperties");
  }
  struct Member {
    Sequence kv;
    bool required;
  };
  std::vector<Member> members;
  auto key_value = [&](const std::string& name, Sequence v) {
    return cat({lit(Json(name).dump()), {ws()}, lit(":"), {ws()}, v});
  };
  std::set<std::string> listed;
  if (properties)
    for (const auto& [name, sub] : properties->items()) {
      listed.insert(name);
      members.push_back({key_value(name, value(sub, where + "/properties/" + name)), required.contains(name)});
    }
  for (const std::string& name : required)  // required but not described: any value
    if (!listed.contains(name)) members.push_back({key_value(name, {any_value()}), true});
  std::optional<Sequence> extra_member;
  if (extra_value) extra_member = cat({{any_string(), ws()}, lit(":"), {ws()}, *extra_value});

  // after[i]: what may follow once a member has been written, from member i on (each needs a
  // comma); first[i]: the same before any member has been written.
  const Sequence comma = cat({{ws()}, lit(","), {ws()}});
  Sequence after_tail, first_tail;
  if (extra_member) {
    Symbol more = b_.repeat(cat({comma, *extra_member}), 0, std::nullopt, "extra");
    after_tail = {more};
    Sequence one = *extra_member;
    one.push_back(more);
    first_tail = {b_.optional(one, "extra")};
  }
  for (size_t i = members.size(); i-- > 0;) {
    const Member& m = members[i];
    Sequence with = cat({comma, m.kv, after_tail});
    Symbol after = m.required ? b_.choice({with}, "after") : b_.choice({with, after_tail}, "after");
    Sequence first_with = cat({m.kv, after_tail});
    Symbol first = m.required ? b_.choice({first_with}, "first") : b_.choice({first_with, first_tail}, "first");
    after_tail = {after};
    first_tail = {first};
  }
  return cat({lit("{"), {ws()}, first_tail, {ws()}, lit("}")});
}

Sequence SchemaCompiler::array_value(const Json& schema, const std::string& where) {
  Sequence item;
  if (auto it = schema.find("items"); it != schema.end())
    item = value(*it, where + "/items");
  else
    item = {any_value()};
  const int64_t min = bound(schema, "minItems", where), max = bound(schema, "maxItems", where);
  if (max >= 0 && min > max) fail(where, "minItems exceeds maxItems");
  const Sequence more = cat({{ws()}, lit(","), {ws()}, item});
  Sequence items;
  if (max == 0) {
    items = {};
  } else {
    Sequence some = item;
    some.push_back(
        b_.repeat(more, std::max<int64_t>(min - 1, 0), max > 0 ? std::optional(max - 1) : std::nullopt, "items"));
    items = min > 0 ? some : Sequence{b_.optional(some, "items")};
  }
  return cat({lit("["), {ws()}, items, {ws()}, lit("]")});
}

Sequence SchemaCompiler::reference(const std::string& ref, const std::string& where) {
  if (auto known = refs_.find(ref); known != refs_.end()) return {GrammarBuilder::ref(known->second)};
  const Json* target = nullptr;
  if (ref == "#") {
    target = &root_;
  } else if (ref.starts_with("#/")) {
    try {
      target = &root_.at(Json::json_pointer(ref.substr(1)));
    } catch (const std::exception&) {
      fail(where, fmt::format("'{}' names nothing in the schema", ref));
    }
  } else {
    fail(where, fmt::format("'{}': only references inside the schema (#/...) are supported", ref));
  }
  // Declared before it is compiled, so a recursive schema refers to the rule being defined.
  const int32_t rule = b_.named("ref:" + ref);
  refs_[ref] = rule;
  b_.define(rule, {value(*target, ref.substr(1))});
  return {GrammarBuilder::ref(rule)};
}

}  // namespace

Grammar json_schema_grammar(const nlohmann::ordered_json& schema) { return SchemaCompiler(schema).compile(); }

Grammar json_schema_grammar(std::string_view schema_text) {
  Json schema;
  try {
    schema = Json::parse(schema_text);
  } catch (const std::exception& e) {
    throw GrammarError(fmt::format("json_schema is not valid JSON: {}", e.what()));
  }
  return json_schema_grammar(schema);
}

Grammar json_object_grammar() {
  static const Json kEmpty = Json::object();
  return SchemaCompiler(kEmpty).any_object();
}

}  // namespace drift::grammar
