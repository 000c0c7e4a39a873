#pragma once
// Value: the Python object model a chat template computes with. jinja2 runs templates on
// Python objects, so a faithful renderer needs their semantics: None and jinja2's Undefined,
// bool as a kind of int, str (optionally markupsafe's Markup), list and tuple, dict with
// insertion order, namespace() objects (the one mutable kind the sandbox allows), callables
// (builtins, bound methods, macros) and a few runtime objects (loop, cycler, joiner).
// Lists and dicts are shared and immutable, like the sandbox's; copies are cheap.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "core/chat_template/jinja_error.h"

namespace drift::jinja {

class Value;
class Dict;
class Evaluator;
using ValueList = std::vector<Value>;

// A call's arguments: positional, then keyword in call order.
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keywords;
};

using NativeFunction = std::function<Value(Evaluator&, CallArgs&)>;

struct Callable {
  std::string name;
  std::string repr;  // what str() prints, e.g. "<Macro 'name'>"
  NativeFunction function;
};

// Why a value is undefined, and what using it raises (UndefinedError, or SecurityError for an
// attribute the sandbox refuses).
struct UndefinedInfo {
  std::string message;
  ErrorType error = ErrorType::kUndefined;
};

// loop, cycler(), joiner(): objects with attributes of their own.
class Object {
 public:
  virtual ~Object() = default;
  virtual Value attribute(Evaluator& ev, const std::string& name) = 0;  // undefined when absent
  virtual std::string type_repr() const = 0;                            // "jinja2.runtime.LoopContext object"
  virtual std::string type_name() const = 0;                            // "LoopContext"
  virtual std::string repr() const = 0;
};

struct ListData {
  ValueList items;
  bool tuple = false;
  // Non-empty for the lazy iterators jinja2 filters return ("generator" from map / select /
  // unique, "list_reverseiterator" from reverse): iterable, but always true, without len(), not
  // subscriptable and not JSON serializable. Held eagerly; the type name keeps Python's errors.
  std::string iterator;
};

struct NamespaceData;

class Value {
 public:
  enum class Kind { kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kDict, kNamespace, kCallable, kObject };

  Value();  // undefined, no name
  static Value undefined(std::string message, ErrorType error = ErrorType::kUndefined);
  static Value none();
  static Value boolean(bool b);
  static Value integer(int64_t i);
  static Value number(double d);
  static Value string(std::string s, bool markup = false);
  static Value list(ValueList items);
  static Value tuple(ValueList items);
  static Value iterator(ValueList items, std::string type_name = "generator");
  static Value dict(Dict d);
  static Value make_namespace(Dict attrs);
  static Value callable(std::string name, NativeFunction function, std::string repr = "");
  static Value object(std::shared_ptr<Object> object);

  Kind kind() const { return static_cast<Kind>(data_.index()); }
  bool is_undefined() const { return kind() == Kind::kUndefined; }
  bool is_none() const { return kind() == Kind::kNone; }
  bool is_bool() const { return kind() == Kind::kBool; }
  bool is_int() const { return kind() == Kind::kInt; }
  bool is_float() const { return kind() == Kind::kFloat; }
  bool is_string() const { return kind() == Kind::kString; }
  bool is_list() const { return kind() == Kind::kList && list_data().iterator.empty(); }  // list or tuple
  bool is_iterator() const { return kind() == Kind::kList && !list_data().iterator.empty(); }
  const std::string& iterator_type() const { return list_data().iterator; }
  bool is_tuple() const { return is_list() && list_data().tuple; }
  bool is_dict() const { return kind() == Kind::kDict; }
  bool is_namespace() const { return kind() == Kind::kNamespace; }
  bool is_callable() const { return kind() == Kind::kCallable; }
  bool is_object() const { return kind() == Kind::kObject; }
  // Python's numbers.Number: bool, int, float.
  bool is_number() const { return is_bool() || is_int() || is_float(); }
  // int in Python terms: bool included.
  bool is_integral() const { return is_bool() || is_int(); }
  bool is_markup() const { return is_string() && markup_; }

  bool as_bool() const { return std::get<bool>(data_); }
  int64_t as_int() const;   // bool or int
  double as_float() const;  // bool, int or float
  const std::string& as_string() const { return std::get<std::string>(data_); }
  const ValueList& items() const { return list_data().items; }
  const Dict& as_dict() const { return *std::get<std::shared_ptr<const Dict>>(data_); }
  Dict& namespace_attrs() const;
  const Callable& as_callable() const { return *std::get<std::shared_ptr<const Callable>>(data_); }
  Object& as_object() const { return *std::get<std::shared_ptr<Object>>(data_); }
  const UndefinedInfo& undefined_info() const;
  // Identity, for `is sameas` and namespace / callable equality.
  const void* identity() const;

  // Raises the UndefinedError (or SecurityError) this undefined value carries.
  [[noreturn]] void raise_undefined() const;

 private:
  const ListData& list_data() const { return *std::get<std::shared_ptr<const ListData>>(data_); }

  // Alternative order matches Kind.
  std::variant<std::shared_ptr<const UndefinedInfo>, std::monostate, bool, int64_t, double, std::string,
               std::shared_ptr<const ListData>, std::shared_ptr<const Dict>, std::shared_ptr<NamespaceData>,
               std::shared_ptr<const Callable>, std::shared_ptr<Object>>
      data_;
  bool markup_ = false;
};

// A Python dict: insertion-ordered, keys compared with Python equality (1 == 1.0 == True).
class Dict {
 public:
  using Entry = std::pair<Value, Value>;
  const Value* find(const Value& key) const;
  const Value* find(std::string_view key) const;
  Value* find_mutable(std::string_view key);
  void set(Value key, Value value);  // replaces an equal key's value in place, else appends
  const std::vector<Entry>& entries() const { return entries_; }
  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }

 private:
  std::vector<Entry> entries_;
};

struct NamespaceData {
  Dict attrs;
};

}  // namespace drift::jinja
