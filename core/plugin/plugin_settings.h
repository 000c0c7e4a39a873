#pragma once
// PluginSettings: typed reads of a plugin's own TOML table (the host's get_setting_* services).
// Parsed once when the plugin loads, so a malformed table is a load error naming the plugin.
// toml++ stays inside plugin_settings.cpp (it is slow to compile and must not reach .cu files).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "drift/plugin.h"

namespace drift {

class PluginSettings {
 public:
  // Throws DriftError "settings of plugin '<name>': <parse error>".
  // Relative paths in get_path resolve against base_dir (the config file's folder; "" = as given).
  PluginSettings(const std::string& plugin_name, const std::string& toml_text, std::string base_dir = "");
  ~PluginSettings();
  PluginSettings(PluginSettings&&) noexcept;

  // `key` is dotted. DRIFT_ERROR_NOT_FOUND when absent, DRIFT_ERROR_INVALID_ARGUMENT when the
  // value has another type.
  drift_status_t get_int(const char* key, int64_t* out) const;
  drift_status_t get_double(const char* key, double* out) const;  // integers widen
  drift_status_t get_bool(const char* key, bool* out) const;
  // Copies at most cap-1 bytes plus NUL; *len gets the full length (so callers can retry).
  drift_status_t get_string(const char* key, char* buf, size_t cap, size_t* len) const;
  // A string naming a file or folder, relative ones resolved against base_dir.
  drift_status_t get_path(const char* key, char* buf, size_t cap, size_t* len) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace drift
