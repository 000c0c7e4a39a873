#pragma once
// DriftError: the one exception type the engine throws for bad input (files, keys, values,
// request fields). Its message always names what is wrong and where, so callers can print it
// as-is. Internal invariant violations use DRIFT_CHECK, which throws the same type.
#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace drift {

class DriftError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

template <typename... Args>
[[noreturn]] inline void fail(fmt::format_string<Args...> format, Args&&... args) {
  throw DriftError(fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace drift

#define DRIFT_CHECK(cond, ...)                                                     \
  do {                                                                             \
    if (!(cond)) ::drift::fail("internal check failed ({}): {}", #cond,            \
                               ::fmt::format(__VA_ARGS__));                        \
  } while (0)
