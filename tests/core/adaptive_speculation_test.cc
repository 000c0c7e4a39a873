// Adaptive speculation's parts (core/speculation): the step-time curve, per-depth acceptance, the
// drafting-cost fit, and the budget policy, checked against brute force over every budget vector.
#include "core/speculation/adaptive_speculation.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

namespace drift::speculation {
namespace {

TEST(StepTimeCurve, InterpolatesBetweenSizesAndNeverFlattersAnUnseenOne) {
  StepTimeCurve curve;
  EXPECT_FALSE(curve.predict(1).has_value());
  curve.observe(1, 0.010);
  EXPECT_DOUBLE_EQ(*curve.predict(1), 0.010);
  EXPECT_DOUBLE_EQ(*curve.predict(4), 0.040);  // past the largest size seen: in proportion
  curve.observe(9, 0.012);
  EXPECT_NEAR(*curve.predict(5), 0.011, 1e-12);  // halfway between 1 and 9 rows
  EXPECT_NEAR(*curve.predict(18), 0.024, 1e-12);
  curve.observe(16, 0.011);  // noise below the 9-row mean: the curve still does not fall
  EXPECT_GE(*curve.predict(12), *curve.predict(9));
  // Decay: the 1-row bucket follows a slower machine.
  for (int i = 0; i < 100; ++i) curve.observe(1, 0.020);
  EXPECT_NEAR(*curve.predict(1), 0.020, 1e-6);
  curve.observe(0, 1.0);  // ignored
  curve.observe(3, NAN);  // ignored
  EXPECT_NEAR(*curve.predict(1), 0.020, 1e-6);
}

TEST(AcceptanceRates, LearnsPerDepthRatesFromAcceptedLengths) {
  AcceptanceRates rates(4, AcceptancePrior{0.5, 2.0, 1.0});  // no decay: exact counts
  EXPECT_DOUBLE_EQ(rates.rate(1), 0.5);
  EXPECT_DOUBLE_EQ(rates.expected_accepted(2), 0.5 + 0.25);
  rates.observe(4, 2);  // depths 1, 2 accepted, 3 rejected, 4 never tried
  EXPECT_DOUBLE_EQ(rates.rate(1), 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(rates.rate(3), 1.0 / 3.0);
  EXPECT_DOUBLE_EQ(rates.rate(4), 0.5);
  rates.observe(4, 4);  // all accepted: no failure recorded
  EXPECT_DOUBLE_EQ(rates.rate(4), 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(rates.gain(2), rates.rate(1) * rates.rate(2));
  EXPECT_EQ(rates.observations(), 2);
  rates.observe(0, 0);  // no draft: nothing learned
  rates.observe(9, 9);  // clamped to the tracked depths
  EXPECT_EQ(rates.observations(), 3);
  EXPECT_EQ(rates.rate(0), 0.0);
  EXPECT_EQ(rates.rate(5), 0.0);
}

TEST(AcceptanceRates, ForgetsOldText) {
  AcceptanceRates rates(2);
  for (int i = 0; i < 200; ++i) rates.observe(2, 2);
  EXPECT_GT(rates.rate(1), 0.95);
  for (int i = 0; i < 200; ++i) rates.observe(2, 0);
  EXPECT_LT(rates.rate(1), 0.1);  // the prior (0.6, weight 2) against ~20 decayed failures
}

TEST(DraftCost, RecoversFixedPerDepthAndPerNodeCosts) {
  DraftCost cost;
  EXPECT_EQ(cost.predict(4, 4), 0.0);
  std::mt19937 rng(3);
  for (int i = 0; i < 200; ++i) {
    const int64_t deepest = 1 + rng() % 8, total = deepest * (1 + rng() % 32);
    cost.observe(deepest, total, 0.001 + 0.0005 * deepest + 0.00001 * total);
  }
  EXPECT_NEAR(cost.predict(5, 100), 0.001 + 0.0025 + 0.001, 1e-9);
  EXPECT_EQ(cost.predict(0, 0), 0.0);
  // A provider that costs nothing per node: no negative coefficient from the fit.
  DraftCost flat;
  for (int i = 0; i < 50; ++i) flat.observe(1 + i % 4, 1 + i % 4, 0.002);
  EXPECT_NEAR(flat.predict(3, 3), 0.002, 1e-9);
  EXPECT_NEAR(flat.predict(3, 300), 0.002, 1e-9);
}

// Brute force over every budget vector of the same objective the policy maximises.
double rate_of(const std::vector<int32_t>& b, int64_t base_rows, int64_t base_tokens,
               const std::vector<BudgetRequest>& q, const StepTimeCurve& t, const DraftCost& d) {
  double tokens = static_cast<double>(base_tokens);
  int64_t total = 0, deepest = 0;
  for (size_t r = 0; r < b.size(); ++r) {
    tokens += q[r].rates->expected_accepted(b[r]);
    total += b[r];
    deepest = std::max<int64_t>(deepest, b[r]);
  }
  return tokens / (*t.predict(base_rows + total) + d.predict(deepest, total));
}

double brute_force_best(int64_t base_rows, int64_t base_tokens, const std::vector<BudgetRequest>& q,
                        const StepTimeCurve& t, const DraftCost& d) {
  std::vector<int32_t> b(q.size(), 0);
  double best = 0;
  std::function<void(size_t)> walk = [&](size_t r) {
    if (r == q.size()) {
      best = std::max(best, rate_of(b, base_rows, base_tokens, q, t, d));
      return;
    }
    for (b[r] = 0; b[r] <= q[r].max_budget; ++b[r]) walk(r + 1);
    b[r] = 0;
  };
  walk(0);
  return best;
}

TEST(DraftBudgetPolicy, MatchesBruteForceOverRandomAcceptanceAndCostCurves) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  DraftBudgetPolicy policy;
  for (int trial = 0; trial < 300; ++trial) {
    StepTimeCurve curve;
    const double fixed = 0.005 + 0.01 * u(rng), per_row = 0.02 * u(rng) * u(rng);
    for (int64_t rows : {1, 2, 4, 8, 16, 32}) curve.observe(rows, fixed + per_row * rows);
    DraftCost draft;
    const double d0 = 0.002 * u(rng), d1 = 0.002 * u(rng), d2 = 0.0005 * u(rng);
    for (int i = 0; i < 40; ++i) {
      const int64_t deepest = 1 + i % 4, total = deepest * (1 + i % 3);
      draft.observe(deepest, total, d0 + d1 * deepest + d2 * total);
    }
    const size_t n = 1 + rng() % 3;
    std::vector<AcceptanceRates> rates;
    for (size_t r = 0; r < n; ++r) {
      rates.emplace_back(4, AcceptancePrior{u(rng), 1.0, 1.0});
      for (int i = 0; i < 5; ++i) rates.back().observe(4, static_cast<int32_t>(rng() % 5));
    }
    std::vector<BudgetRequest> q;
    for (size_t r = 0; r < n; ++r) q.push_back({&rates[r], static_cast<int32_t>(rng() % 5), 0});
    const int64_t base_rows = static_cast<int64_t>(n) + rng() % 3, base_tokens = static_cast<int64_t>(n);
    const BudgetChoice choice = policy.choose(base_rows, base_tokens, q, curve, draft);
    const double best = brute_force_best(base_rows, base_tokens, q, curve, draft);
    const double ours = rate_of(choice.budgets, base_rows, base_tokens, q, curve, draft);
    ASSERT_NEAR(ours, best, 1e-9 * best) << "trial " << trial;
    ASSERT_NEAR(choice.predicted_rate, ours, 1e-9 * ours) << "trial " << trial;
    for (size_t r = 0; r < n; ++r) ASSERT_LE(choice.budgets[r], q[r].max_budget);
  }
}

TEST(DraftBudgetPolicy, DraftsWhereRowsAreFreeAndNotWhereTheyCostAStep) {
  AcceptanceRates good(8), poor(8);
  for (int i = 0; i < 50; ++i) {
    good.observe(8, 6);
    poor.observe(8, 0);
  }
  DraftBudgetPolicy policy;
  DraftCost no_draft_cost;
  // A GPU at small batches: a forward of 64 rows costs what one of 1 does.
  StepTimeCurve flat;
  for (int64_t rows : {1, 8, 64}) flat.observe(rows, 0.010);
  BudgetChoice gpu = policy.choose(2, 2, {{&good, 8, 0}, {&poor, 8, 0}}, flat, no_draft_cost);
  EXPECT_EQ(gpu.budgets[0], 8);
  EXPECT_GT(gpu.budgets[1], 0);  // rows are free: even a poor guess is worth a row or two
  // A CPU: every row costs as much as a decode; the poor request stops, the good one keeps drafting
  // as far as its acceptance pays for the rows.
  StepTimeCurve linear;
  for (int64_t rows : {1, 2, 4, 8, 16}) linear.observe(rows, 0.010 * rows);
  BudgetChoice cpu = policy.choose(2, 2, {{&good, 8, 0}, {&poor, 8, 0}}, linear, no_draft_cost);
  EXPECT_EQ(cpu.budgets[1], 0);
  EXPECT_EQ(cpu.budgets[0], 0);  // 0.9 < 1 token a row: drafting never beats a plain decode row
  // A draft model's cost per step: the GPU case with a drafting step as long as a forward.
  DraftCost slow;
  for (int i = 1; i <= 8; ++i) slow.observe(i, 2 * i, 0.010 * i);
  BudgetChoice costly = policy.choose(2, 2, {{&good, 8, 0}, {&poor, 8, 0}}, flat, slow);
  EXPECT_LT(costly.budgets[0], 8);
  EXPECT_EQ(costly.budgets[1], 0);
}

// A row of a verify forward costs a quarter of a decode step; the request's first draft token is
// accepted 55% of the time: drafting one token pays (1.55 tokens in 1.25 steps) -- unless the
// provider's per-step following work (a draft model's forward hooks) is counted too.
StepTimeCurve quarter_step_rows() {
  StepTimeCurve curve;
  for (int64_t rows : {1, 2, 3, 5}) curve.observe(rows, 0.0075 + 0.0025 * rows);
  return curve;
}
void observe_55_percent(AcceptanceRates& rates, int n) {
  for (int i = 0; i < n; ++i) rates.observe(1, i % 20 < 11 ? 1 : 0);
}

TEST(DraftBudgetPolicy, CountsTheFollowingCostInWhetherSpeculationPaysAtAll) {
  AcceptanceRates rates(1);
  observe_55_percent(rates, 400);
  const StepTimeCurve curve = quarter_step_rows();
  DraftBudgetPolicy policy;
  const BudgetChoice free_following = policy.choose(1, 1, {{&rates, 1, 0}}, curve, DraftCost{});
  EXPECT_EQ(free_following.budgets[0], 1);
  EXPECT_TRUE(free_following.following_pays);
  // 1.55 tokens in 12.5 + 1 ms beats 1 token in 10 ms; in 12.5 + 4 ms it does not. The draft is
  // still taken (the following is paid this step either way), but speculating no longer pays.
  const BudgetChoice light = policy.choose(1, 1, {{&rates, 1, 0}}, curve, DraftCost{}, 0.001);
  EXPECT_EQ(light.budgets[0], 1);
  EXPECT_TRUE(light.following_pays);
  const BudgetChoice heavy = policy.choose(1, 1, {{&rates, 1, 0}}, curve, DraftCost{}, 0.004);
  EXPECT_EQ(heavy.budgets[0], 1);
  EXPECT_FALSE(heavy.following_pays);
}

TEST(DraftBudgetPolicy, ProbesARequestItKeptAtZeroAndUsesTheFixedBudgetsBeforeAnyTiming) {
  AcceptanceRates poor(4);
  for (int i = 0; i < 50; ++i) poor.observe(4, 0);
  StepTimeCurve linear;
  for (int64_t rows : {1, 2, 4}) linear.observe(rows, 0.01 * rows);
  DraftBudgetPolicy policy(DraftBudgetOptions{16, 2});
  EXPECT_EQ(policy.choose(1, 1, {{&poor, 4, 15}}, linear, DraftCost{}).budgets[0], 0);
  EXPECT_EQ(policy.choose(1, 1, {{&poor, 4, 16}}, linear, DraftCost{}).budgets[0], 2);
  EXPECT_EQ(policy.choose(1, 1, {{&poor, 1, 16}}, linear, DraftCost{}).budgets[0], 1);
  EXPECT_EQ(policy.choose(1, 1, {{&poor, 0, 99}}, linear, DraftCost{}).budgets[0], 0);
  StepTimeCurve unseen;
  EXPECT_EQ(policy.choose(1, 1, {{&poor, 4, 0}}, unseen, DraftCost{}).budgets[0], 4);
}

}  // namespace
}  // namespace drift::speculation

namespace drift::speculation {
namespace {

// The engine-facing state: a request whose drafts keep failing on a CPU-like curve stops drafting,
// is probed again after probe_interval steps, and a request that starts being accepted on a
// GPU-like curve drafts to its cap. Finished requests are forgotten.
TEST(AdaptiveSpeculation, StopsALosingRequestProbesItAndFollowsAWinningOne) {
  AdaptiveSpeculation adaptive(4, DraftBudgetOptions{8, 2});
  const std::vector<uint64_t> seqs = {7};
  const std::vector<int32_t> caps = {4};
  EXPECT_EQ(adaptive.budgets(seqs, caps, 1, 1)[0], 4);  // nothing timed yet: the fixed budget
  for (int64_t rows : {1, 2, 3, 5}) adaptive.observe_forward(rows, 0.01 * rows);
  int drafted = 0;
  for (int step = 0; step < 64; ++step) {
    const int32_t b = adaptive.budgets(seqs, caps, 1, 1)[0];
    if (b > 0) {
      ++drafted;
      adaptive.observe_verification(7, b, 0);
    }
  }
  EXPECT_GE(drafted, 64 / 9);  // a probe at least every 9 steps
  EXPECT_LE(drafted, 64 / 8 + 2);
  EXPECT_TRUE(adaptive.retired(7));  // more than retire_after zeros in a row, probes aside
  // The same request on a GPU-like curve, now accepted in full.
  for (int i = 0; i < 40; ++i)
    for (int64_t rows : {1, 2, 3, 5}) adaptive.observe_forward(rows, 0.01);
  int32_t last = 0;
  for (int step = 0; step < 40; ++step) {
    last = adaptive.budgets(seqs, caps, 1, 1)[0];
    if (last > 0) adaptive.observe_verification(7, last, last);
  }
  EXPECT_EQ(last, 4);
  EXPECT_FALSE(adaptive.retired(7));
  EXPECT_GT(adaptive.chosen().at(0), 0);
  EXPECT_GT(adaptive.chosen().at(4), 0);
  // Another request alone: 7's state is dropped; the newcomer starts from what the engine saw
  // of the others (mostly full acceptance lately) and drafts to its cap.
  EXPECT_EQ(adaptive.budgets(std::vector<uint64_t>{9}, caps, 1, 1)[0], 4);
}

}  // namespace
}  // namespace drift::speculation

namespace drift::speculation {
namespace {

// Probes do not count as drafting: a request the policy itself keeps at 0 for retire_after steps
// is retired even though it was probed in between; one the policy drafts for is not.
TEST(AdaptiveSpeculation, RetiresARequestKeptAtZeroForRetireAfterSteps) {
  AdaptiveSpeculation adaptive(4, DraftBudgetOptions{4, 1, 20});
  // A row costs a tenth of a step's fixed time: worth it for an accepted draft, not a rejected one.
  for (int64_t rows : {1, 2, 3, 5, 9}) adaptive.observe_forward(rows, 0.01 + 0.001 * rows);
  const std::vector<uint64_t> seqs = {1, 2};
  const std::vector<int32_t> caps = {4, 4};
  int probes_after_zero = 0, retired_at = -1, last_positive = -1;
  for (int step = 0; step < 200 && retired_at < 0; ++step) {
    const std::vector<int32_t> b = adaptive.budgets(seqs, caps, 2, 2);
    if (adaptive.retired(1)) retired_at = step;
    if (b[0] > 0) {
      // Drafted while the prior still hoped; later only as a probe, every probe_interval steps.
      if (last_positive >= 0 && step - last_positive >= 4) ++probes_after_zero;
      last_positive = step;
      adaptive.observe_verification(1, b[0], 0);
    }
    if (step >= 10) {
      EXPECT_EQ(b[1], 4) << "step " << step;
    }
    adaptive.observe_verification(2, b[1], b[1]);
    EXPECT_FALSE(adaptive.retired(2));  // accepted in full: drafted to its cap
  }
  ASSERT_GE(retired_at, 20);  // 20 of the policy's own zeros in a row, probes in between
  EXPECT_LT(retired_at, 60);
  EXPECT_GT(probes_after_zero, 0);
  EXPECT_FALSE(adaptive.retired(99));
  // What ProviderRetirements hears: the policy has drafted for 2 all along (it pays), not for 1.
  EXPECT_TRUE(adaptive.pays(2));
  EXPECT_FALSE(adaptive.pays(1));
  EXPECT_FALSE(adaptive.pays(99));
}

}  // namespace
}  // namespace drift::speculation

namespace drift::speculation {
namespace {

// The engine-facing side: steps where following does not pay count as kept at 0, so a request
// whose drafts are accepted but do not pay for its provider's following is retired; with a light
// following it drafts on.
TEST(AdaptiveSpeculation, RetiresARequestWhoseDraftsDoNotPayForTheFollowing) {
  for (const double following : {0.004, 0.001}) {
    AdaptiveSpeculation adaptive(1, DraftBudgetOptions{32, 1, 10});
    for (int64_t rows : {1, 2, 3, 5}) adaptive.observe_forward(rows, 0.0075 + 0.0025 * rows);
    const std::vector<uint64_t> seqs = {1};
    const std::vector<int32_t> caps = {1};
    int step = 0;
    for (; step < 40 && !adaptive.retired(1); ++step) {
      const int32_t b = adaptive.budgets(seqs, caps, 1, 1, following)[0];
      if (b > 0) adaptive.observe_verification(1, b, step % 20 < 11 ? 1 : 0);
    }
    if (following > 0.002) {
      EXPECT_TRUE(adaptive.retired(1)) << "following " << following;
      EXPECT_FALSE(adaptive.pays(1));
    } else {
      EXPECT_FALSE(adaptive.retired(1)) << "following " << following;
      EXPECT_TRUE(adaptive.pays(1));
    }
  }
}

}  // namespace
}  // namespace drift::speculation
