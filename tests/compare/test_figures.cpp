// compare::figures, the one accumulator of a check's figures: ρ with its slack, the worst case
// by ρ or by ulp error, counts, per-bound ρ, mismatches in comparison order, octaves, and the
// streaming p99 histogram.

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "pev/compare/figures.h"

namespace pev {
namespace {

using compare::figures;

TEST(CompareHistogram, QuantileIsTheNearestRankBinEdge) {
  compare::log_histogram h;
  for (int v = 1; v <= 1000; ++v) h.add(v);
  for (int z = 0; z < 10; ++z) h.add(0.0);
  // Nearest rank ⌈0.99·1010⌉ = 1000 → the 990th positive value, 990.
  const double q = h.quantile(0.99);
  EXPECT_GE(q, 990.0);
  EXPECT_LT(q, 990.0 * (1 + 1.0 / 64));
  EXPECT_EQ(h.quantile(0.005), 0.0);  // within the zeros
  EXPECT_EQ(h.count(), 1010u);
}

TEST(CompareRho, SlackZeroBoundAndEquality) {
  EXPECT_EQ(compare::rho_of(0, 0), 0.0);
  EXPECT_TRUE(std::isinf(compare::rho_of(1e-300, 0)));
  // An error equal to its bound is ρ < 1 (the slack covers the bound's own evaluation).
  EXPECT_LT(compare::rho_of(1.0, 1.0), 1.0);
  EXPECT_GT(compare::rho_of(1.0, 1.0), 1.0 - 1e-11);
  EXPECT_GT(compare::rho_of(1.0 + 1e-9, 1.0), 1.0);
}

figures::options two_bounds(compare::worst_by w) {
  figures::options o;
  o.max_position = 1 << 12;
  o.indices = 4;
  o.bounds = {"tight", "loose"};
  o.per_bound_rho = true;
  o.worst = w;
  return o;
}

TEST(CompareFigures, CountsRhoPerBoundAndWorstByRho) {
  figures f(two_bounds(compare::worst_by::rho));
  const double b1[] = {1.0, 4.0};
  const double b2[] = {0.25, 4.0};
  f.add_position(3);
  f.add({3, 1, 1.5, 1.0, 0, 0.5}, "cos", b1);  // err 0.5: ρ 0.5 / 0.125; 1 ulp; CR
  f.add_position(2000);
  f.add({2000, 2, 2.0, 1.5, 2, 0.25}, "sin", b2);  // err 0.5: ρ 2 / 0.125; 2 ulps; not faithful
  report::check c;
  f.finish(c);
  EXPECT_EQ(c.values, 2u);
  EXPECT_EQ(c.positions, 2u);
  EXPECT_EQ(c.max_position, 2000);
  EXPECT_EQ(c.correctly_rounded, 1u);
  EXPECT_EQ(c.faithful, 1u);
  EXPECT_EQ(c.max_ulp_distance, 2u);
  EXPECT_DOUBLE_EQ(c.max_ulp_error, 2.0);
  EXPECT_NEAR(c.max_rho, 2.0, 1e-9);  // the gate is the first bound
  EXPECT_FALSE(c.pass);
  EXPECT_NEAR(c.recipe_rho.at("tight"), 2.0, 1e-9);
  EXPECT_NEAR(c.recipe_rho.at("loose"), 0.125, 1e-9);
  EXPECT_EQ(c.worst.position, 2000);
  EXPECT_EQ(c.worst.component, "sin");
  EXPECT_EQ(c.worst.got_hex, "0x1p+1");
  ASSERT_EQ(c.octaves.size(), 2u);  // octaves 1 and 10 hold values
  EXPECT_EQ(c.octaves[0].lo, 2);
  EXPECT_EQ(c.octaves[1].lo, 1024);
  EXPECT_NEAR(c.octaves[1].rho_by_index[2], 2.0, 1e-9);
  EXPECT_EQ(f.max_bound(0), 1.0);
}

TEST(CompareFigures, WorstByUlpErrorAndTheExactValueReplaced) {
  figures f(two_bounds(compare::worst_by::ulp_error));
  const double b[] = {1.0, 1.0};
  f.add({5, 0, 1.0, 0.0, 1, 0.25}, "cos", b);   // ρ 1, 4 ulps
  f.add({6, 1, 0.5, 0.25, 1, 0.01}, "cos", b);  // ρ 0.25, 25 ulps: the worst by ulp error
  report::check c;
  f.finish(c, 0.3);  // the worst's exact value, recomputed (e.g. in MPFR)
  EXPECT_EQ(c.worst.position, 6);
  EXPECT_DOUBLE_EQ(c.worst.exact, 0.3);
  EXPECT_NEAR(c.worst.ulp_error, 20.0, 1e-9);
  EXPECT_NEAR(c.max_ulp_error, 20.0, 1e-9);
}

TEST(CompareFigures, MismatchesKeepComparisonOrderAcrossChecks) {
  std::vector<report::mismatch> sink;
  figures::options o = two_bounds(compare::worst_by::rho);
  o.mismatch_bound = 0;
  o.mismatches = &sink;
  o.max_mismatches = 3;
  figures cos(o), sin(o);
  const double b[] = {0.1, 1.0};
  cos.add({1, 0, 0.5, 0.0, 9, 1}, "cos", b);
  sin.add({1, 0, 0.05, 0.0, 0, 1}, "sin", b);  // within the bound: not a mismatch
  sin.add({2, 0, 0.5, 0.0, 9, 1}, "sin", b);
  cos.add({3, 0, 0.5, 0.0, 9, 1}, "cos", b);
  cos.add({4, 0, 0.5, 0.0, 9, 1}, "cos", b);  // the sink is full
  ASSERT_EQ(sink.size(), 3u);
  EXPECT_EQ(sink[0].check, "cos");
  EXPECT_EQ(sink[1].check, "sin");
  EXPECT_EQ(sink[1].position, 2);
  EXPECT_EQ(sink[2].position, 3);
  EXPECT_DOUBLE_EQ(sink[2].bound, 0.1);
}

TEST(CompareFigures, NonFiniteValuesAreCountedAndInfinitelyWrong) {
  figures f(two_bounds(compare::worst_by::rho));
  const double b[] = {1.0, 1.0};
  f.add({0, 0, std::numeric_limits<double>::quiet_NaN(), 0.0, UINT64_MAX, 1}, "cos", b);
  f.add({0, 1, std::numeric_limits<double>::infinity(), 0.0, UINT64_MAX, 1}, "cos", b);
  report::check c;
  f.finish(c);
  EXPECT_EQ(c.non_finite, 2u);
  EXPECT_TRUE(std::isinf(c.max_abs));
  EXPECT_TRUE(std::isinf(c.max_rho));
  EXPECT_EQ(c.ulp_histogram[report::kUlpBuckets - 1], 2u);
}

}  // namespace
}  // namespace pev
