#pragma once
// host->model_weight (ABI 1.2): read-only views of the target model's shared weights -- the
// embedding, the LM head and the final norm -- by their checkpoint names, so a draft head that
// has none of its own (EAGLE-3) uses the target's copy instead of loading a second one.
#include <functional>

#include "core/model/model_weights.h"
#include "core/plugin/host_services.h"

namespace drift {

// Serves "model.embed_tokens.weight", "lm_head.weight" (the embedding when tied) and
// "model.norm.weight" from `weights`, which must outlive the callbacks.
void install_model_weight_service(HostCallbacks& callbacks, const ModelWeights& weights);
// The same from weights `weights()` gives when a plugin first asks (it may load them then; it
// must outlive the callbacks).
void install_model_weight_service(HostCallbacks& callbacks, std::function<const ModelWeights&()> weights);

}  // namespace drift
