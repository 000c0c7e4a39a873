#include "core/plugin/plugin_settings.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <sstream>

#include <toml++/toml.h>

#include "core/error.h"

namespace drift {

struct PluginSettings::Impl {
  toml::table table;
  std::string base_dir;

  const toml::node* find(const char* key) const {
    if (!key) return nullptr;
    return table.at_path(std::string_view(key)).node();
  }
};

PluginSettings::PluginSettings(const std::string& plugin_name, const std::string& toml_text, std::string base_dir)
    : impl_(std::make_unique<Impl>()) {
  impl_->base_dir = std::move(base_dir);
  try {
    impl_->table = toml::parse(toml_text, "plugins." + plugin_name);
  } catch (const toml::parse_error& e) {
    std::ostringstream where;
    where << e.source().begin;
    fail("settings of plugin '{}': {} at {}", plugin_name, e.description(), where.str());
  }
}

PluginSettings::~PluginSettings() = default;
PluginSettings::PluginSettings(PluginSettings&&) noexcept = default;

drift_status_t PluginSettings::get_int(const char* key, int64_t* out) const {
  const toml::node* node = impl_->find(key);
  if (!node) return DRIFT_ERROR_NOT_FOUND;
  if (!node->is_integer() || !out) return DRIFT_ERROR_INVALID_ARGUMENT;
  *out = node->as_integer()->get();
  return DRIFT_OK;
}

drift_status_t PluginSettings::get_double(const char* key, double* out) const {
  const toml::node* node = impl_->find(key);
  if (!node) return DRIFT_ERROR_NOT_FOUND;
  std::optional<double> value = node->is_number() ? node->value<double>() : std::nullopt;
  if (!value || !out) return DRIFT_ERROR_INVALID_ARGUMENT;
  *out = *value;
  return DRIFT_OK;
}

drift_status_t PluginSettings::get_bool(const char* key, bool* out) const {
  const toml::node* node = impl_->find(key);
  if (!node) return DRIFT_ERROR_NOT_FOUND;
  if (!node->is_boolean() || !out) return DRIFT_ERROR_INVALID_ARGUMENT;
  *out = node->as_boolean()->get();
  return DRIFT_OK;
}

namespace {

drift_status_t copy_out(const std::string& value, char* buf, size_t cap, size_t* len) {
  if (len) *len = value.size();
  if (buf && cap > 0) {
    size_t n = std::min(value.size(), cap - 1);
    std::memcpy(buf, value.data(), n);
    buf[n] = '\0';
  }
  return DRIFT_OK;
}

}  // namespace

drift_status_t PluginSettings::get_string(const char* key, char* buf, size_t cap, size_t* len) const {
  const toml::node* node = impl_->find(key);
  if (!node) return DRIFT_ERROR_NOT_FOUND;
  if (!node->is_string()) return DRIFT_ERROR_INVALID_ARGUMENT;
  return copy_out(node->as_string()->get(), buf, cap, len);
}

drift_status_t PluginSettings::get_path(const char* key, char* buf, size_t cap, size_t* len) const {
  const toml::node* node = impl_->find(key);
  if (!node) return DRIFT_ERROR_NOT_FOUND;
  if (!node->is_string()) return DRIFT_ERROR_INVALID_ARGUMENT;
  const std::string& value = node->as_string()->get();
  const std::filesystem::path path(value);
  if (value.empty() || impl_->base_dir.empty() || path.is_absolute()) return copy_out(value, buf, cap, len);
  return copy_out((std::filesystem::path(impl_->base_dir) / path).lexically_normal().string(), buf, cap, len);
}

}  // namespace drift
