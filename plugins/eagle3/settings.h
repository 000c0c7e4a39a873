#pragma once
// The eagle3 plugin's [plugins.<name>] table:
//   checkpoint = "path/to/head"   the EAGLE-3 head's folder (config.json, model.safetensors);
//                                 relative to the config file
//   tree = "chain"                "chain", "static" or "dynamic"
//   depth = 4                     chain: draft tokens; dynamic: tree levels
//   topk = 4                      dynamic: children per expanded node, nodes expanded per level
//   num_nodes = 0                 dynamic: nodes verified (0: the engine's max_draft_tokens)
//   choices = [[0], [1], [0, 0]]  static: the tree as paths of child ranks (EAGLE's format)
//   extension_rows = 2048         most rows one head forward extends the draft KV by: a long
//                                 prefill runs in windows, so the head's workspace stays bounded
//                                 (~200 KB a row at the Llama-3-8B shape)
//   keep_logits = false           keep the last draft logits for inspection (tests)
// A wrong type, an out-of-range value or an unknown key is an error naming the key.
#include <string>

#include "host.h"
#include "tree_search.h"

namespace eagle3 {

struct Settings {
  std::string checkpoint;
  TreeShape shape;
  int64_t extension_rows = 2048;
  bool keep_logits = false;
};

Settings read_settings(const Host& host, const std::string& settings_toml);

}  // namespace eagle3
