// pev::metric ulp metrics (docs/numerics.md §3.1, §3.2): ordinals and ulp distance across zero,
// ulp_T(y) with the subnormal floor, ulp error against exact values (≤ 0.5 when correctly rounded,
// exactly 0.5 at ties), the Inf scoring rule and NaN handling.

#include <gmp.h>
#include <gtest/gtest.h>
#include <mpfr.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <random>
#include <utility>
#include <vector>

#include "pev/core/real.h"
#include "pev/metric/error_model.h"
#include "pev/metric/ulp.h"
#include "pev/scalar/round.h"

namespace pev::metric {
namespace {

constexpr float kInfF = std::numeric_limits<float>::infinity();
constexpr double kInfD = std::numeric_limits<double>::infinity();
constexpr std::uint64_t kNaNDistance = std::numeric_limits<std::uint64_t>::max();

std::uint64_t test_seed() {
  static const std::uint64_t seed = [] {
    std::uint64_t s = 20240601;
    if (const char* env = std::getenv("PEV_SEED"); env != nullptr && *env != '\0') {
      s = std::strtoull(env, nullptr, 0);
    }
    std::cout << "seed: " << s << " (override with PEV_SEED)\n";
    return s;
  }();
  return seed;
}

// ±2^e as a real, exactly.
real pow2(long e, bool negative = false) {
  real r;
  mpfr_set_si_2exp(r.backend().data(), negative ? -1 : 1, e, MPFR_RNDN);
  return r;
}

real add(const real& a, const real& b) {
  real r;
  mpfr_add(r.backend().data(), a.backend().data(), b.backend().data(), MPFR_RNDN);
  return r;
}

// The real as a double if a double holds it exactly, else NaN (so EXPECT_EQ on it is an exact
// comparison of the real).
double as_double(const real& r) {
  const double d = mpfr_get_d(r.backend().data(), MPFR_RNDN);
  return mpfr_cmp_d(r.backend().data(), d) == 0 ? d : std::nan("");
}

real nan_real() {
  real r;
  mpfr_set_nan(r.backend().data());
  return r;
}

// Over every non-NaN encoding, sorting by ordinal sorts by value, equal ordinals occur only for
// ±0, and the ordinals are consecutive integers from −ord(Inf) to +ord(Inf).
template <class T>
void check_ordinal_is_monotone_and_dense() {
  using tr = scalar_traits<T>;
  std::vector<std::pair<std::int64_t, float>> rows;
  for (std::uint32_t b = 0; b <= 0xffffu; ++b) {
    const T v = T::from_bits(static_cast<std::uint16_t>(b));
    if (is_nan_bits<T>(v.bits)) continue;
    rows.emplace_back(ordinal(v), static_cast<float>(v));
  }
  std::sort(rows.begin(), rows.end());
  const auto inf_ordinal = static_cast<std::int64_t>(tr::infinity_bits);
  EXPECT_EQ(rows.front().first, -inf_ordinal);
  EXPECT_EQ(rows.back().first, inf_ordinal);
  for (std::size_t i = 1; i < rows.size(); ++i) {
    const auto step = rows[i].first - rows[i - 1].first;
    if (rows[i].first == 0 && step == 0) {
      EXPECT_EQ(rows[i].second, 0.0f);  // −0 and +0
      continue;
    }
    ASSERT_EQ(step, 1) << rows[i].second;
    ASSERT_LT(rows[i - 1].second, rows[i].second);
  }
  std::cout << tr::name << ": " << rows.size() << " non-NaN encodings ordered by ordinal\n";
}

TEST(Ulp, OrdinalIsMonotoneOverAllHalfAndBfloat16) {
  check_ordinal_is_monotone_and_dense<half>();
  check_ordinal_is_monotone_and_dense<bfloat16>();
}

TEST(Ulp, OrdinalValues) {
  EXPECT_EQ(ordinal(0.0f), 0);
  EXPECT_EQ(ordinal(-0.0f), 0);
  EXPECT_EQ(ordinal(std::numeric_limits<float>::denorm_min()), 1);
  EXPECT_EQ(ordinal(-std::numeric_limits<float>::denorm_min()), -1);
  EXPECT_EQ(ordinal(1.0f), 0x3f800000);
  EXPECT_EQ(ordinal(-kInfF), -0x7f800000);
  EXPECT_EQ(ordinal(-kInfD), -0x7ff0000000000000);
  EXPECT_EQ(ordinal(half::from_bits(0x8001)), -1);
  EXPECT_EQ(ordinal(bfloat16::from_bits(0xff80)), -0x7f80);
}

TEST(Ulp, DistanceCountsAcrossZero) {
  const float f_min = std::numeric_limits<float>::denorm_min();
  EXPECT_EQ(ulp_distance(-f_min, f_min), 2u);
  EXPECT_EQ(ulp_distance(f_min, -f_min), 2u);
  EXPECT_EQ(ulp_distance(-0.0f, 0.0f), 0u);
  EXPECT_EQ(ulp_distance(-0.0, 0.0), 0u);
  EXPECT_EQ(ulp_distance(-0.0f, f_min), 1u);
  const double d_min = std::numeric_limits<double>::denorm_min();
  EXPECT_EQ(ulp_distance(-d_min, d_min), 2u);
  EXPECT_EQ(ulp_distance(half::from_bits(0x8001), half::from_bits(0x0001)), 2u);
  EXPECT_EQ(ulp_distance(half::from_bits(0x8000), half::from_bits(0x0000)), 0u);
  EXPECT_EQ(ulp_distance(bfloat16::from_bits(0x8001), bfloat16::from_bits(0x0001)), 2u);
  EXPECT_EQ(ulp_distance(bfloat16::from_bits(0x8000), bfloat16::from_bits(0x0000)), 0u);
  // −1 to +1 in fp32: the 0x3f800000 encodings below 1 on each side.
  EXPECT_EQ(ulp_distance(-1.0f, 1.0f), 2u * 0x3f800000u);
}

TEST(Ulp, DistanceNeighboursInfinityAndExtremes) {
  EXPECT_EQ(ulp_distance(1.0f, std::nextafter(1.0f, 2.0f)), 1u);
  EXPECT_EQ(ulp_distance(1.0f, std::nextafter(1.0f, 0.0f)), 1u);
  EXPECT_EQ(ulp_distance(std::numeric_limits<float>::max(), kInfF), 1u);
  EXPECT_EQ(ulp_distance(half::from_bits(0x7bff), half::from_bits(0x7c00)), 1u);
  EXPECT_EQ(ulp_distance(bfloat16::from_bits(0x7f7f), bfloat16::from_bits(0x7f80)), 1u);
  // fp64 −Inf to +Inf is 2·0x7ff0000000000000 > INT64_MAX: must not overflow.
  EXPECT_EQ(ulp_distance(-kInfD, kInfD), 2u * 0x7ff0000000000000u);
  EXPECT_EQ(ulp_distance(kInfD, -kInfD), 2u * 0x7ff0000000000000u);
  EXPECT_EQ(ulp_distance(-std::numeric_limits<double>::max(), std::numeric_limits<double>::max()),
            2u * 0x7fefffffffffffffu);
}

TEST(Ulp, DistanceWithNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(ulp_distance(nan, nan), 0u);
  EXPECT_EQ(ulp_distance(nan, -nan), 0u);
  EXPECT_EQ(ulp_distance(nan, 1.0f), kNaNDistance);
  EXPECT_EQ(ulp_distance(kInfF, nan), kNaNDistance);
  EXPECT_EQ(ulp_distance(half::from_bits(0x7e00), half::from_bits(0x7c01)), 0u);
  EXPECT_EQ(ulp_distance(half::from_bits(0x7e00), half::from_bits(0x7c00)), kNaNDistance);
  EXPECT_EQ(ulp_distance(bfloat16::from_bits(0x7fc0), bfloat16::from_bits(0)), kNaNDistance);
  EXPECT_EQ(ulp_distance(std::nan(""), 0.0), kNaNDistance);
}

TEST(Ulp, UlpOfFollowsTheBinadeAndTheSubnormalFloor) {
  // fp32: 2^(e−24) for 2^(e−1) ≤ |y| < 2^e, at least 2^−149.
  EXPECT_EQ(as_double(ulp_of<float>(pow2(0))), 0x1p-23);
  EXPECT_EQ(as_double(ulp_of<float>(real("1.999"))), 0x1p-23);
  EXPECT_EQ(as_double(ulp_of<float>(real("-0.75"))), 0x1p-24);
  EXPECT_EQ(as_double(ulp_of<float>(pow2(-126))), 0x1p-149);  // smallest normal
  EXPECT_EQ(as_double(ulp_of<float>(pow2(-140))), 0x1p-149);  // floor
  EXPECT_EQ(as_double(ulp_of<float>(pow2(-1000))), 0x1p-149);
  EXPECT_EQ(as_double(ulp_of<float>(real(0))), 0x1p-149);
  EXPECT_EQ(as_double(ulp_of<float>(pow2(127))), 0x1p104);
  EXPECT_EQ(as_double(ulp_of<float>(pow2(200))), 0x1p177);  // beyond the format: no cap
  EXPECT_EQ(as_double(ulp_of<double>(pow2(0))), 0x1p-52);
  EXPECT_EQ(as_double(ulp_of<double>(real(0))), 0x1p-1074);
  EXPECT_EQ(as_double(ulp_of<double>(pow2(-1050))), 0x1p-1074);
  EXPECT_EQ(as_double(ulp_of<half>(pow2(0))), 0x1p-10);
  EXPECT_EQ(as_double(ulp_of<half>(real(65504))), 32.0);
  EXPECT_EQ(as_double(ulp_of<half>(real(0))), 0x1p-24);
  EXPECT_EQ(as_double(ulp_of<half>(pow2(-20, true))), 0x1p-24);
  EXPECT_EQ(as_double(ulp_of<bfloat16>(pow2(0))), 0x1p-7);
  EXPECT_EQ(as_double(ulp_of<bfloat16>(real(0))), 0x1p-133);
  EXPECT_EQ(as_double(ulp_of<bfloat16>(pow2(-130))), 0x1p-133);
  EXPECT_TRUE(mpfr_nan_p(ulp_of<float>(nan_real()).backend().data()));
}

TEST(Ulp, ErrorIsExactlyHalfAtTies) {
  // y = 1 + ½ ulp: both neighbours are ½ ulp away.
  EXPECT_EQ(as_double(ulp_error(1.0f, add(pow2(0), pow2(-24)))), 0.5);
  EXPECT_EQ(as_double(ulp_error(1.0f + 0x1p-23f, add(pow2(0), pow2(-24)))), 0.5);
  EXPECT_EQ(as_double(ulp_error(1.0, add(pow2(0), pow2(-53)))), 0.5);
  EXPECT_EQ(as_double(ulp_error(half::from_bits(0x3c00), add(pow2(0), pow2(-11)))), 0.5);
  EXPECT_EQ(as_double(ulp_error(bfloat16::from_bits(0x3f80), add(pow2(0), pow2(-8)))), 0.5);
  // Subnormal tie: half the smallest subnormal, scored against 0.
  EXPECT_EQ(as_double(ulp_error(0.0f, pow2(-150))), 0.5);
  EXPECT_EQ(as_double(ulp_error(half::from_bits(0x8000), pow2(-25, true))), 0.5);
  // Tie just below a power of two: ulp(y) is the lower binade's.
  EXPECT_EQ(as_double(ulp_error(2.0f, add(pow2(1), pow2(-24, true)))), 0.5);
  // A tie plus 2^−100: the nearer neighbour is below ½, the farther above (by 2^−77, which a
  // double would not show: compare the reals).
  const real above = add(add(pow2(0), pow2(-24)), pow2(-100));
  EXPECT_LT(mpfr_cmp_d(ulp_error(1.0f + 0x1p-23f, above).backend().data(), 0.5), 0);
  EXPECT_GT(mpfr_cmp_d(ulp_error(1.0f, above).backend().data(), 0.5), 0);
  EXPECT_EQ(as_double(ulp_error(1.0f, above) - 0.5), 0x1p-77);
}

TEST(Ulp, ErrorUsesTheSubnormalFloor) {
  // y = 2^−160: ulp_fp32(y) is floored at 2^−149, so 0 scores 2^−11, not 0.5 or more.
  EXPECT_EQ(as_double(ulp_error(0.0f, pow2(-160))), 0x1p-11);
  EXPECT_EQ(as_double(ulp_error(std::numeric_limits<float>::denorm_min(), pow2(-160))),
            1.0 - 0x1p-11);
  EXPECT_EQ(as_double(ulp_error(std::numeric_limits<float>::denorm_min(), real(0))), 1.0);
  EXPECT_EQ(as_double(ulp_error(-std::numeric_limits<float>::denorm_min(), pow2(-149))), 2.0);
  EXPECT_EQ(as_double(ulp_error(half::from_bits(0x0001), real(0))), 1.0);
  EXPECT_EQ(as_double(ulp_error(half::from_bits(0x0000), pow2(-30))), 0x1p-6);
  EXPECT_EQ(as_double(ulp_error(bfloat16::from_bits(0x0001), real(0))), 1.0);
  EXPECT_EQ(as_double(ulp_error(std::numeric_limits<double>::denorm_min(), real(0))), 1.0);
  EXPECT_EQ(as_double(ulp_error(-0.0f, real(0))), 0.0);
}

TEST(Ulp, InfinityIsScoredAsTwoToTheEmax) {
  // fp16: +Inf stands for 2^16 = 65536. y = 65504 (max): 32 / ulp 32 = 1.
  EXPECT_EQ(as_double(ulp_error(half::from_bits(0x7c00), real(65504))), 1.0);
  // y = 65520 (the overflow tie; RN gives +Inf): ½ ulp.
  EXPECT_EQ(as_double(ulp_error(half::from_bits(0x7c00), real(65520))), 0.5);
  EXPECT_EQ(as_double(ulp_error(half::from_bits(0x7bff), real(65520))), 0.5);
  EXPECT_EQ(as_double(ulp_error(half::from_bits(0x7c00), real(65519))), 17.0 / 32.0);
  // y past the format: ulp(70000) = 2^(17−11) = 64, |65536 − 70000| / 64.
  EXPECT_EQ(as_double(ulp_error(half::from_bits(0x7c00), real(70000))), 4464.0 / 64.0);
  // −Inf for a positive y: |−65536 − 65504| / 32.
  EXPECT_EQ(as_double(ulp_error(half::from_bits(0xfc00), real(65504))), 131040.0 / 32.0);
  EXPECT_EQ(as_double(ulp_error(half::from_bits(0xfc00), real(-65504))), 1.0);
  // fp32 and bf16: 2^128 against their largest finite values.
  EXPECT_EQ(as_double(ulp_error(kInfF, to_real(std::numeric_limits<float>::max()))), 1.0);
  EXPECT_EQ(as_double(ulp_error(bfloat16::from_bits(0x7f80), to_real(bfloat16::from_bits(0x7f7f)))),
            1.0);
  EXPECT_EQ(as_double(ulp_error(kInfD, to_real(std::numeric_limits<double>::max()))), 1.0);
  // bf16 +Inf for y = 1: (2^128 − 1) / 2^−7, about 2^135.
  const real big = ulp_error(bfloat16::from_bits(0x7f80), pow2(0));
  EXPECT_NEAR(std::log2(mpfr_get_d(big.backend().data(), MPFR_RNDN)), 135.0, 1e-9);
}

TEST(Ulp, ErrorWithNaNAndInfiniteExactValues) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(as_double(ulp_error(nan, nan_real())), 0.0);
  EXPECT_TRUE(std::isinf(as_double(ulp_error(nan, pow2(0)))));
  EXPECT_TRUE(std::isinf(as_double(ulp_error(1.0f, nan_real()))));
  EXPECT_TRUE(std::isinf(as_double(ulp_error(half::from_bits(0x7e00), pow2(0)))));
  real inf;
  mpfr_set_inf(inf.backend().data(), 1);
  EXPECT_EQ(as_double(ulp_error(kInfF, inf)), 0.0);
  EXPECT_TRUE(std::isinf(as_double(ulp_error(-kInfF, inf))));
  EXPECT_TRUE(std::isinf(as_double(ulp_error(std::numeric_limits<float>::max(), inf))));
  EXPECT_TRUE(std::isinf(as_double(ulp_of<float>(inf))));
}

TEST(Ulp, ErrorOfOppositeSigns) {
  // −1 for +1: distance 2 in units of ulp_fp32(1) = 2^−23.
  EXPECT_EQ(as_double(ulp_error(-1.0f, pow2(0))), 0x1p24);
  EXPECT_EQ(as_double(ulp_error(half::from_bits(0x8001), pow2(-24))), 2.0);
}

// Correctly rounded results score ≤ 0.5 and their outward neighbours > 0.5, on random reals at
// the reference precision spread over all binades of the format (subnormals included), plus
// random exact ties which score exactly 0.5.
template <class T>
void check_correctly_rounded_scores(int n) {
  using tr = scalar_traits<T>;
  std::mt19937_64 engine(test_seed());
  gmp_randstate_t state;
  gmp_randinit_default(state);
  gmp_randseed_ui(state, static_cast<unsigned long>(test_seed()));
  real y;
  mpfr_ptr yp = y.backend().data();
  double max_error = 0;
  int ties = 0;
  for (int i = 0; i < n; ++i) {
    do {
      mpfr_urandomb(yp, state);
    } while (mpfr_zero_p(yp));
    // Exponents from deep in the subnormal range up to the largest binade (no overflow here).
    const auto e =
        std::uniform_int_distribution<long>(tr::mpfr_emin - 2, tr::mpfr_emax - 1)(engine);
    mpfr_set_exp(yp, e);
    const bool tie = engine() % 8 == 0;
    if (tie) {
      // v + ½ ulp(v), v = RN(|y|): the midpoint between v and its successor (ulp_of(v) is the
      // spacing above v; past the largest finite value the midpoint is the overflow tie).
      const real v = to_real(round_to<T>(y));
      real half_ulp = ulp_of<T>(v);
      mpfr_div_2ui(half_ulp.backend().data(), half_ulp.backend().data(), 1, MPFR_RNDN);
      mpfr_add(yp, v.backend().data(), half_ulp.backend().data(), MPFR_RNDN);
    }
    if (engine() & 1) mpfr_neg(yp, yp, MPFR_RNDN);
    const T r = round_to<T>(y);
    const real error = ulp_error(r, y);
    ASSERT_LE(mpfr_cmp_d(error.backend().data(), 0.5), 0) << y.str(0, std::ios_base::scientific);
    const double err = mpfr_get_d(error.backend().data(), MPFR_RNDU);
    max_error = std::max(max_error, err);
    if (tie && mpfr_cmp_d(error.backend().data(), 0.5) == 0) ++ties;
    // One step away from y (outward from r) is more than ½ ulp off, unless r is exact.
    if (err != 0 && !is_inf_bits<T>(tr::to_bits(r))) {
      const bool r_above = mpfr_cmp(to_real(r).backend().data(), yp) > 0;
      auto away = tr::to_bits(r);
      const bool away_is_up = r_above == !mpfr_signbit(yp);  // magnitude grows
      if (away_is_up &&
          (away & static_cast<decltype(away)>(~tr::sign_mask)) == tr::max_finite_bits) {
        continue;
      }
      if (!away_is_up && (away & static_cast<decltype(away)>(~tr::sign_mask)) == 0) continue;
      away = static_cast<decltype(away)>(away_is_up ? away + 1 : away - 1);
      ASSERT_GT(mpfr_cmp_d(ulp_error(tr::from_bits(away), y).backend().data(), 0.5), 0)
          << y.str(0, std::ios_base::scientific);
    }
  }
  gmp_randclear(state);
  EXPECT_EQ(max_error, 0.5);
  EXPECT_GT(ties, n / 16);
  std::cout << tr::name << ": " << n << " correctly rounded values score <= 0.5 (max " << max_error
            << ", " << ties << " ties at exactly 0.5)\n";
}

TEST(Ulp, CorrectlyRoundedScoresAtMostHalf) {
  check_correctly_rounded_scores<float>(100'000);
  check_correctly_rounded_scores<double>(100'000);
  check_correctly_rounded_scores<half>(100'000);
  check_correctly_rounded_scores<bfloat16>(100'000);
}

TEST(UlpAt, EncodingArithmeticEqualsIlogbAndLdexp) {
  // ulp_at works on the encoding of its argument; it must equal the libm formula
  // ldexp(1, max(ilogb(mag), emin) − p + 1) (below: the subnormal quantum) on every binade
  // boundary, subnormal doubles, zero, NaN, +Inf and random encodings, for every format.
  auto libm = [](double mag, format f) {
    if (!(mag > 0)) return std::ldexp(1.0, f.emin - f.p + 1);
    return std::ldexp(1.0, std::max(std::ilogb(mag), f.emin) - f.p + 1);
  };
  const std::uint64_t seed = 20261124;
  std::cout << "seed: " << seed << "\n";
  std::mt19937_64 rng(seed);
  std::vector<double> mags = {0.0,
                              -0.0,
                              std::numeric_limits<double>::quiet_NaN(),
                              std::numeric_limits<double>::infinity(),
                              std::numeric_limits<double>::denorm_min(),
                              std::numeric_limits<double>::min(),
                              std::numeric_limits<double>::max()};
  for (int e = -1074; e <= 1023; ++e) {
    const double x = std::ldexp(1.0, e);
    mags.insert(mags.end(), {x, std::nextafter(x, 0.0), std::nextafter(x, 4.0 * x)});
  }
  for (int k = 0; k < 200000; ++k) {
    const double x = std::bit_cast<double>(rng() >> 1);  // positive encodings, NaNs included
    mags.push_back(x);
  }
  for (const format f : {kF64, kF32, kF16, kBF16}) {
    for (const double m : mags) {
      const double want = libm(m, f), got = ulp_at(m, f);
      ASSERT_EQ(std::bit_cast<std::uint64_t>(got), std::bit_cast<std::uint64_t>(want))
          << "mag " << m << " p " << f.p;
    }
  }
}

// The branch-free forms the hot loops use (docs/numerics.md §8.13): ulp_at_finite equals ulp_at,
// and half_ulp_finite (one product 2^e·2^−p) equals half_ulp, bit for bit, for every mag ≥ +0 —
// zero, subnormal doubles, every binade boundary, the largest double, +Inf and random finite
// encodings — in every format.
TEST(UlpAt, BranchFreeFormsEqualUlpAtForNonNegativeMagnitudes) {
  const std::uint64_t seed = test_seed();
  std::mt19937_64 rng(seed);
  std::vector<double> mags = {
      0.0, std::numeric_limits<double>::infinity(), std::numeric_limits<double>::denorm_min(),
      std::numeric_limits<double>::min(), std::numeric_limits<double>::max()};
  for (int e = -1074; e <= 1023; ++e) {
    const double x = std::ldexp(1.0, e);
    mags.insert(mags.end(), {x, std::nextafter(x, 0.0), std::nextafter(x, 4.0 * x)});
  }
  for (int k = 0; k < 200000; ++k) {
    const double x = std::bit_cast<double>(rng() >> 1);
    if (std::isfinite(x)) mags.push_back(x);
  }
  const auto bits = [](double v) { return std::bit_cast<std::uint64_t>(v); };
  for (const format f : {kF64, kF32, kF16, kBF16}) {
    const half_ulp_of half{f};
    const half_ulp_finite fast{f};
    for (const double m : mags) {
      if (std::isfinite(m)) {
        ASSERT_EQ(bits(ulp_at_finite(m, f)), bits(ulp_at(m, f))) << "mag " << m << " p " << f.p;
      }
      ASSERT_EQ(bits(fast(m)), bits(half(m))) << "mag " << m << " p " << f.p;
    }
  }
}

}  // namespace
}  // namespace pev::metric
