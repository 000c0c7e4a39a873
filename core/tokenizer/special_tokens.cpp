// load_special_tokens: the BOS/EOS/PAD policy of a checkpoint directory.
//
// Rules (each file optional; a key that is absent leaves the value from earlier sources):
//  - defaults come from the tokenizer itself (Tokenizer::special_tokens() as its loader set it):
//    a SentencePiece tokenizer.model adds BOS, as HF's LlamaTokenizer does when
//    tokenizer_config.json has no add_bos_token key; a tokenizer.json adds what its
//    TemplateProcessing post-processor adds (nothing without one, as HF's fast tokenizer does).
//    Without a tokenizer object, a directory with tokenizer.model but no tokenizer.json gets the
//    LlamaTokenizer default add_bos=true.
//  - bos / pad: tokenizer_config.json (bos_token, pad_token: what the tokenizer itself adds) wins
//    over generation_config.json (bos_token_id, pad_token_id), which wins over config.json.
//  - eos: the union of all sources, because generation must stop at any of them (Llama-3
//    Instruct lists several in generation_config.json). The tokenizer's own eos_token comes first:
//    it is the one add_eos appends.
//  - add_bos / add_eos: tokenizer_config.json's add_bos_token / add_eos_token when present.
#include <charconv>
#include <climits>
#include <filesystem>
#include <functional>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_input.h"
#include "core/tokenizer/tokenizer.h"

namespace drift {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

std::optional<json> read_json_if_present(const fs::path& path) {
  if (!fs::exists(path)) return std::nullopt;
  return read_json_file(path.string());
}

// An id field: int, list of ints, or null/absent (empty result).
std::vector<int32_t> read_ids(const json& file, const std::string& key, const fs::path& path) {
  if (!file.contains(key) || file[key].is_null()) return {};
  const json& v = file[key];
  auto as_id = [&](const json& x) -> int32_t {
    if (!x.is_number_integer() || x.get<int64_t>() < 0 || x.get<int64_t>() > INT32_MAX)
      fail("{}: field '{}' must be a non-negative integer or a list of them, got {}", path.string(),
           key, v.dump());
    return x.get<int32_t>();
  };
  if (v.is_array()) {
    std::vector<int32_t> ids;
    for (const json& x : v) ids.push_back(as_id(x));
    return ids;
  }
  return {as_id(v)};
}

void append_unique(std::vector<int32_t>& ids, const std::vector<int32_t>& more) {
  for (int32_t id : more)
    if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
}

using Resolver = std::function<std::optional<int32_t>(const std::string&)>;

// Reads a token field of tokenizer_config.json: "<s>", {"content": "<s>", ...} or null.
// Returns nullopt for absent/null, or for an unresolvable string when `strict` is false.
std::optional<int32_t> read_token(const json& cfg, const std::string& key, const fs::path& path,
                                  const Resolver& resolve, bool strict) {
  if (!cfg.contains(key) || cfg[key].is_null()) return std::nullopt;
  const json& v = cfg[key];
  std::string content;
  if (v.is_string()) {
    content = v.get<std::string>();
  } else if (v.is_object() && v.contains("content") && v["content"].is_string()) {
    content = v["content"].get<std::string>();
  } else {
    fail("{}: field '{}' must be a token string or {{\"content\": ...}}, got {}", path.string(), key,
         v.dump());
  }
  auto id = resolve(content);
  if (!id && strict)
    fail("{}: field '{}' names token '{}', which is not in the tokenizer's vocabulary",
         path.string(), key, content);
  return id;
}

std::optional<bool> read_bool(const json& cfg, const std::string& key, const fs::path& path) {
  if (!cfg.contains(key) || cfg[key].is_null()) return std::nullopt;
  if (!cfg[key].is_boolean())
    fail("{}: field '{}' must be true or false, got {}", path.string(), key, cfg[key].dump());
  return cfg[key].get<bool>();
}

// tokenizer_config.json's added_tokens_decoder: {"128000": {"content": "<|begin_of_text|>"}}.
std::optional<int32_t> lookup_added_tokens_decoder(const json& cfg, const std::string& content) {
  if (!cfg.contains("added_tokens_decoder") || !cfg["added_tokens_decoder"].is_object())
    return std::nullopt;
  for (const auto& [key, token] : cfg["added_tokens_decoder"].items()) {
    if (!token.is_object() || !token.contains("content") || token["content"] != content) continue;
    // The key is the id as decimal text; anything else (a sign, a value beyond int32) names no id.
    int32_t id = -1;
    const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), id);
    if (ec == std::errc() && end == key.data() + key.size() && id >= 0) return id;
  }
  return std::nullopt;
}

SpecialTokens merge_files(const std::string& dir, SpecialTokens base, const Resolver& tokenizer_lookup,
                          bool strict) {
  const fs::path root(dir);
  auto config = read_json_if_present(root / "config.json");
  auto generation = read_json_if_present(root / "generation_config.json");
  auto tok_cfg = read_json_if_present(root / "tokenizer_config.json");

  SpecialTokens out = base;
  std::vector<int32_t> eos;  // rebuilt in priority order below
  for (const auto& [file, name] : {std::pair{&config, "config.json"}, {&generation, "generation_config.json"}}) {
    if (!*file) continue;
    const fs::path path = root / name;
    if (auto bos = read_ids(**file, "bos_token_id", path); !bos.empty()) out.bos_id = bos.front();
    if (auto pad = read_ids(**file, "pad_token_id", path); !pad.empty()) out.pad_id = pad.front();
  }
  if (tok_cfg) {
    const fs::path path = root / "tokenizer_config.json";
    const json& cfg = *tok_cfg;
    Resolver resolve = [&](const std::string& content) {
      auto id = tokenizer_lookup ? tokenizer_lookup(content) : std::nullopt;
      return id ? id : lookup_added_tokens_decoder(cfg, content);
    };
    if (auto id = read_token(cfg, "bos_token", path, resolve, strict)) out.bos_id = id;
    if (auto id = read_token(cfg, "pad_token", path, resolve, strict)) out.pad_id = id;
    if (auto id = read_token(cfg, "eos_token", path, resolve, strict)) eos.push_back(*id);
    if (auto add = read_bool(cfg, "add_bos_token", path)) out.add_bos = *add;
    if (auto add = read_bool(cfg, "add_eos_token", path)) out.add_eos = *add;
  }
  append_unique(eos, base.eos_ids);
  if (generation) append_unique(eos, read_ids(*generation, "eos_token_id", root / "generation_config.json"));
  if (config) append_unique(eos, read_ids(*config, "eos_token_id", root / "config.json"));
  out.eos_ids = std::move(eos);
  return out;
}

}  // namespace

SpecialTokens load_special_tokens(const std::string& dir) {
  SpecialTokens defaults;
  const fs::path root(dir);
  defaults.add_bos = fs::exists(root / "tokenizer.model") && !fs::exists(root / "tokenizer.json");
  return merge_files(dir, defaults, nullptr, /*strict=*/false);
}

SpecialTokens load_special_tokens(const std::string& dir, const Tokenizer& tokenizer) {
  Resolver lookup = [&](const std::string& content) { return tokenizer.token_to_id(content); };
  return merge_files(dir, tokenizer.special_tokens(), lookup, /*strict=*/true);
}

}  // namespace drift
