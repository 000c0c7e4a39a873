#pragma once
// jinja2's built-in filters and tests, as chat templates call them, plus transformers' tojson.
// Each table maps a name to a function taking the evaluator (for filters that call tests or
// other filters), the operand and the call's arguments.
#include <string>
#include <string_view>
#include <unordered_map>

#include "core/chat_template/value.h"

namespace drift::jinja {

using FilterFn = Value (*)(Evaluator&, const Value&, const CallArgs&);
using TestFn = bool (*)(Evaluator&, const Value&, const CallArgs&);
using FilterTable = std::unordered_map<std::string_view, FilterFn>;

// nullptr when jinja2 has no such filter / test (or this renderer does not implement it).
FilterFn find_filter(std::string_view name);
TestFn find_test(std::string_view name);

// The filter tables, by theme (filters_text.cpp, filters_seq.cpp, filters_select.cpp).
void add_text_filters(FilterTable& table);
void add_sequence_filters(FilterTable& table);
void add_select_filters(FilterTable& table);

// jinja2's make_attrgetter: "a.b.0" reads item a, then b, then index 0 (environment.getitem).
Value get_attribute_path(Evaluator& ev, const Value& item, const Value& path);
// Case folding for sort / unique / min / max when case_sensitive is false.
Value ignore_case(const Value& v);

}  // namespace drift::jinja
