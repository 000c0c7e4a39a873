#include "core/speculation/provider_retirements.h"

namespace drift::speculation {

void ProviderRetirements::retired(const std::string& provider) { providers_[provider].retired_in_a_row++; }

void ProviderRetirements::paid(const std::string& provider) { providers_[provider] = State{}; }

bool ProviderRetirements::admit(const std::string& provider) {
  State& s = providers_[provider];
  if (s.retired_in_a_row < options_.streak) return true;
  // The first admission after the streak is kept from the provider; every probe_every-th after it
  // is a probe.
  return s.admissions_while_retiring++ % options_.probe_every == options_.probe_every - 1;
}

}  // namespace drift::speculation
