// ProviderRetirements: after `streak` retirements in a row a provider's new requests start without
// it, one admission in probe_every excepted; a request the policy drafts for resets it.
#include "core/speculation/provider_retirements.h"

#include <gtest/gtest.h>

namespace drift::speculation {
namespace {

TEST(ProviderRetirements, NewRequestsStartWithoutALosingProviderButProbeIt) {
  ProviderRetirements r(ProviderRetirementOptions{3, 4});
  for (int i = 0; i < 2; ++i) {
    r.retired("eagle3");
    EXPECT_TRUE(r.admit("eagle3")) << "fewer than 3 retirements in a row";
  }
  r.retired("eagle3");
  std::vector<bool> admitted;
  for (int i = 0; i < 8; ++i) admitted.push_back(r.admit("eagle3"));
  EXPECT_EQ(admitted, (std::vector<bool>{false, false, false, true, false, false, false, true}));
  EXPECT_TRUE(r.admit("ngram")) << "another provider keeps its own count";
}

TEST(ProviderRetirements, ARequestTheProviderPaysForEndsTheStreak) {
  ProviderRetirements r(ProviderRetirementOptions{2, 8});
  r.retired("eagle3");
  r.retired("eagle3");
  EXPECT_FALSE(r.admit("eagle3"));
  r.paid("eagle3");  // a probe request the policy then drafted for
  EXPECT_TRUE(r.admit("eagle3"));
  r.retired("eagle3");
  EXPECT_TRUE(r.admit("eagle3")) << "the count starts over";
}

}  // namespace
}  // namespace drift::speculation
