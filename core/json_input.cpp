#include "core/json_input.h"

#include <set>
#include <vector>

#include "core/error.h"
#include "core/text_file.h"

namespace drift {

namespace {

// The first key some object of `text` repeats (already known to exist): the slow path of
// parse_checked, which only counts keys. Keeps the keys of each open object.
template <typename json>
std::string repeated_key(std::string_view text) {
  std::vector<std::set<std::string>> open_objects;
  std::string repeated;
  using Event = typename json::parse_event_t;
  auto check = [&](int, Event event, json& parsed) {
    if (event == Event::object_start) {
      open_objects.emplace_back();
    } else if (event == Event::object_end) {
      open_objects.pop_back();
    } else if (event == Event::key && repeated.empty() &&
               !open_objects.back().insert(parsed.template get<std::string>()).second) {
      repeated = parsed.template get<std::string>();
    }
    return repeated.empty();
  };
  try {
    const json partial = json::parse(text.begin(), text.end(), check);  // stops at the repeat
  } catch (const nlohmann::json::exception&) {
  }
  return repeated;
}

// Both JSON flavours parse the same way: plain json (sorted keys) for files the engine reads,
// ordered_json where key order is content (chat messages and tool schemas a template prints).
template <typename json>
json parse_checked(std::string_view text, const std::string& what) {
  // The callback sees every object open and close and every key. Both flavours keep one value
  // per key, so an object that read more keys than it holds repeated one; which one is looked up
  // only then (keeping every object's keys in a set cost a fifth of loading a 128K-token
  // tokenizer.json). `depth` counts open containers.
  std::vector<size_t> keys_read;
  bool repeats = false, too_deep = false;
  using Event = typename json::parse_event_t;
  auto check = [&](int depth, Event event, json& parsed) {
    if (depth >= kMaxJsonDepth) too_deep = true;  // depth counts from 0 at the outermost value
    if (event == Event::object_start) {
      keys_read.push_back(0);
    } else if (event == Event::key) {
      ++keys_read.back();
    } else if (event == Event::object_end) {
      if (parsed.size() != keys_read.back()) repeats = true;
      keys_read.pop_back();
    }
    return !too_deep;  // false discards the value: nothing deep is built
  };
  json doc;
  try {
    doc = json::parse(text.begin(), text.end(), check);
  } catch (const nlohmann::json::exception& e) {
    fail("{}: corrupt JSON: {}", what, e.what());
  }
  if (too_deep) fail("{}: JSON nests deeper than {} levels", what, kMaxJsonDepth);
  if (repeats) fail("{}: key '{}' appears more than once", what, repeated_key<json>(text));
  return doc;
}

}  // namespace

nlohmann::json parse_json_input(std::string_view text, const std::string& what) {
  return parse_checked<nlohmann::json>(text, what);
}

nlohmann::ordered_json parse_ordered_json_input(std::string_view text, const std::string& what) {
  return parse_checked<nlohmann::ordered_json>(text, what);
}

nlohmann::json read_json_file(const std::string& path) { return parse_json_input(read_text_file(path, "JSON file"), path); }

}  // namespace drift
