#include "core/chat_template/methods.h"

namespace drift::jinja {

std::optional<Value> find_method(const Value& object, const std::string& name) {
  switch (object.kind()) {
    case Value::Kind::kString:
      return find_str_method(object, name);
    case Value::Kind::kDict:
      return find_dict_method(object, name);
    case Value::Kind::kList:
      if (object.is_iterator()) return std::nullopt;
      return find_list_method(object, name);
    default:
      return std::nullopt;
  }
}

}  // namespace drift::jinja
