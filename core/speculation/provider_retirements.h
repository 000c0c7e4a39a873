#pragma once
// ProviderRetirements: whether a request should start with its draft provider at all. Adaptive
// speculation retires a request's provider once drafting has not paid for it for a while
// (AdaptiveSpeculation::retired), but until then the provider's per-step work -- a draft model
// following every forward, its prefill included -- is paid for the request. When a provider's
// last few requests were all retired and none of its requests since was long worth drafting
// for, new requests start without it (they decode plainly, and the provider never follows them);
// one admission in probe_every still starts with it, so a change (a lighter load, text that
// turns predictable) is noticed.
#include <cstdint>
#include <string>
#include <unordered_map>

namespace drift::speculation {

struct ProviderRetirementOptions {
  int32_t streak = 4;       // retirements in a row before new requests start without the provider
  int32_t probe_every = 8;  // then one admission in this many still starts with it
};

class ProviderRetirements {
 public:
  explicit ProviderRetirements(ProviderRetirementOptions options = {}) : options_(options) {}

  // Adaptive speculation retired one of the provider's requests.
  void retired(const std::string& provider);
  // The policy has long drafted for one of the provider's requests (AdaptiveSpeculation::pays).
  void paid(const std::string& provider);
  // Whether a request being admitted starts with the provider.
  bool admit(const std::string& provider);

 private:
  struct State {
    int32_t retired_in_a_row = 0;
    int64_t admissions_while_retiring = 0;
  };
  ProviderRetirementOptions options_;
  std::unordered_map<std::string, State> providers_;
};

}  // namespace drift::speculation
