#pragma once
// LruMap: a map that keeps its `capacity` most recently used entries (compiled grammars by
// their text, the engine's constraints by format). Not thread-safe: callers lock if they share it.
#include <cstddef>
#include <list>
#include <string>
#include <unordered_map>
#include <utility>

namespace drift::grammar {

template <typename Value>
class LruMap {
 public:
  explicit LruMap(size_t capacity) : capacity_(capacity) {}

  // The value under `key`, now the most recently used, or nullptr.
  Value* find(const std::string& key) {
    auto it = entries_.find(key);
    if (it == entries_.end()) return nullptr;
    order_.splice(order_.begin(), order_, it->second.second);
    return &it->second.first;
  }
  // Adds `value` under `key` (an existing entry stays), dropping the least recently used entry
  // past the capacity.
  void add(const std::string& key, Value value) {
    if (entries_.contains(key)) return;
    order_.push_front(key);
    entries_.emplace(key, std::make_pair(std::move(value), order_.begin()));
    if (entries_.size() > capacity_) {
      entries_.erase(order_.back());
      order_.pop_back();
    }
  }
  // Calls f(value) for every entry, without changing their order.
  template <typename F>
  void for_each(F&& f) {
    for (auto& [key, entry] : entries_) f(entry.first);
  }

 private:
  size_t capacity_;
  std::list<std::string> order_;  // most recently used first
  std::unordered_map<std::string, std::pair<Value, std::list<std::string>::iterator>> entries_;
};

}  // namespace drift::grammar
