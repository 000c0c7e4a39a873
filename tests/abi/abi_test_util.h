#pragma once
// Helpers shared by the ABI suite's tests: capturing spdlog lines, a small model description,
// config entries for the test plugins, and reading a test plugin's call counter / recording.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include "core/plugin/plugin_host.h"
#include "plugins/test_plugin.h"

namespace drift::test {

// Routes the default logger into a buffer for the lifetime of the object.
class LogCapture {
 public:
  LogCapture()
      : sink_(std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(1024)), previous_(spdlog::default_logger()) {
    sink_->set_pattern("%v");
    auto logger = std::make_shared<spdlog::logger>("capture", sink_);
    logger->set_level(spdlog::level::debug);
    spdlog::set_default_logger(logger);
  }
  ~LogCapture() { spdlog::set_default_logger(previous_); }

  std::vector<std::string> lines() const {
    std::vector<std::string> out = sink_->last_formatted();
    for (std::string& line : out)
      if (!line.empty() && line.back() == '\n') line.pop_back();
    return out;
  }
  // Lines containing `needle`.
  std::vector<std::string> matching(const std::string& needle) const {
    std::vector<std::string> out;
    for (const std::string& line : lines())
      if (line.find(needle) != std::string::npos) out.push_back(line);
    return out;
  }
  std::vector<std::string> fallbacks() const {
    std::vector<std::string> out;
    for (const std::string& line : lines())
      if (line.rfind("[fallback]", 0) == 0) out.push_back(line);
    return out;
  }

 private:
  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> sink_;
  std::shared_ptr<spdlog::logger> previous_;
};

// 2 layers, 2 KV heads, vocab 1000, pages of 4 tokens, 64 pages.
inline drift_model_info_t small_model() {
  drift_model_info_t m{};
  m.struct_size = sizeof(m);
  m.vocab_size = 1000;
  m.hidden_size = 8;
  m.num_layers = 2;
  m.num_heads = 2;
  m.num_kv_heads = 2;
  m.head_dim = 4;
  m.block_size = 4;
  m.num_pages = 64;
  m.bos_token_id = -1;
  return m;
}

inline RequestInfo request(drift_seq_id_t seq, std::span<const drift_token_t> tokens = {},
                           int64_t num_prompt_tokens = -1) {
  RequestInfo r;
  r.seq = seq;
  r.tokens = tokens;
  r.num_prompt_tokens = num_prompt_tokens < 0 ? static_cast<int64_t>(tokens.size()) : num_prompt_tokens;
  r.max_new_tokens = 8;
  return r;
}

inline PluginEntry entry(const std::string& name, const std::string& path,
                         const std::string& settings = "") {
  return PluginEntry{name, path, settings, false, ""};
}

// Calls of `hook` for `seq` (-1: any) the test plugin `name` has seen.
inline int64_t calls(const PluginHost& host, const std::string& name, const char* hook,
                     int64_t seq = -1) {
  PluginHost::Extension ext = host.extension(name, DRIFT_TEST_COUNTER_EXT);
  if (!ext.table) {
    ADD_FAILURE() << "plugin '" << name << "' has no counter extension";
    return -1;
  }
  return static_cast<const drift_test_counter_ext_t*>(ext.table)->count(ext.instance, hook, seq);
}

// The recording plugin `name`'s log so far.
inline std::string recording(const PluginHost& host, const std::string& name) {
  PluginHost::Extension ext = host.extension(name, DRIFT_TEST_RECORDING_EXT);
  if (!ext.table) {
    ADD_FAILURE() << "plugin '" << name << "' has no recording extension";
    return "";
  }
  return static_cast<const drift_test_recording_ext_t*>(ext.table)->log(ext.instance);
}

inline const PluginInfo& info(const std::vector<PluginInfo>& plugins, const std::string& name) {
  auto it = std::find_if(plugins.begin(), plugins.end(), [&](const PluginInfo& p) { return p.name == name; });
  if (it == plugins.end()) throw std::runtime_error("no plugin " + name);
  return *it;
}

}  // namespace drift::test
