// compare::figures, the one accumulator of a check's figures: ρ with its slack, the worst case
// by ρ or by ulp error, counts, per-bound ρ, mismatches in comparison order, octaves, and the
// streaming p99 histogram.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <random>
#include <utility>
#include <vector>

#include "pev/compare/figures.h"
#include "pev/metric/error_model.h"

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

// Every figure finish() reports, and each octave's argmax, equal between two figures.
void expect_same(const figures& a, const figures& b) {
  report::check x, y;
  a.finish(x);
  b.finish(y);
  EXPECT_EQ(x.values, y.values);
  EXPECT_EQ(x.positions, y.positions);
  EXPECT_EQ(x.max_position, y.max_position);
  EXPECT_EQ(x.max_abs, y.max_abs);
  EXPECT_EQ(x.max_rho, y.max_rho);
  EXPECT_EQ(x.max_ulp_error, y.max_ulp_error);
  EXPECT_EQ(x.max_ulp_distance, y.max_ulp_distance);
  EXPECT_EQ(x.correctly_rounded, y.correctly_rounded);
  EXPECT_EQ(x.faithful, y.faithful);
  EXPECT_EQ(x.non_finite, y.non_finite);
  EXPECT_EQ(x.ulp_histogram, y.ulp_histogram);
  EXPECT_EQ(x.recipe_rho, y.recipe_rho);
  EXPECT_EQ(x.ladder_rho, y.ladder_rho);
  EXPECT_EQ(x.vacuous, y.vacuous);
  EXPECT_EQ(x.worst.position, y.worst.position);
  EXPECT_EQ(x.worst.index, y.worst.index);
  EXPECT_EQ(x.worst.component, y.worst.component);
  EXPECT_EQ(x.worst.got_hex, y.worst.got_hex);
  EXPECT_EQ(x.worst.rho, y.worst.rho);
  EXPECT_EQ(x.worst.ulp_error, y.worst.ulp_error);
  ASSERT_EQ(x.octaves.size(), y.octaves.size());
  for (std::size_t k = 0; k < x.octaves.size(); ++k) {
    const report::octave &o = x.octaves[k], &p = y.octaves[k];
    EXPECT_EQ(o.lo, p.lo);
    EXPECT_EQ(o.positions, p.positions);
    EXPECT_EQ(o.values, p.values);
    EXPECT_EQ(o.max_abs, p.max_abs);
    EXPECT_EQ(o.p99_abs, p.p99_abs);
    EXPECT_EQ(o.max_bound, p.max_bound);
    EXPECT_EQ(o.max_rho, p.max_rho);
    EXPECT_EQ(o.rho_by_index, p.rho_by_index);
  }
  for (std::size_t k = 0; k < a.octaves(); ++k) EXPECT_EQ(a.argmax(k), b.argmax(k)) << k;
}

// Figures computed chunk by chunk and merged in chunk order equal one figures fed every value in
// order (threads and shards rely on it): values with ties in ρ and in ulp error (coarse
// errors), zeros, non-finite values, vacuous bounds, a ladder and mismatches, split at random
// points, for both ways of choosing the worst case.
TEST(CompareFigures, MergedChunksEqualOneSequence) {
  const unsigned seed = 20261124;
  std::printf("seed %u\n", seed);
  std::mt19937_64 rng(seed);
  for (const compare::worst_by w : {compare::worst_by::rho, compare::worst_by::ulp_error}) {
    for (int round = 0; round < 20; ++round) {
      figures::options o = two_bounds(w);
      o.ladder = {0, 1};
      o.mismatch_bound = 0;
      o.max_mismatches = 5;
      std::vector<report::mismatch> whole_sink;
      o.mismatches = &whole_sink;
      figures whole(o);
      std::vector<figures> parts;
      std::vector<std::vector<report::mismatch>> sinks(64);
      const int n = 1 + static_cast<int>(rng() % 400);
      std::vector<int> cuts = {0, n};
      for (int c = static_cast<int>(rng() % 6); c > 0; --c) {
        cuts.push_back(static_cast<int>(rng() % static_cast<unsigned>(n + 1)));
      }
      std::sort(cuts.begin(), cuts.end());
      for (std::size_t c = 0; c + 1 < cuts.size(); ++c) {
        figures::options po = o;
        po.mismatches = &sinks[c];
        figures part(po);
        for (int v = cuts[c]; v < cuts[c + 1]; ++v) {
          const auto p = static_cast<std::int64_t>(rng() % 4096);
          const auto index = static_cast<std::int64_t>(rng() % 4);
          const double exact = 0.5 + static_cast<double>(rng() % 4) * 0.125;
          const int kind = static_cast<int>(rng() % 16);
          const double got = kind == 0  ? std::numeric_limits<double>::quiet_NaN()
                             : kind < 5 ? exact
                                        : exact + static_cast<double>(rng() % 5) * 0x1p-10;
          const double b[] = {static_cast<double>(1 + rng() % 3) * 0x1p-9,
                              kind == 15 ? 8.0 : 0x1p-6};
          const compare::value val{p, index, got, exact, rng() % 3, 0x1p-12, 1.0, 0x1p-12};
          whole.add_position(p);
          part.add_position(p);
          whole.add(val, v % 2 ? "sin" : "cos", b);
          part.add(val, v % 2 ? "sin" : "cos", b);
        }
        parts.push_back(std::move(part));
      }
      figures merged(o);
      std::vector<report::mismatch> merged_sink;
      for (std::size_t c = 0; c < parts.size(); ++c) {
        merged.merge(parts[c]);
        for (const auto& m : sinks[c]) {
          if (merged_sink.size() < o.max_mismatches) merged_sink.push_back(m);
        }
      }
      SCOPED_TRACE("round " + std::to_string(round) + " values " + std::to_string(n));
      expect_same(whole, merged);
      ASSERT_EQ(whole_sink.size(), merged_sink.size());
      for (std::size_t m = 0; m < whole_sink.size(); ++m) {
        EXPECT_EQ(whole_sink[m].position, merged_sink[m].position);
        EXPECT_EQ(whole_sink[m].check, merged_sink[m].check);
      }
    }
  }
}

// add_rows equals add() of each value in order: blocks of rows at increasing, repeated and (in
// some rounds) scattered positions, so that a block spans octaves and comes back to one, with
// exact zeros (the zero floor), NaN and Inf values, vacuous bounds, ties, mismatches and a
// ladder, a gate other than the first bound, for both ways of choosing the worst case; and the
// row of each mismatch.
TEST(CompareFigures, AddRowsEqualsAddOfEachValue) {
  const unsigned seed = 20261124;
  std::printf("seed %u\n", seed);
  std::mt19937_64 rng(seed);
  const format out = metric::kF32;
  for (const compare::worst_by w : {compare::worst_by::rho, compare::worst_by::ulp_error}) {
    for (int round = 0; round < 40; ++round) {
      figures::options o;
      o.max_position = 1 << 18;
      o.indices = 24;
      o.bounds = {"a", "b", "c"};
      o.gate = static_cast<std::size_t>(round % 3);
      o.per_bound_rho = true;
      o.worst = w;
      o.ladder = round % 2 ? std::vector<std::size_t>{0, 2} : std::vector<std::size_t>{0, 1, 2};
      o.zero_floor = true;
      o.mismatch_bound = static_cast<std::size_t>((round / 3) % 3);
      o.max_mismatches = 6;
      std::vector<report::mismatch> s1, s2, s3, part_sink;
      o.mismatches = &s1;
      figures one(o);
      o.mismatches = &s2;
      figures rows(o);
      // The same blocks in chunks of a few blocks, each screened with the chunks before it,
      // merged (figures::screen_with; certification's chunks).
      o.mismatches = nullptr;
      figures merged(o);
      o.mismatches = &part_sink;
      std::optional<figures> part;
      auto close_part = [&] {
        if (!part) return;
        merged.merge(*part);
        for (const auto& m : part_sink) {
          if (s3.size() < o.max_mismatches) s3.push_back(m);
        }
        part_sink.clear();
        part.reset();
      };
      const double scale = round % 5 == 0 ? 0x1p-8 : 1.0;
      const int nblocks = 1 + static_cast<int>(rng() % 100);
      // Most rounds stay in one octave, where each maximum rises rarely and only its own test
      // finds the value that raises it.
      std::int64_t p = round % 4 == 0 ? 0 : std::int64_t{1} << 17;
      for (int blk = 0; blk < nblocks; ++blk) {
        const std::size_t R = 1 + rng() % 8, n = 1 + rng() % 24, N = R * n;
        const auto index0 = static_cast<std::int64_t>(rng() % (25 - n));
        std::vector<std::int64_t> pos(R);
        for (std::int64_t& x : pos) {
          p += static_cast<std::int64_t>(rng() % (round % 4 == 0 ? 700 : 20));
          x = round % 8 == 3 ? static_cast<std::int64_t>(rng() % (1 << 18)) : p;
        }
        std::vector<double> got(N), exact(N), bounds(3 * N);
        std::vector<std::uint64_t> dist(N);
        for (std::size_t k = 0; k < N; ++k) {
          // Non-finite values (infinite ρ and ulp error: no maximum rises after them) in some
          // rounds only.
          int kind = static_cast<int>(rng() % 20);
          if ((kind == 1 || kind == 2) && round % 5 != 1) kind = 9;
          exact[k] = kind == 0 ? 0.0 : std::ldexp(static_cast<double>(1 + rng() % 1000), -10);
          got[k] = kind == 1   ? std::numeric_limits<double>::quiet_NaN()
                   : kind == 2 ? std::numeric_limits<double>::infinity()
                   : kind < 8  ? exact[k]
                               : exact[k] + static_cast<double>(rng() % 7000) * 0x1p-34 *
                                               (kind % 2 ? 1 : -1);
          dist[k] = rng() % 3;
          for (std::size_t b = 0; b < 3; ++b) {
            bounds[b * N + k] = kind == 3 ? 4.0 : static_cast<double>(1 + rng() % 4000) * 0x1p-34;
          }
        }
        const double scale_ulp = metric::ulp_at(scale, out);
        for (std::size_t k = 0; k < N; ++k) {
          const double b[] = {bounds[k], bounds[N + k], bounds[2 * N + k]};
          one.add({pos[k / n], index0 + static_cast<std::int64_t>(k % n), got[k], exact[k], dist[k],
                   metric::ulp_at(std::fabs(exact[k]), out), scale, scale_ulp},
                  "cos", b);
        }
        for (const std::int64_t x : pos) {
          one.add_position(x);
          rows.add_position(x);
        }
        if (!part || rng() % 4 == 0) {
          close_part();
          part.emplace(o);
          part->screen_with(&merged);
        }
        for (const std::int64_t x : pos) part->add_position(x);
        std::vector<double> part_bounds = bounds;
        part->add_rows({pos, index0, got, exact, dist, out, scale, scale_ulp}, "cos", part_bounds);
        const std::size_t before = s2.size();
        std::vector<std::size_t> mrows;
        rows.add_rows({pos, index0, got, exact, dist, out, scale, scale_ulp}, "cos", bounds,
                      &mrows);
        ASSERT_EQ(mrows.size(), s2.size() - before);
        for (std::size_t m = 0; m < mrows.size(); ++m) {
          EXPECT_EQ(s2[before + m].position, pos[mrows[m]]);
        }
      }
      close_part();
      SCOPED_TRACE("round " + std::to_string(round));
      expect_same(one, rows);
      expect_same(one, merged);
      ASSERT_EQ(s1.size(), s2.size());
      ASSERT_EQ(s1.size(), s3.size());
      for (std::size_t m = 0; m < s1.size(); ++m) {
        EXPECT_EQ(s1[m].position, s2[m].position);
        EXPECT_EQ(s1[m].index, s2[m].index);
        EXPECT_EQ(s1[m].position, s3[m].position);
        EXPECT_EQ(s1[m].index, s3[m].index);
      }
    }
  }
}

// The bin of one value, read back as the upper edge its quantile reports: 64 bins per binade from
// 2^−100, zeros apart, below 2^−100 (subnormals too) the first bin, from 2^16 and +Inf the last.
TEST(CompareHistogram, BinEdges) {
  const double inf = std::numeric_limits<double>::infinity();
  const std::pair<double, double> cases[] = {{1.0, 1.0 + 1.0 / 64},
                                             {0x1.03fffffp+0, 1.0 + 1.0 / 64},
                                             {0x1.04p+0, 1.0 + 2.0 / 64},
                                             {0x1.fffp+3, 16.0},
                                             {0x1p-100, 0x1.04p-100},
                                             {0x1p-101, 0x1.04p-100},
                                             {0x1p-1074, 0x1.04p-100},
                                             {0x1.ffffffp+15, 0x1p+16},
                                             {0x1p+16, inf},
                                             {inf, inf}};
  for (const auto& [v, edge] : cases) {
    compare::log_histogram h;
    h.add(v);
    EXPECT_EQ(h.quantile(1.0), edge) << v;
  }
  compare::log_histogram z;
  z.add(0.0);
  EXPECT_EQ(z.quantile(1.0), 0.0);
}

}  // namespace
}  // namespace pev
