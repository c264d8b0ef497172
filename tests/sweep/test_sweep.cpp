// The sweep's figures checked against the analytical error model (docs/numerics.md §15.1, §15.2),
// not by eye: hf fp32 error grows linearly with position (~p·2^−24), table-bf16 sits at ~2^−9 (½
// ulp of bf16 below 1) until the fp32 phase error overtakes it, accurate stays within 1 ulp at
// every position. Also: positions, the streaming percentile, determinism, and shards.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "common/seed.h"
#include "pev/report/json.h"
#include "pev/report/merge.h"
#include "pev/spec/parse.h"
#include "pev/sweep/sweep.h"

namespace pev {
namespace {

using report::check;
using report::results;

// fp32 unit roundoff and the ½ ulps of the 16-bit types just below 1 (docs/numerics.md §2.1).
constexpr double kU32 = 0x1p-24;
constexpr double kHalfUlpBf16BelowOne = 0x1p-9;

std::vector<sweep::suite_entry> llama2() {
  return {{"llama2", spec::parse_spec("rope:head_dim=128,rope_theta=10000"), ""}};
}

sweep::options small(std::int64_t max_position, std::uint64_t seed) {
  sweep::options o;
  o.max_position = max_position;
  o.samples_per_octave = 16;
  o.seed = seed;
  o.threads = 2;
  return o;
}

const check& find(const results& r, const std::string& id) {
  const auto it =
      std::find_if(r.checks.begin(), r.checks.end(), [&](const check& c) { return c.id == id; });
  if (it == r.checks.end()) throw std::runtime_error("no check " + id);
  return *it;
}

/// The octave [2^k, 2^(k+1)) of a check.
const report::octave& octave_at(const check& c, int k) {
  for (const auto& o : c.octaves) {
    if (o.lo == (std::int64_t{1} << k)) return o;
  }
  throw std::runtime_error("no octave 2^" + std::to_string(k) + " in " + c.id);
}

class SweepModel : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::uint64_t seed = test::test_seed(1);
    r_ = new results(sweep::run(llama2(), small((std::int64_t{1} << 20) - 1, seed)));
  }
  static void TearDownTestSuite() { delete r_; }
  static results* r_;
};
results* SweepModel::r_ = nullptr;

TEST_F(SweepModel, EveryCheckPassesItsBound) {
  ASSERT_EQ(r_->checks.size(), 15u);  // 5 strategies × 3 dtypes
  for (const auto& c : r_->checks) {
    EXPECT_TRUE(c.pass) << c.id << " max rho " << c.max_rho;
    EXPECT_LE(c.max_rho, 1.0) << c.id;
    EXPECT_GT(c.values, 0u) << c.id;
  }
}

TEST_F(SweepModel, HfFp32GrowsLinearlyWithPosition) {
  // A correct fp32 pipeline errs by ≈ p·u (phase error of the fp32 angle): per octave the max
  // error doubles, and max_abs / (p·u) stays between the frequency-rounding floor and the
  // analytic bound's slope (k_f + 1)·θ_0 = 2.17 (pair 0, θ_0 = 1).
  const check& c = find(*r_, "llama2/hf/fp32");
  for (int k = 12; k < 20; ++k) {
    const auto& o = octave_at(c, k);
    const double p = static_cast<double>(o.hi - 1);
    const double ratio = o.max_abs / (p * kU32);
    EXPECT_GT(ratio, 0.25) << "octave 2^" << k << " max_abs " << o.max_abs;
    EXPECT_LT(ratio, 2.2) << "octave 2^" << k << " max_abs " << o.max_abs;
  }
  // Slope of log2(max_abs) against log2(p) over 2^12 … 2^20: linear growth is slope 1.
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  int n = 0;
  for (int k = 12; k < 20; ++k) {
    const double x = k + 1;
    const double y = std::log2(octave_at(c, k).max_abs);
    sx += x;
    sy += y;
    sxx += x * x;
    sxy += x * y;
    ++n;
  }
  const double slope = (n * sxy - sx * sy) / (n * sxx - sx * sx);
  std::cout << "hf fp32: slope of log2(max abs error) per octave = " << slope << "\n";
  EXPECT_NEAR(slope, 1.0, 0.15);
}

TEST_F(SweepModel, TableBf16SitsAtHalfUlpUntilPhaseErrorOvertakes) {
  const check& c = find(*r_, "llama2/table-bf16/fp32");
  const check& hf = find(*r_, "llama2/hf/fp32");
  // Short positions: the bf16 store dominates: between ½ and 1 of bf16's ½ ulp below 1, plus
  // the (small) fp32 term.
  for (int k = 1; k < 12; ++k) {
    const auto& o = octave_at(c, k);
    const double fp32_term = 2.2 * static_cast<double>(o.hi) * kU32;
    EXPECT_GT(o.max_abs, 0.9 * kHalfUlpBf16BelowOne) << "octave 2^" << k;
    EXPECT_LT(o.max_abs, 1.01 * kHalfUlpBf16BelowOne + fp32_term) << "octave 2^" << k;
  }
  // Long positions: the fp32 phase error overtakes it: many ½ ulps, and the same as hf fp32
  // up to one bf16 rounding.
  const auto& top = octave_at(c, 19);
  EXPECT_GT(top.max_abs, 8 * kHalfUlpBf16BelowOne);
  EXPECT_NEAR(top.max_abs, octave_at(hf, 19).max_abs, 2 * kHalfUlpBf16BelowOne);
}

TEST_F(SweepModel, AccurateStaysWithinOneUlpAtEveryPosition) {
  for (const char* dt : {"fp32", "fp16", "bf16"}) {
    const check& c = find(*r_, std::string("llama2/accurate/") + dt);
    EXPECT_LE(c.max_ulp_error, 1.0) << c.id;
    EXPECT_EQ(c.pct_faithful, 100.0) << c.id;
    EXPECT_EQ(c.max_rho <= 1.0, true);
  }
  // Flat: the fp32 error never exceeds 1 ulp of values below 2 (2^−23), at any octave.
  const check& c = find(*r_, "llama2/accurate/fp32");
  for (const auto& o : c.octaves) EXPECT_LE(o.max_abs, 0x1p-23) << "octave from " << o.lo;
  EXPECT_LE(c.octaves.back().max_abs, 0x1p-24);  // no value reaches 1 there: ≤ ½ ulp·2
}

TEST_F(SweepModel, CountsAndHistogramsAddUp) {
  for (const auto& c : r_->checks) {
    std::uint64_t sum = 0;
    for (auto n : c.ulp_histogram) sum += n;
    EXPECT_EQ(sum, c.values) << c.id;
    std::uint64_t per_oct = 0;
    for (const auto& o : c.octaves) {
      per_oct += o.values;
      EXPECT_LE(o.p99_abs, o.max_abs * (1 + 1.0 / 64)) << c.id;
      EXPECT_EQ(o.values, o.positions * 128) << c.id;  // 64 pairs × (cos, sin)
    }
    EXPECT_EQ(per_oct, c.values) << c.id;
    EXPECT_EQ(c.octaves.back().hi, std::int64_t{1} << 20);
  }
  // The worst case is reported with its hex value and ρ.
  const check& c = find(*r_, "llama2/hf/fp32");
  EXPECT_EQ(c.worst.rho, c.max_rho);
  EXPECT_NE(c.worst.got_hex.find("0x"), std::string::npos);
  // With the steps of the fp32 pipeline: frequency, angle, attention factor.
  ASSERT_EQ(c.worst.intermediates.size(), 3u);
  EXPECT_EQ(c.worst.intermediates[0].name, "inv_freq");
  EXPECT_EQ(c.worst.intermediates[1].name, "angle");
}

TEST_F(SweepModel, InvarianceDriftOfHfGrowsAccurateDoesNot) {
  const report::invariance_series* hf = nullptr;
  const report::invariance_series* acc = nullptr;
  for (const auto& s : r_->invariance) {
    if (s.dtype != "fp32") continue;
    if (s.strategy == "hf") hf = &s;
    if (s.strategy == "accurate") acc = &s;
  }
  ASSERT_TRUE(hf && acc);
  auto max_in = [](const report::invariance_series& s, std::int64_t lo, std::int64_t hi) {
    double m = 0;
    for (std::size_t k = 0; k < s.position.size(); ++k) {
      if (s.position[k] >= lo && s.position[k] < hi) m = std::max(m, s.max_drift[k]);
    }
    return m;
  };
  // The fp32 phase error p·u rotates both vectors: the score drifts ≈ p·u (|q|, |k| ≤ 1).
  const double hf_top = max_in(*hf, 1 << 19, 1 << 20);
  EXPECT_GT(hf_top, 100 * max_in(*hf, 1, 16));
  EXPECT_LT(hf_top, 4.0 * (1 << 20) * kU32);
  // accurate: rotation roundings only (a few fp32 ulps), independent of position.
  EXPECT_LT(max_in(*acc, 1 << 19, 1 << 20), 64 * kU32);
}

TEST(SweepPositions, DenseThenOctavesDeterministic) {
  sweep::options o;
  o.max_position = (std::int64_t{1} << 16) - 1;  // the largest position, included
  o.seed = 7;
  const auto p = sweep::sample_positions(o);
  ASSERT_TRUE(std::is_sorted(p.begin(), p.end()));
  EXPECT_EQ(std::adjacent_find(p.begin(), p.end()), p.end());
  for (std::int64_t i = 0; i < 4096; ++i) EXPECT_EQ(p[std::size_t(i)], i);
  const std::set<std::int64_t> s(p.begin(), p.end());
  for (int k = 12; k < 16; ++k) {
    const std::int64_t lo = std::int64_t{1} << k;
    EXPECT_TRUE(s.count(lo) && s.count(lo + 1) && s.count(2 * lo - 1)) << k;
    const auto n = std::count_if(p.begin(), p.end(), [&](auto x) { return x >= lo && x < 2 * lo; });
    EXPECT_GE(n, 4 + o.samples_per_octave / 2) << k;  // collisions are rare at this size
  }
  EXPECT_EQ(p.back(), o.max_position);
  EXPECT_EQ(sweep::sample_positions(o), p);
  o.seed = 8;
  EXPECT_NE(sweep::sample_positions(o), p);
  o.exhaustive = true;
  EXPECT_EQ(sweep::sample_positions(o).size(), std::size_t(1) << 16);
}

/// The first line where two texts differ (empty when equal): a readable failure message.
std::string first_difference(const std::string& a, const std::string& b) {
  std::istringstream ia(a), ib(b);
  std::string la, lb;
  for (int n = 1;; ++n) {
    const bool ea = !std::getline(ia, la);
    const bool eb = !std::getline(ib, lb);
    if (ea && eb) return "";
    if (ea != eb || la != lb) return "line " + std::to_string(n) + ": '" + la + "' vs '" + lb + "'";
  }
}

results strip(results r) {
  // Provenance counts the work each run did (and shards, merge time): compare the results.
  r.prov = {};
  return r;
}

std::vector<sweep::suite_entry> mixed() {
  return {{"llama2", spec::parse_spec("rope:head_dim=32,rope_theta=10000"), ""},
          {"yarn",
           spec::parse_spec("rope:head_dim=32,rope_type=yarn,factor=4,"
                            "original_max_position_embeddings=2048"),
           ""},
          {"sin", spec::parse_spec("sinusoidal:d_model=32"), ""},
          {"alibi", spec::parse_spec("alibi:num_heads=6"), ""},
          {"t5", spec::parse_spec("t5:num_buckets=32,max_distance=128"), ""}};
}

TEST(SweepDeterminism, SameSeedSameJsonAnyThreadCount) {
  const std::uint64_t seed = test::test_seed(3);
  auto o = small((std::int64_t{1} << 15) - 1, seed);
  const results a = sweep::run(mixed(), o);
  o.threads = 1;
  const results b = sweep::run(mixed(), o);
  // generated_at is the caller's (empty here).
  EXPECT_EQ(first_difference(report::to_json(a), report::to_json(b)), "");
  for (const auto& c : a.checks) EXPECT_TRUE(c.pass) << c.id << " rho " << c.max_rho;
  EXPECT_EQ(a.checks.size(), 15u + 15u + 12u + 12u + 4u);
  // Plots d and e for every RoPE spec (llama2 and yarn).
  EXPECT_EQ(a.wavelengths.size(), 2u);
}

TEST(SweepShards, FourShardsMergedEqualTheUnshardedRun) {
  const std::uint64_t seed = test::test_seed(5);
  const auto o = small((std::int64_t{1} << 15) - 1, seed);
  const results whole = sweep::run(mixed(), o);
  std::vector<results> shards;
  std::size_t checks = 0;
  for (int i = 0; i < 4; ++i) {
    auto os = o;
    os.shard_index = i;
    os.shard_count = 4;
    shards.push_back(sweep::run(mixed(), os));
    checks += shards.back().checks.size();
    EXPECT_LT(shards.back().checks.size(), whole.checks.size());
  }
  EXPECT_EQ(checks, whole.checks.size());
  const results merged = report::merge(shards);
  EXPECT_EQ(merged.prov.merged_shards, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(first_difference(report::to_json(strip(merged)), report::to_json(strip(whole))), "");
  // A missing or repeated shard is refused.
  EXPECT_THROW(report::merge({shards[0], shards[1], shards[2]}), error);
  EXPECT_THROW(report::merge({shards[0], shards[1], shards[2], shards[2]}), error);
}

TEST(SweepUsage, BadOptionsAndFamiliesThrow) {
  auto o = small(0, 1);  // the largest position must be at least 1
  EXPECT_THROW(sweep::run(llama2(), o), error);
  o = small(1024, 1);
  o.shard_index = 2;
  o.shard_count = 2;
  EXPECT_THROW(sweep::run(llama2(), o), error);
  EXPECT_THROW(
      sweep::run({{"shaw", spec::parse_spec("shaw:max_relative_position=4"), ""}}, small(1024, 1)),
      error);
}

TEST(SweepSuite, DefaultSuiteHoldsTheIssuesConfigurations) {
  const auto s = sweep::default_suite();
  std::map<std::string, const spec::encoding*> by;
  for (const auto& e : s) by[e.name] = &e.encoding;
  ASSERT_EQ(s.size(), 12u);
  EXPECT_EQ(std::get<spec::rope>(*by.at("qwen2.5-vl-mrope")).mrope_section,
            (std::vector<std::int64_t>{16, 24, 24}));
  const auto& phi = std::get<spec::rope>(*by.at("phi3-longrope"));
  EXPECT_EQ(phi.head_dim, 96);
  EXPECT_EQ(phi.short_factor.size(), 48u);
  EXPECT_EQ(phi.long_factor.size(), 48u);
  const auto& ds = std::get<spec::rope>(*by.at("deepseek-v3-rope"));
  EXPECT_EQ(ds.layout, spec::rope_layout::interleaved);
  EXPECT_EQ(ds.factor, 40.0);
  EXPECT_FALSE(std::get<spec::rope>(*by.at("gpt-oss")).truncate);
  EXPECT_EQ(std::get<spec::alibi>(*by.at("alibi-12")).num_heads, 12);
  EXPECT_TRUE(std::get<spec::t5>(*by.at("t5-32-128")).bidirectional);
}

}  // namespace
}  // namespace pev
