// PluginHost: on_target_forward (ABI 1.2), the batch hook through which plugins see every
// target forward's rows -- prefill chunks included -- right after the step's commits. Like the
// other batch hooks, the host keeps its own copy of each row's "in" fields and never reads them
// back; a struct the plugin changed fails that sequence only.
#include <fmt/format.h>

#include "core/plugin/guarded_call.h"
#include "core/plugin/loaded_plugin.h"
#include "core/plugin/plugin_host.h"

namespace drift {
namespace {

std::string rows_intact(const ForwardRows& in, const drift_forward_rows_t& c) {
  if (c.struct_size != sizeof(drift_forward_rows_t) || c.seq_id != in.seq || c.first_position != in.first_position ||
      c.num_rows != in.num_rows || c.num_tokens != in.num_tokens)
    return "overwrote an input field of drift_forward_rows_t (the host set them; they must not change)";
  return c.status != DRIFT_OK ? fmt::format("set status {} for this sequence", c.status) : "";
}

}  // namespace

void PluginHost::target_forward(const StepInfo& step, std::span<const ForwardRows> rows) {
  for (auto& p : plugins_) {
    if (!p->info.enabled || !p->desc.on_target_forward) continue;
    std::vector<const ForwardRows*> mine;
    std::vector<drift_forward_rows_t> c_rows;
    for (const ForwardRows& r : rows)
      if (p->usable_for(r.seq)) {
        mine.push_back(&r);
        drift_forward_rows_t& c = c_rows.emplace_back();
        c.struct_size = sizeof(c);
        c.seq_id = r.seq;
        c.first_position = r.first_position;
        c.num_rows = r.num_rows;
        c.num_tokens = r.num_tokens;
        c.status = DRIFT_OK;
      }
    if (mine.empty()) continue;
    std::vector<drift_forward_rows_t*> pointers;
    std::vector<drift_seq_id_t> seqs;
    for (size_t i = 0; i < c_rows.size(); ++i) {
      pointers.push_back(&c_rows[i]);
      seqs.push_back(mine[i]->seq);
    }
    drift_step_t c_step = to_c(step);
    if (auto why = guarded_call(
            [&] { return p->desc.on_target_forward(p->instance, &c_step, pointers.data(), pointers.size()); })) {
      fallback(*p, "on_target_forward", seqs, *why);
      continue;
    }
    for (size_t i = 0; i < c_rows.size(); ++i)
      if (std::string bad = rows_intact(*mine[i], c_rows[i]); !bad.empty())
        fallback(*p, "on_target_forward", std::span(&seqs[i], 1), bad);
  }
}

}  // namespace drift
