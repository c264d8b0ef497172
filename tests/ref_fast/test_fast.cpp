// The fast exact reference against the MPFR path, bit for bit: every position below 2^12 (2^16 with
// PEV_FAST_ALL_POSITIONS=1, N with PEV_FAST_POSITIONS=N: `make test-sanitize` uses 2^10), random
// positions up to 2^31, extreme and negative positions, exact cases, the fallback path, both
// arithmetic variants (hardware FMA and Dekker), and every target format (fp64, fp32, fp16, bf16).

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <thread>
#include <vector>

#include "fast_test_util.h"

namespace pev {
namespace {

using ref::fast_rope_reference;
using ref::fast_sinusoidal_reference;
using ref::fast_stats;
using test::tally;

// Restores the default arithmetic on scope exit.
struct portable_scope {
  explicit portable_scope(bool on) { ref::fast_detail::force_portable_arithmetic(on); }
  ~portable_scope() { ref::fast_detail::force_portable_arithmetic(false); }
};

std::vector<bool> arithmetic_modes() {
  // Both variants where the CPU has FMA; the portable one only otherwise.
  if (ref::fast_detail::uses_fma()) return {false, true};
  return {true};
}

std::int64_t position_limit() {
  const std::int64_t fallback = test::env_int("PEV_FAST_ALL_POSITIONS", 0) != 0
                                    ? std::int64_t{1} << 16
                                    : std::int64_t{1} << 12;
  return std::max<std::int64_t>(1, test::env_int("PEV_FAST_POSITIONS", fallback));
}

// Compares fast.table<T> for `positions` (every target, both arithmetic modes) with the MPFR rows.
void compare_rope_rows(const fast_rope_reference& fast, const std::vector<std::int64_t>& positions,
                       tally& t, fast_stats& st, const std::string& label) {
  const std::size_t n = static_cast<std::size_t>(fast.pairs());
  std::vector<std::vector<ref::cos_sin>> exact;
  exact.reserve(positions.size());
  for (std::int64_t p : positions) exact.push_back(fast.reference().row(p));
  for (bool portable : arithmetic_modes()) {
    const portable_scope mode(portable);
    test::for_each_type([&]<class T>() {
      std::vector<T> c(positions.size() * n), s(positions.size() * n);
      fast.table<T>(positions, c, s, &st);
      for (std::size_t r = 0; r < positions.size(); ++r) {
        for (std::size_t i = 0; i < n; ++i) {
          auto where = [&, r, i](const char* what) {
            return [&, r, i, what] {
              return std::string(what) + " " + label + " p=" + std::to_string(positions[r]) +
                     " pair=" + std::to_string(i) + (portable ? " (portable)" : " (fma)");
            };
          };
          t.check(c[r * n + i], round_to<T>(exact[r][i].cos), where("cos"));
          t.check(s[r * n + i], round_to<T>(exact[r][i].sin), where("sin"));
        }
      }
    });
  }
}

fast_rope_reference make_rope(const test::rope_case& c) {
  return fast_rope_reference(test::rope_spec(c.spec), c.seq_len);
}

// Every finite encoding's value, the midpoints to its neighbours, and the doubles next to those
// midpoints (and to the overflow threshold) round as pev::round_to does.
template <class T>
void check_round_double(tally& t) {
  using tr = scalar_traits<T>;
  auto want = [](double v) { return round_to<T>(to_real(v)); };
  auto check = [&](double v) {
    t.check(ref::fast_detail::round_double<T>(v), want(v), "round_double " + std::to_string(v));
  };
  for (std::uint32_t b = 0; b < 0x10000; ++b) {
    const auto bits = static_cast<typename tr::bits_type>(b);
    if ((bits & tr::exponent_mask) == tr::exponent_mask) continue;  // Inf, NaN
    const double v = tr::to_double(tr::from_bits(bits));
    const bool top = (bits & ~tr::sign_mask) == tr::max_finite_bits;
    // The next encoding away from zero (for the largest finite, the overflow threshold's double).
    const double next =
        top ? v + std::copysign(std::ldexp(1.0, tr::max_exponent - tr::precision + 1), v)
            : tr::to_double(tr::from_bits(static_cast<typename tr::bits_type>(bits + 1)));
    const double mid = v + (next - v) / 2;  // exact in double
    for (double x : {v, mid, std::nextafter(mid, 0.0), std::nextafter(mid, 2 * mid)}) check(x);
  }
  for (double x : {1e300, -1e300, 1e-300, -1e-300, 0.0, -0.0}) check(x);
}

TEST(RefFastRounding, RoundDoubleMatchesMpfrAtEveryMidpoint) {
  tally t;
  check_round_double<half>(t);
  check_round_double<bfloat16>(t);
  std::mt19937_64 rng(test::test_seed(5));
  for (int k = 0; k < 200000; ++k) {
    const double v = std::bit_cast<double>(rng());
    if (std::isnan(v)) continue;
    t.check(ref::fast_detail::round_double<float>(v), round_to<float>(to_real(v)), "float");
    t.check(ref::fast_detail::round_double<half>(v), round_to<half>(to_real(v)), "half");
    t.check(ref::fast_detail::round_double<bfloat16>(v), round_to<bfloat16>(to_real(v)), "bf16");
  }
  std::cout << "round_double: " << t.compared << " values compared, " << t.mismatches
            << " mismatches\n";
  EXPECT_EQ(t.mismatches, 0u) << t.report();
}

TEST(RefFastRope, InvFreqAndAttentionFactorMatchMpfr) {
  for (const auto& c : test::rope_cases()) {
    const auto fast = make_rope(c);
    const auto& theta = fast.reference().inv_freq();
    tally t;
    test::for_each_type([&]<class T>() {
      const auto& got = fast.inv_freq<T>();
      ASSERT_EQ(got.size(), theta.size());
      for (std::size_t i = 0; i < theta.size(); ++i) {
        t.check(got[i], round_to<T>(theta[i]), c.spec + " pair " + std::to_string(i));
      }
    });
    EXPECT_EQ(t.mismatches, 0u) << t.report();
  }
}

TEST(RefFastRope, EveryPositionBelowLimitMatchesMpfr) {
  const std::int64_t limit = position_limit();
  tally total;
  fast_stats total_st;
  for (const auto& c : test::rope_cases()) {
    const auto fast = make_rope(c);
    tally t;
    fast_stats st;
    for (std::int64_t p0 = 0; p0 < limit; p0 += 512) {
      std::vector<std::int64_t> positions;
      for (std::int64_t p = p0; p < std::min(limit, p0 + 512); ++p) positions.push_back(p);
      compare_rope_rows(fast, positions, t, st, c.spec);
    }
    test::print_summary("rope:" + c.spec + ", p < " + std::to_string(limit), t, st);
    EXPECT_EQ(t.mismatches, 0u) << t.report();
    total += t;
    total_st += st;
  }
  test::print_summary("all rope specs, every p < " + std::to_string(limit), total, total_st);
}

TEST(RefFastRope, RandomPositionsUpTo2p31MatchMpfr) {
  std::mt19937_64 rng(test::test_seed(20240611));
  const std::int64_t rows = test::env_int("PEV_FAST_RANDOM_ROWS", 64);
  tally total;
  fast_stats total_st;
  for (const auto& c : test::rope_cases()) {
    const auto fast = make_rope(c);
    std::vector<std::int64_t> positions;
    for (std::int64_t k = 0; k < rows; ++k) {
      // Half uniform in [0, 2^31), half log-uniform (every octave).
      const std::int64_t p = k % 2 == 0 ? static_cast<std::int64_t>(rng() >> 33)
                                        : static_cast<std::int64_t>(std::ldexp(
                                              std::uniform_real_distribution<double>(0, 1)(rng),
                                              static_cast<int>(rng() % 32)));
      positions.push_back(p);
    }
    tally t;
    fast_stats st;
    compare_rope_rows(fast, positions, t, st, c.spec);
    EXPECT_EQ(t.mismatches, 0u) << t.report();
    total += t;
    total_st += st;
  }
  test::print_summary("random positions < 2^31", total, total_st);
}

TEST(RefFastRope, ExtremeAndNegativePositionsMatchMpfr) {
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
  const std::vector<std::int64_t> positions = {0,
                                               1,
                                               -1,
                                               -12345,
                                               65504,
                                               65520,
                                               (std::int64_t{1} << 24) + 1,
                                               (std::int64_t{1} << 31) - 1,
                                               (std::int64_t{1} << 50) + 3,
                                               (std::int64_t{1} << 53) - 1,
                                               std::int64_t{1} << 53,
                                               (std::int64_t{1} << 53) + 1,
                                               -((std::int64_t{1} << 53) + 1),
                                               (std::int64_t{1} << 62) + 12345,
                                               kMax,
                                               kMax - 1,
                                               kMin,
                                               kMin + 1};
  tally total;
  fast_stats st;
  for (const auto& c : test::rope_cases()) {
    compare_rope_rows(make_rope(c), positions, total, st, c.spec);
  }
  test::print_summary("extreme positions", total, st);
  EXPECT_EQ(total.mismatches, 0u) << total.report();
}

TEST(RefFastRope, AnglesMatchMpfr) {
  std::mt19937_64 rng(test::test_seed(7));
  tally t;
  fast_stats st;
  for (const auto& c : test::rope_cases()) {
    const auto fast = make_rope(c);
    const std::size_t n = static_cast<std::size_t>(fast.pairs());
    std::vector<std::int64_t> positions = {0,
                                           1,
                                           -3,
                                           4095,
                                           std::numeric_limits<std::int64_t>::max(),
                                           std::numeric_limits<std::int64_t>::min()};
    for (int k = 0; k < 24; ++k) positions.push_back(static_cast<std::int64_t>(rng() >> 33));
    for (bool portable : arithmetic_modes()) {
      const portable_scope mode(portable);
      test::for_each_type([&]<class T>() {
        std::vector<T> out(positions.size() * n);
        fast.angles<T>(positions, out, &st);
        for (std::size_t r = 0; r < positions.size(); ++r) {
          for (std::size_t i = 0; i < n; ++i) {
            const auto ii = static_cast<std::int64_t>(i);
            const T want = round_to<T>(fast.reference().angle(positions[r], ii));
            const std::string where =
                c.spec + " p=" + std::to_string(positions[r]) + " pair=" + std::to_string(i);
            t.check(out[r * n + i], want, "angles " + where);
            t.check(fast.angle<T>(positions[r], ii, &st), want, "angle " + where);
          }
        }
      });
    }
  }
  test::print_summary("angles", t, st);
  EXPECT_EQ(t.mismatches, 0u) << t.report();
}

// Random head vectors of exact float values (some exact zeros, some half-precision values).
std::vector<double> random_vector(std::mt19937_64& rng, std::size_t n) {
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<double> x(n);
  for (auto& v : x) {
    switch (rng() % 8) {
      case 0:
        v = 0.0;
        break;
      case 1:
        v = static_cast<float>(half(normal(rng)));
        break;
      case 2:
        v = std::ldexp(static_cast<double>(normal(rng)), static_cast<int>(rng() % 40) - 20);
        v = static_cast<float>(v);
        break;
      default:
        v = normal(rng);
    }
  }
  return x;
}

TEST(RefFastRope, RotateMatchesMpfr) {
  std::mt19937_64 rng(test::test_seed(99));
  tally t;
  fast_stats st;
  for (const auto& c : test::rope_cases()) {
    const auto fast = make_rope(c);
    const std::size_t hd = static_cast<std::size_t>(fast.spec().head_dim);
    for (int k = 0; k < 12; ++k) {
      const std::int64_t p = k == 0 ? 0 : static_cast<std::int64_t>(rng() >> (33 + rng() % 24));
      auto x = random_vector(rng, hd);
      if (k == 1) std::fill(x.begin(), x.end(), 0.0);  // signed zeros throughout
      if (k == 2) {
        for (std::size_t j = 0; j < hd; j += 2) x[j] = -0.0;
      }
      std::vector<real> xr;
      for (double v : x) xr.push_back(to_real(v));
      const auto exact = fast.reference().rotate(p, xr);
      for (bool portable : arithmetic_modes()) {
        const portable_scope mode(portable);
        test::for_each_type([&]<class T>() {
          std::vector<T> out(hd), both(hd);
          std::vector<double> dbl(hd);
          fast.rotate<T>(p, x, out, &st);
          fast.rotate_with_double<T>(p, x, both, dbl, &st);
          for (std::size_t j = 0; j < hd; ++j) {
            const std::string at = c.spec + " p=" + std::to_string(p) + " j=" + std::to_string(j);
            t.check(out[j], round_to<T>(exact[j]), at);
            t.check(both[j], round_to<T>(exact[j]), at + " (with double)");
            t.check(dbl[j], round_to<double>(exact[j]), at + " (the double)");
          }
        });
      }
    }
  }
  test::print_summary("rotate", t, st);
  EXPECT_EQ(t.mismatches, 0u) << t.report();
}

// rotate_with_double's T values where the double rotation lands on a tie of T and the exact value
// does not (docs/numerics.md §4.4): at p = 0 the rotation is x·m, and with YaRN's irrational
// attention factor m, x = RN_double(M/m) for a midpoint M of T gives RN_double(x·m) = M about
// half the time while x·m ≠ M — RN_T of that double would then break a tie that the exact value
// does not have. Every value must still be RN_T of the exact one, and some must have landed.
TEST(RefFastRope, RotateWithDoubleOnTiesOfT) {
  const fast_rope_reference fast(
      test::rope_spec("head_dim=8,rope_type=yarn,factor=4,original_max_position_embeddings=4096"));
  const real m = fast.reference().attention_factor();
  std::mt19937_64 rng(test::test_seed(31));
  tally t;
  fast_stats st;
  test::for_each_type([&]<class T>() {
    if constexpr (!std::is_same_v<T, double>) {
      using tr = scalar_traits<T>;
      std::size_t landed = 0;
      for (int k = 0; k < 500; ++k) {
        std::vector<double> x(8), mids(8);
        for (std::size_t j = 0; j < x.size(); ++j) {
          // A midpoint of two values of T in [1, 2), and x with x·m just off it.
          const auto b = static_cast<typename tr::bits_type>(
              tr::to_bits(T(1.0f)) + rng() % (typename tr::bits_type{1} << tr::mantissa_bits));
          const double a = tr::to_double(tr::from_bits(b));
          const double next =
              tr::to_double(tr::from_bits(static_cast<typename tr::bits_type>(b + 1)));
          mids[j] = a + (next - a) / 2;
          x[j] = (to_real(mids[j]) / m).template convert_to<double>();
        }
        std::vector<T> out(x.size());
        std::vector<double> dbl(x.size());
        fast.rotate_with_double<T>(0, x, out, dbl, &st);
        std::vector<real> xr;
        for (double v : x) xr.push_back(to_real(v));
        const auto exact = fast.reference().rotate(0, xr);
        for (std::size_t j = 0; j < x.size(); ++j) {
          landed += dbl[j] == mids[j] ? 1 : 0;
          t.check(out[j], round_to<T>(exact[j]),
                  std::string(tr::name) + " x=" + std::to_string(x[j]));
        }
      }
      std::cout << tr::name << ": " << landed << " of 4000 double rotations on a tie\n";
      EXPECT_GT(landed, 100u) << tr::name;
    }
  });
  EXPECT_EQ(t.mismatches, 0u) << t.report();
}

TEST(RefFastRope, CopiesOnThreadsGiveOneThreadsValues) {
  // One copy per thread (certify's table comparison), fallbacks on every thread at once (under
  // the process-wide lock): each thread's values and counts equal one thread's. rope_theta
  // 1e300: pairs 1–3 fall back at every position p ≠ 0 (FallbackPathIsExact). (The lock itself
  // is not observable here: every thread sets the same precision.)
  const fast_rope_reference fast(test::rope_spec("head_dim=8,rope_theta=1e300"));
  std::vector<std::int64_t> positions(1500);
  for (std::size_t k = 0; k < positions.size(); ++k)
    positions[k] = static_cast<std::int64_t>(k * 7919);
  const std::size_t n = positions.size() * 4;
  auto run = [&](const fast_rope_reference& f, std::vector<float>& c, std::vector<float>& s,
                 std::vector<double>& cv, std::vector<double>& sv, fast_stats& st) {
    c.resize(n);
    s.resize(n);
    cv.resize(n);
    sv.resize(n);
    f.table_values<float>(positions, c, s, cv, sv, &st);
  };
  std::vector<float> c1, s1;
  std::vector<double> cv1, sv1;
  fast_stats st1;
  run(fast, c1, s1, cv1, sv1, st1);
  EXPECT_GT(st1.fallbacks, positions.size());
  constexpr int kThreads = 4;
  std::vector<fast_rope_reference> copies(kThreads, fast);
  std::vector<std::vector<float>> c(kThreads), s(kThreads);
  std::vector<std::vector<double>> cv(kThreads), sv(kThreads);
  std::vector<fast_stats> st(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] { run(copies[t], c[t], s[t], cv[t], sv[t], st[t]); });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_TRUE(std::memcmp(c[t].data(), c1.data(), n * sizeof(float)) == 0) << t;
    EXPECT_TRUE(std::memcmp(s[t].data(), s1.data(), n * sizeof(float)) == 0) << t;
    EXPECT_TRUE(std::memcmp(cv[t].data(), cv1.data(), n * sizeof(double)) == 0) << t;
    EXPECT_TRUE(std::memcmp(sv[t].data(), sv1.data(), n * sizeof(double)) == 0) << t;
    EXPECT_EQ(st[t].fallbacks, st1.fallbacks) << t;
    EXPECT_EQ(st[t].mpfr_rows, st1.mpfr_rows) << t;
  }
}

TEST(RefFastRope, FallbackPathIsExact) {
  // rope_theta 1e300, head_dim 8: θ = 1, 1e-75, 1e-150, 1e-225. θ_3 is outside the fast path's
  // range (every value of pair 3 comes from MPFR), and sin(p·θ) of pairs 1–2 is too small for the
  // absolute error bound to decide (they fall back too); cos of pairs 0–2 and sin of pair 0 do not.
  const fast_rope_reference fast(test::rope_spec("head_dim=8,rope_theta=1e300"));
  const std::vector<std::int64_t> positions = {0, 1, 2, 1000, -7, 123456789};
  tally t;
  fast_stats st;
  compare_rope_rows(fast, positions, t, st, "rope_theta=1e300");
  EXPECT_EQ(t.mismatches, 0u) << t.report();
  // Per type and arithmetic mode: 5 positions p ≠ 0 × 4 values (sin 1–3, cos 3), and at p = 0
  // the 2 values of pair 3 (whose angle's sign only MPFR knows).
  const std::uint64_t modes = arithmetic_modes().size();
  EXPECT_EQ(st.fallbacks, (5u * 4u + 2u) * 4u * modes);
  EXPECT_GE(st.mpfr_rows, 1u);

  // Rotation inputs the fast path does not take (non-finite, huge, subnormal) fall back too.
  const fast_rope_reference plain(test::rope_spec("head_dim=8"));
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<std::vector<double>> inputs = {
      {inf, 1.0, 0.5, -2.0, 1.0, 1.0, 1.0, 1.0},
      {std::numeric_limits<double>::quiet_NaN(), 1.0, 0.5, -2.0, 1.0, 1.0, 1.0, 1.0},
      {1e300, -1e300, 0.5, 70000.0, 1.0, 1.0, 1.0, 1.0},
      {0x1p-1070, 1.0, 0.5, -2.0, 1.0, 1.0, 1.0, 1.0}};
  fast_stats rst;
  tally rt;
  for (const auto& x : inputs) {
    std::vector<real> xr;
    for (double v : x) xr.push_back(to_real(v));
    for (std::int64_t p : {std::int64_t{0}, std::int64_t{77}}) {
      const auto exact = plain.reference().rotate(p, xr);
      test::for_each_type([&]<class T>() {
        std::vector<T> out(x.size());
        plain.rotate<T>(p, x, out, &rst);
        for (std::size_t j = 0; j < x.size(); ++j) {
          rt.check(out[j], round_to<T>(exact[j]), "p=" + std::to_string(p));
        }
      });
    }
  }
  test::print_summary("rotate fallbacks", rt, rst);
  EXPECT_EQ(rt.mismatches, 0u) << rt.report();
  EXPECT_GT(rst.fallbacks, 0u);
}

TEST(RefFastRope, ExactZeroAnglesAndZeroFrequencies) {
  // proportional: pairs ≥ 8 have θ = 0 exactly: cos = m, sin = +0 (−0 for negative positions).
  const fast_rope_reference fast(
      test::rope_spec("head_dim=64,rope_type=proportional,partial_rotary_factor=0.5,factor=2"));
  const std::vector<std::int64_t> positions = {0, 5, -5};
  std::vector<float> c(3 * 32), s(3 * 32);
  fast_stats st;
  fast.table<float>(positions, c, s, &st);
  EXPECT_EQ(st.fallbacks, 0u);
  EXPECT_EQ(c[1 * 32 + 20], 1.0f);
  EXPECT_FALSE(std::signbit(s[1 * 32 + 20]));
  EXPECT_EQ(s[2 * 32 + 20], 0.0f);
  EXPECT_TRUE(std::signbit(s[2 * 32 + 20]));
  EXPECT_FALSE(std::signbit(s[0]));
  tally t;
  compare_rope_rows(fast, positions, t, st, "proportional");
  EXPECT_EQ(t.mismatches, 0u) << t.report();
}

TEST(RefFastRope, TableValuesAreTheTableAndCloseToExact) {
  // table_values gives table()'s rounded values, and doubles within 2^−48·m of the exact ones
  // (the evaluation bound ≈ 2^−50·m plus the rounding of hi + lo), on every case of the suite,
  // at random positions up to 2^31 and the exactly handled p = 0.
  std::mt19937_64 rng(test::test_seed(77));
  double worst = 0;
  for (const auto& c : test::rope_cases()) {
    const auto fast = make_rope(c);
    std::vector<std::int64_t> positions = {0, 1};
    for (int k = 0; k < 16; ++k) positions.push_back(static_cast<std::int64_t>(rng() >> 33));
    const std::size_t n = positions.size() * static_cast<std::size_t>(fast.pairs());
    std::vector<float> c1(n), s1(n), c2(n), s2(n);
    std::vector<double> cv(n), sv(n);
    fast.table<float>(positions, c1, s1);
    fast.table_values<float>(positions, c2, s2, cv, sv);
    ASSERT_EQ(0, std::memcmp(c1.data(), c2.data(), n * sizeof(float))) << c.spec;
    ASSERT_EQ(0, std::memcmp(s1.data(), s2.data(), n * sizeof(float))) << c.spec;
    const double m = std::fabs(fast.reference().attention_factor().convert_to<double>());
    for (std::size_t r = 0; r < positions.size(); ++r) {
      const auto row = fast.reference().row(positions[r]);
      for (std::size_t i = 0; i < row.size(); ++i) {
        const std::size_t k = r * row.size() + i;
        const double ec = std::fabs(cv[k] - row[i].cos.convert_to<double>());
        const double es = std::fabs(sv[k] - row[i].sin.convert_to<double>());
        worst = std::max({worst, ec / m, es / m});
        ASSERT_LE(ec, 0x1p-48 * m) << c.spec << " p=" << positions[r] << " i=" << i;
        ASSERT_LE(es, 0x1p-48 * m) << c.spec << " p=" << positions[r] << " i=" << i;
      }
    }
  }
  std::cout << "table_values: worst |value − exact|/m = 2^" << std::log2(worst) << "\n";
}

// Restores the vector rows on scope exit.
struct scalar_rows_scope {
  explicit scalar_rows_scope(bool on) { ref::fast_detail::force_scalar_rows(on); }
  ~scalar_rows_scope() { ref::fast_detail::force_scalar_rows(false); }
};

TEST(RefFastRope, VectorRowsEqualScalarRows) {
  // The double stage on vectors decides exactly what the per-element FMA code decides, with the
  // same values, evaluated doubles and statistics (docs/performance.md): every case of the suite,
  // every target, p < 2048, random p < 2^31 and extreme ones (beyond the short reduction).
  if (!ref::fast_detail::uses_vector_rows()) GTEST_SKIP() << "no AVX2+FMA: no vector rows";
  const std::uint64_t seed = test::test_seed(4242);
  std::mt19937_64 rng(seed);
  std::vector<std::int64_t> positions;
  for (std::int64_t p = -8; p < 2048; ++p) positions.push_back(p);
  for (int k = 0; k < 256; ++k) positions.push_back(static_cast<std::int64_t>(rng() >> 33));
  for (std::int64_t p : {std::int64_t{1} << 40, (std::int64_t{1} << 52) + 1,
                         (std::int64_t{1} << 53) - 1, -(std::int64_t{1} << 45) - 7}) {
    positions.push_back(p);
  }
  for (const auto& c : test::rope_cases()) {
    const auto fast = make_rope(c);
    const std::size_t n = positions.size() * static_cast<std::size_t>(fast.pairs());
    test::for_each_type([&]<class T>() {
      std::vector<T> c1(n), s1(n), c2(n), s2(n);
      std::vector<double> cv1(n), sv1(n), cv2(n), sv2(n);
      fast_stats st1, st2;
      fast.table_values<T>(positions, c1, s1, cv1, sv1, &st1);
      {
        const scalar_rows_scope scalar(true);
        fast.table_values<T>(positions, c2, s2, cv2, sv2, &st2);
      }
      ASSERT_EQ(0, std::memcmp(c1.data(), c2.data(), n * sizeof(T))) << c.spec;
      ASSERT_EQ(0, std::memcmp(s1.data(), s2.data(), n * sizeof(T))) << c.spec;
      ASSERT_EQ(0, std::memcmp(cv1.data(), cv2.data(), n * sizeof(double))) << c.spec;
      ASSERT_EQ(0, std::memcmp(sv1.data(), sv2.data(), n * sizeof(double))) << c.spec;
      EXPECT_EQ(st1.values, st2.values) << c.spec;
      EXPECT_EQ(st1.refined, st2.refined) << c.spec;
      EXPECT_EQ(st1.fallbacks, st2.fallbacks) << c.spec;
      EXPECT_EQ(st1.mpfr_rows, st2.mpfr_rows) << c.spec;
    });
  }
}

TEST(RefFastRope, RejectsMismatchedSizes) {
  const fast_rope_reference fast(test::rope_spec("head_dim=8"));
  const std::vector<std::int64_t> positions = {1, 2};
  std::vector<float> c(7), s(8), x(8);
  EXPECT_THROW(fast.table<float>(positions, c, s), error);
  std::vector<double> xin(7);
  EXPECT_THROW(fast.rotate<float>(1, xin, x), error);
  EXPECT_THROW(fast.angle<float>(1, 4), error);
}

// Sinusoidal: fast.pe<T> against sinusoidal_row for `positions`.
void compare_pe(const fast_sinusoidal_reference& fast, const std::vector<std::int64_t>& positions,
                tally& t, fast_stats& st, const std::string& label) {
  const std::size_t d = static_cast<std::size_t>(fast.d_model());
  std::vector<std::vector<real>> exact;
  for (std::int64_t p : positions) exact.push_back(ref::sinusoidal_row(fast.spec(), p));
  for (bool portable : arithmetic_modes()) {
    const portable_scope mode(portable);
    test::for_each_type([&]<class T>() {
      std::vector<T> out(positions.size() * d);
      fast.pe<T>(positions, out, &st);
      for (std::size_t r = 0; r < positions.size(); ++r) {
        for (std::size_t j = 0; j < d; ++j) {
          t.check(out[r * d + j], round_to<T>(exact[r][j]), [&, r, j] {
            return label + " p=" + std::to_string(positions[r]) + " j=" + std::to_string(j);
          });
        }
      }
    });
  }
}

TEST(RefFastSinusoidal, EveryPositionBelowLimitMatchesMpfr) {
  const std::int64_t limit = position_limit();
  tally total;
  fast_stats total_st;
  for (const auto& body : test::sinusoidal_cases()) {
    const fast_sinusoidal_reference fast(test::sinusoidal_spec(body));
    tally t;
    fast_stats st;
    for (std::int64_t p0 = 0; p0 < limit; p0 += 512) {
      std::vector<std::int64_t> positions;
      for (std::int64_t p = p0; p < std::min(limit, p0 + 512); ++p) positions.push_back(p);
      compare_pe(fast, positions, t, st, body);
    }
    test::print_summary("sinusoidal:" + body + ", p < " + std::to_string(limit), t, st);
    EXPECT_EQ(t.mismatches, 0u) << t.report();
    total += t;
    total_st += st;
  }
  test::print_summary("all sinusoidal specs", total, total_st);
}

TEST(RefFastSinusoidal, RandomAndExtremePositionsMatchMpfr) {
  std::mt19937_64 rng(test::test_seed(31337));
  tally t;
  fast_stats st;
  for (const auto& body : test::sinusoidal_cases()) {
    const fast_sinusoidal_reference fast(test::sinusoidal_spec(body));
    std::vector<std::int64_t> positions = {-1, -100000, (std::int64_t{1} << 53) + 1,
                                           std::numeric_limits<std::int64_t>::max(),
                                           std::numeric_limits<std::int64_t>::min()};
    for (int k = 0; k < 64; ++k) positions.push_back(static_cast<std::int64_t>(rng() >> 33));
    compare_pe(fast, positions, t, st, body);
  }
  test::print_summary("sinusoidal random positions", t, st);
  EXPECT_EQ(t.mismatches, 0u) << t.report();
}

}  // namespace
}  // namespace pev
