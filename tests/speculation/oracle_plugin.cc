// The oracle: a TEST-ONLY draft provider that proposes the true continuation of a request, read
// from a reference run (JSON lines with "prompt_ids" and "output_ids", as `drift generate --json`
// prints them), with configurable corruption, branching and depth -- so tests can dial the
// acceptance rate from 100% to 0% and check that the output never changes. It uses only the
// public header, like any third-party plugin.
//
// Settings ([plugins.<name>]): reference (required path), corruption (0..1, default 0),
// branching (>= 1, default 1), depth (>= 1, default 4), seed (default 0).
// Or, instead of a reference, fixed = "a,b|c|d,e": the same tree whatever the context -- level 1
// holds a and b (children of the root), level 2 holds c under a, level 3 d and e under c (each
// level under the first token of the one before; one token per level is a chain) -- so drafts of
// likely tokens exist at every position, for the statistical tests.
// probs = true: reports draft probabilities (0.9 for a level's main candidate, 0.05 for others).
// follow_position = true: once the output parts from the reference, go on drafting the reference's
// tokens at the output's position instead of stopping (rejected drafts, but every step verifies: a
// benchmark of a lossy verification policy's step costs). The reference file is read again when it
// changes (drift bench --write-reference rewrites it after each variant).
// check_hidden_rows = true: declares capture layer 0 and, before each proposal, checks that the
// sequence's hidden-state rows are those of its last computed positions, in position order (with
// the fake executor, whose "hidden state" is the token id); a mismatch fails that sequence.
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "drift/plugin.h"
#include "oracle_tree.h"

namespace {

struct Oracle {
  const drift_host_api_t* host = nullptr;
  drift::oracle::Shape shape;
  std::map<std::vector<int32_t>, std::vector<int32_t>> reference;  // prompt -> output
  std::string reference_path;
  std::filesystem::file_time_type reference_stamp{};
  std::map<drift_seq_id_t, const std::vector<int32_t>*> requests;  // seq -> its reference output
  std::map<drift_seq_id_t, int64_t> prompt_lengths;
  std::vector<std::vector<int32_t>> fixed;  // the fixed tree's tokens per level, or empty
  bool check_hidden_rows = false;
  bool probs = false;            // report draft probabilities: 0.9 for the main candidate, 0.05 for the others
  bool follow_position = false;  // keep drafting the reference at the output's position after it parted
};

void log(const drift_host_api_t* host, int32_t level, const std::string& message) {
  host->log(host->ctx, level, message.c_str());
}

bool read_double(const drift_host_api_t* host, const char* key, double& out) {
  double d = 0;
  int64_t i = 0;
  if (host->get_setting_double(host->ctx, key, &d) == DRIFT_OK) return out = d, true;
  if (host->get_setting_int(host->ctx, key, &i) == DRIFT_OK) return out = static_cast<double>(i), true;
  return false;
}

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out;
  for (size_t begin = 0; begin < text.size();) {
    const size_t end = std::min(text.find(sep, begin), text.size());
    out.push_back(text.substr(begin, end - begin));
    begin = end + 1;
  }
  return out;
}

std::vector<std::vector<int32_t>> parse_levels(const std::string& text) {
  std::vector<std::vector<int32_t>> levels;
  for (const std::string& level : split(text, '|')) {
    levels.emplace_back();
    for (const std::string& token : split(level, ',')) levels.back().push_back(static_cast<int32_t>(std::stol(token)));
  }
  return levels;
}

bool read_settings(const drift_host_api_t* host, Oracle& o, std::string& path) {
  char buf[4096];
  size_t len = 0;
  host->get_setting_bool(host->ctx, "check_hidden_rows", &o.check_hidden_rows);
  host->get_setting_bool(host->ctx, "probs", &o.probs);
  host->get_setting_bool(host->ctx, "follow_position", &o.follow_position);
  if (host->get_setting_string(host->ctx, "fixed", buf, sizeof buf, &len) == DRIFT_OK && len < sizeof buf)
    o.fixed = parse_levels(std::string(buf, len));
  if (!o.fixed.empty()) return true;
  if (host->get_setting_string(host->ctx, "reference", buf, sizeof buf, &len) != DRIFT_OK || len >= sizeof buf) {
    log(host, DRIFT_LOG_ERROR, "oracle: setting 'reference' (the reference run's JSON-lines file) is required");
    return false;
  }
  path.assign(buf, len);
  read_double(host, "corruption", o.shape.corruption);
  host->get_setting_int(host->ctx, "branching", &o.shape.branching);
  host->get_setting_int(host->ctx, "depth", &o.shape.depth);
  int64_t seed = 0;
  host->get_setting_int(host->ctx, "seed", &seed);
  o.shape.seed = static_cast<uint64_t>(seed);
  if (!(o.shape.corruption >= 0 && o.shape.corruption <= 1) || o.shape.branching < 1 || o.shape.depth < 1) {
    log(host, DRIFT_LOG_ERROR, "oracle: corruption must be in [0, 1], branching and depth >= 1");
    return false;
  }
  return true;
}

bool read_reference(const drift_host_api_t* host, const std::string& path, Oracle& o) {
  std::ifstream in(path);
  if (!in) {
    log(host, DRIFT_LOG_ERROR, "oracle: cannot open reference '" + path + "'");
    return false;
  }
  try {
    for (std::string line; std::getline(in, line);) {
      if (line.empty()) continue;
      const nlohmann::json j = nlohmann::json::parse(line);
      // Assigned in place: a request in flight keeps pointing at its prompt's entry.
      o.reference[j.at("prompt_ids").get<std::vector<int32_t>>()] = j.at("output_ids").get<std::vector<int32_t>>();
    }
  } catch (const std::exception& e) {
    log(host, DRIFT_LOG_ERROR, "oracle: reference '" + path + "': " + e.what());
    return false;
  }
  return true;
}

bool reference_changed(Oracle& o) {
  std::error_code ec;
  const auto stamp = std::filesystem::last_write_time(o.reference_path, ec);
  if (ec || stamp == o.reference_stamp) return false;
  o.reference_stamp = stamp;
  return true;
}

drift_status_t create(const drift_host_api_t* host, const char*, void** instance) {
  auto o = std::make_unique<Oracle>();
  o->host = host;
  std::string path;
  if (!read_settings(host, *o, path) || (o->fixed.empty() && !read_reference(host, path, *o)))
    return DRIFT_ERROR_INVALID_ARGUMENT;
  o->reference_path = path;
  reference_changed(*o);  // remember the stamp of what was read
  *instance = o.release();
  return DRIFT_OK;
}

void destroy(void* instance) { delete static_cast<Oracle*>(instance); }

drift_status_t on_request_start(void* instance, const drift_request_info_t* r) {
  auto& o = *static_cast<Oracle*>(instance);
  const std::vector<int32_t> prompt(r->tokens, r->tokens + r->num_prompt_tokens);
  // The file may have been rewritten since (drift bench --write-reference after each variant, so the
  // next variant replays the last one's outputs): read it again when it changed.
  if (o.fixed.empty() && reference_changed(o)) read_reference(o.host, o.reference_path, o);
  auto it = o.reference.find(prompt);
  if (it == o.reference.end()) return DRIFT_OK;  // no reference: no drafts for this request
  o.requests[r->seq_id] = &it->second;
  o.prompt_lengths[r->seq_id] = r->num_prompt_tokens;
  return DRIFT_OK;
}

drift_status_t on_request_finish(void* instance, drift_seq_id_t seq, int32_t) {
  auto& o = *static_cast<Oracle*>(instance);
  o.requests.erase(seq);
  o.prompt_lengths.erase(seq);
  return DRIFT_OK;
}

// The true next tokens of `seq`, or nothing when its output left the reference.
std::vector<int32_t> truth_for(Oracle& o, drift_seq_id_t seq, int64_t& position) {
  const auto it = o.requests.find(seq);
  if (it == o.requests.end()) return {};
  const drift_token_t* tokens = nullptr;
  int64_t n = 0;
  if (o.host->sequence_tokens(o.host->ctx, seq, &tokens, &n) != DRIFT_OK) return {};
  const std::vector<int32_t>& ref = *it->second;
  position = n - o.prompt_lengths[seq];
  if (position < 0 || position > static_cast<int64_t>(ref.size())) return {};
  for (int64_t i = 0; i < position && !o.follow_position; ++i)
    if (tokens[o.prompt_lengths[seq] + i] != ref[i]) return {};
  return {ref.begin() + position, ref.end()};
}

// The fixed tree: each level's tokens under the first token of the level before.
void propose_fixed(const Oracle& o, drift_draft_tree_t& t) {
  int32_t nodes = 0, parent = -1;
  for (const std::vector<int32_t>& level : o.fixed) {
    const int32_t first = nodes;
    for (int32_t token : level) {
      if (nodes == t.budget) break;
      t.tokens[nodes] = token;
      t.parents[nodes++] = parent;
    }
    parent = first;
  }
  t.num_nodes = nodes;
}

drift_status_t declare_needs(void* instance, drift_needs_t* needs) {
  const auto& o = *static_cast<Oracle*>(instance);
  if (o.check_hidden_rows && needs->max_capture_layers > 0) {
    needs->capture_layers[0] = 0;
    needs->num_capture_layers = 1;
  }
  return DRIFT_OK;
}

// The rows of the sequence's last forward end at its last computed position (the newest token
// has no KV yet) and follow the positions: row i holds the token at n - 1 - rows + i.
bool hidden_rows_follow_positions(const Oracle& o, drift_seq_id_t seq) {
  drift_tensor_t rows{};
  if (o.host->hidden_states(o.host->ctx, seq, 0, &rows) != DRIFT_OK) return true;  // not in the last forward
  const drift_token_t* tokens = nullptr;
  int64_t n = 0;
  if (o.host->sequence_tokens(o.host->ctx, seq, &tokens, &n) != DRIFT_OK || rows.shape[0] > n - 1) return false;
  const auto* values = static_cast<const float*>(rows.data);
  for (int64_t i = 0; i < rows.shape[0]; ++i)
    if (values[i * rows.shape[1]] != static_cast<float>(tokens[n - 1 - rows.shape[0] + i])) return false;
  return true;
}

drift_status_t on_propose(void* instance, const drift_step_t*, drift_draft_tree_t* const* trees, size_t n) {
  auto& o = *static_cast<Oracle*>(instance);
  const int64_t vocab = o.host->model_info(o.host->ctx)->vocab_size;
  for (size_t i = 0; i < n; ++i) {
    drift_draft_tree_t& t = *trees[i];
    if (o.check_hidden_rows && !hidden_rows_follow_positions(o, t.seq_id)) {
      log(o.host, DRIFT_LOG_ERROR, "oracle: hidden-state rows do not follow the committed positions");
      t.status = DRIFT_ERROR;
      continue;
    }
    if (!o.fixed.empty()) {
      propose_fixed(o, t);
      continue;
    }
    int64_t position = 0;
    const std::vector<int32_t> truth = truth_for(o, t.seq_id, position);
    const drift::oracle::Tree tree = drift::oracle::build(o.shape, truth, t.seq_id, position, t.budget, vocab);
    for (size_t k = 0; k < tree.tokens.size(); ++k) {
      t.tokens[k] = tree.tokens[k];
      t.parents[k] = tree.parents[k];
      if (o.probs) t.probs[k] = tree.main[k] ? 0.9f : 0.05f;
    }
    t.has_probs = o.probs;
    t.num_nodes = static_cast<int32_t>(tree.tokens.size());
  }
  return DRIFT_OK;
}

const drift_plugin_t descriptor = [] {
  drift_plugin_t d{};
  d.struct_size = sizeof(drift_plugin_t);
  d.abi_major = DRIFT_ABI_MAJOR;
  d.abi_minor = DRIFT_ABI_MINOR;
  d.name = "oracle";
  d.version = "1.0.0";
  d.kinds = DRIFT_KIND_DRAFT_PROVIDER;
  d.create = create;
  d.destroy = destroy;
  d.on_declare_needs = declare_needs;
  d.on_request_start = on_request_start;
  d.on_request_finish = on_request_finish;
  d.on_propose = on_propose;
  return d;
}();

}  // namespace

extern "C" DRIFT_EXPORT const drift_plugin_t* drift_plugin_get(const drift_host_api_t*, uint32_t) {
  return &descriptor;
}
