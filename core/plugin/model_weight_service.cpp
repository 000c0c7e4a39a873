#include "core/plugin/model_weight_service.h"

#include <string_view>

namespace drift {

void install_model_weight_service(HostCallbacks& callbacks, const ModelWeights& weights) {
  install_model_weight_service(callbacks, [&weights]() -> const ModelWeights& { return weights; });
}

void install_model_weight_service(HostCallbacks& callbacks, std::function<const ModelWeights&()> loaded) {
  callbacks.model_weight = [loaded = std::move(loaded)](const char* name, drift_tensor_t* out) -> drift_status_t {
    if (!name || !out) return DRIFT_ERROR_INVALID_ARGUMENT;
    const ModelWeights& weights = loaded();
    const std::string_view wanted(name);
    const Tensor* found = wanted == "model.embed_tokens.weight" ? &weights.embed
                          : wanted == "lm_head.weight"          ? &weights.lm_head
                          : wanted == "model.norm.weight"       ? &weights.final_norm
                                                                : nullptr;
    if (!found || found->empty()) return DRIFT_ERROR_NOT_FOUND;
    *out = describe_tensor(*found);
    return DRIFT_OK;
  };
}

}  // namespace drift
