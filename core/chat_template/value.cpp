#include "core/chat_template/value.h"

#include "core/chat_template/value_ops.h"

namespace drift::jinja {

Value::Value() : data_(std::make_shared<const UndefinedInfo>()) {}

Value Value::undefined(std::string message, ErrorType error) {
  Value v;
  v.data_ = std::make_shared<const UndefinedInfo>(UndefinedInfo{std::move(message), error});
  return v;
}

Value Value::none() {
  Value v;
  v.data_ = std::monostate{};
  return v;
}

Value Value::boolean(bool b) {
  Value v;
  v.data_ = b;
  return v;
}

Value Value::integer(int64_t i) {
  Value v;
  v.data_ = i;
  return v;
}

Value Value::number(double d) {
  Value v;
  v.data_ = d;
  return v;
}

Value Value::string(std::string s, bool markup) {
  Value v;
  v.data_ = std::move(s);
  v.markup_ = markup;
  return v;
}

Value Value::list(ValueList items) {
  Value v;
  v.data_ = std::make_shared<const ListData>(ListData{std::move(items), false, ""});
  return v;
}

Value Value::tuple(ValueList items) {
  Value v;
  v.data_ = std::make_shared<const ListData>(ListData{std::move(items), true, ""});
  return v;
}

Value Value::iterator(ValueList items, std::string type_name) {
  Value v;
  v.data_ = std::make_shared<const ListData>(ListData{std::move(items), false, std::move(type_name)});
  return v;
}

Value Value::dict(Dict d) {
  Value v;
  v.data_ = std::make_shared<const Dict>(std::move(d));
  return v;
}

Value Value::make_namespace(Dict attrs) {
  Value v;
  v.data_ = std::make_shared<NamespaceData>(NamespaceData{std::move(attrs)});
  return v;
}

Value Value::callable(std::string name, NativeFunction function, std::string repr) {
  if (repr.empty()) repr = "<built-in function " + name + ">";
  Value v;
  v.data_ = std::make_shared<const Callable>(Callable{std::move(name), std::move(repr), std::move(function)});
  return v;
}

Value Value::object(std::shared_ptr<Object> object) {
  Value v;
  v.data_ = std::move(object);
  return v;
}

int64_t Value::as_int() const { return is_bool() ? static_cast<int64_t>(as_bool()) : std::get<int64_t>(data_); }

double Value::as_float() const { return is_float() ? std::get<double>(data_) : static_cast<double>(as_int()); }

Dict& Value::namespace_attrs() const { return std::get<std::shared_ptr<NamespaceData>>(data_)->attrs; }

const UndefinedInfo& Value::undefined_info() const { return *std::get<std::shared_ptr<const UndefinedInfo>>(data_); }

const void* Value::identity() const {
  switch (kind()) {
    case Kind::kList:
      return &list_data();
    case Kind::kDict:
      return &as_dict();
    case Kind::kNamespace:
      return std::get<std::shared_ptr<NamespaceData>>(data_).get();
    case Kind::kCallable:
      return &as_callable();
    case Kind::kObject:
      return &as_object();
    default:
      return nullptr;
  }
}

void Value::raise_undefined() const {
  const UndefinedInfo& info = undefined_info();
  raise(info.error, info.message.empty() ? "'<unknown>' is undefined" : info.message);
}

const Value* Dict::find(const Value& key) const {
  for (const Entry& entry : entries_)
    if (py_equal(entry.first, key)) return &entry.second;
  return nullptr;
}

const Value* Dict::find(std::string_view key) const {
  for (const Entry& entry : entries_)
    if (entry.first.is_string() && entry.first.as_string() == key) return &entry.second;
  return nullptr;
}

Value* Dict::find_mutable(std::string_view key) {
  for (Entry& entry : entries_)
    if (entry.first.is_string() && entry.first.as_string() == key) return &entry.second;
  return nullptr;
}

void Dict::set(Value key, Value value) {
  for (Entry& entry : entries_) {
    if (py_equal(entry.first, key)) {
      entry.second = std::move(value);
      return;
    }
  }
  entries_.emplace_back(std::move(key), std::move(value));
}

}  // namespace drift::jinja
