// pev::round_to and pev::to_real: correct rounding (one rounding, ties to even) from the
// reference's real to fp64, fp32, fp16 and bf16, checked against MPFR's own rounding to the target
// format on random reals, exact ties, near ties and double-rounding traps.

#include <gmp.h>
#include <gtest/gtest.h>
#include <mpfr.h>

#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <limits>
#include <random>

#include "mpfr_oracle.h"
#include "pev/core/real.h"
#include "pev/scalar/round.h"
#include "pev/scalar/traits.h"

namespace pev {
namespace {

template <class T>
using bits_t = typename scalar_traits<T>::bits_type;

template <class T>
bits_t<T> bits_of(T v) {
  return scalar_traits<T>::to_bits(v);
}

// Exact value of a finite T encoding into x (x's precision ≥ T's). half and bfloat16 decode
// through float, which test_half_bfloat16 checks exhaustively against the format definition.
template <class T>
void set_exact(mpfr_ptr x, bits_t<T> b) {
  if constexpr (std::is_same_v<T, double>) {
    mpfr_set_d(x, std::bit_cast<double>(b), MPFR_RNDN);
  } else if constexpr (std::is_same_v<T, float>) {
    mpfr_set_flt(x, std::bit_cast<float>(b), MPFR_RNDN);
  } else {
    mpfr_set_flt(x, static_cast<float>(T::from_bits(b)), MPFR_RNDN);
  }
}

// What a double-rounding implementation would return: the nearest float first for the 16-bit
// formats, the nearest double for fp32, the nearest x87 long double (64-bit significand) for
// fp64, then the nearest T of that. Used only to show that the trap cases bite.
template <class T>
bits_t<T> double_rounded(mpfr_srcptr x) {
  if constexpr (std::is_same_v<T, float>) {
    return std::bit_cast<std::uint32_t>(static_cast<float>(mpfr_get_d(x, MPFR_RNDN)));
  } else if constexpr (std::is_same_v<T, double>) {
    return std::bit_cast<std::uint64_t>(static_cast<double>(mpfr_get_ld(x, MPFR_RNDN)));
  } else {
    return T(mpfr_get_flt(x, MPFR_RNDN)).bits;
  }
}

// Random reals at the reference precision. The GMP generator draws significands, the 64-bit
// engine everything else; both are seeded from the test seed.
class real_source {
 public:
  explicit real_source(std::uint64_t seed) : engine_(seed) {
    gmp_randinit_default(state_);
    gmp_randseed_ui(state_, static_cast<unsigned long>(seed));
  }
  ~real_source() { gmp_randclear(state_); }
  real_source(const real_source&) = delete;
  real_source& operator=(const real_source&) = delete;

  std::mt19937_64& engine() { return engine_; }
  bool coin() { return (engine_() & 1) != 0; }
  std::int64_t uniform(std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(engine_);
  }

  /// ±m·2^e with m uniform in [0.5, 1) at x's precision.
  void in_binade(mpfr_ptr x, mpfr_exp_t e) {
    do {
      mpfr_urandomb(x, state_);
    } while (mpfr_zero_p(x));
    mpfr_set_exp(x, e);
    if (coin()) mpfr_neg(x, x, MPFR_RNDN);
  }

  /// A random finite non-negative encoding of T (uniform over encodings, so over binades).
  template <class T>
  bits_t<T> finite_bits() {
    return static_cast<bits_t<T>>(std::uniform_int_distribution<std::uint64_t>(
        0, scalar_traits<T>::max_finite_bits)(engine_));
  }

  /// ±the midpoint between a random finite T value and its successor (2^emax after the largest).
  template <class T>
  void midpoint(mpfr_ptr x, mpfr_ptr scratch) {
    using tr = scalar_traits<T>;
    const bits_t<T> b = finite_bits<T>();
    set_exact<T>(x, b);
    if (b == tr::max_finite_bits) {
      mpfr_set_ui_2exp(scratch, 1, tr::mpfr_emax, MPFR_RNDN);
    } else {
      set_exact<T>(scratch, static_cast<bits_t<T>>(b + 1));
    }
    mpfr_add(x, x, scratch, MPFR_RNDN);  // exact: two neighbours, precision ≥ p + 1
    mpfr_div_2ui(x, x, 1, MPFR_RNDN);
    if (coin()) mpfr_neg(x, x, MPFR_RNDN);
  }

 private:
  std::mt19937_64 engine_;
  gmp_randstate_t state_;
};

// Moves x by ±2^−k relative to its binade (x + s·2^(E−k), E = exponent of x): exact while
// k ≤ the reference precision, since x has at most p + 1 significant bits here.
void nudge(mpfr_ptr x, mpfr_ptr scratch, long k, bool up) {
  mpfr_set_si_2exp(scratch, up ? 1 : -1, mpfr_get_exp(x) - k, MPFR_RNDN);
  mpfr_add(x, x, scratch, MPFR_RNDN);
}

struct sweep_counts {
  std::uint64_t total = 0;
  std::uint64_t by_kind[5] = {};
  std::uint64_t overflow = 0;
  std::uint64_t zero = 0;
  std::uint64_t subnormal = 0;
  std::uint64_t double_rounding_would_fail = 0;
  std::uint64_t failures = 0;
};

// round_to<T> against MPFR on n random reals at the reference precision, of five kinds:
//   0  uniform significand, exponent uniform from below half the smallest subnormal to past
//      the overflow threshold (every binade, underflow to ±0, overflow to ±Inf);
//   1  exactly representable T values (must come back unchanged);
//   2  exact ties (midpoints of neighbours, including the overflow tie max + ½ ulp);
//   3  near ties: a midpoint ± 2^−k relative, k ∈ [p + 2, P], or ± one ulp of the reference;
//   4  double-rounding traps: a midpoint ± 2^−60 relative (± 2^−100 for fp64), which rounds to
//      the exact midpoint in double (and float), where a second rounding breaks the tie to even.
template <class T>
sweep_counts sweep_against_mpfr(std::uint64_t n, std::uint64_t seed) {
  using tr = scalar_traits<T>;
  const unsigned precision = precision_bits();
  real_source source(seed);
  test::mpfr_rounder<T> oracle;
  real x;
  mpfr_ptr xp = x.backend().data();
  mpfr_t scratch;
  mpfr_init2(scratch, precision);
  const long trap_k = std::is_same_v<T, double> ? 100 : 60;

  sweep_counts counts;
  for (std::uint64_t i = 0; i < n; ++i) {
    const auto roll = source.uniform(0, 99);
    const int kind = roll < 35 ? 0 : roll < 45 ? 1 : roll < 60 ? 2 : roll < 80 ? 3 : 4;
    switch (kind) {
      case 0:
        source.in_binade(xp, source.uniform(tr::mpfr_emin - 3, tr::mpfr_emax + 1));
        break;
      case 1:
        set_exact<T>(xp, source.finite_bits<T>());
        if (source.coin()) mpfr_neg(xp, xp, MPFR_RNDN);
        break;
      case 2:
        source.midpoint<T>(xp, scratch);
        break;
      case 3:
        source.midpoint<T>(xp, scratch);
        if (source.coin()) {
          nudge(xp, scratch, source.uniform(tr::precision + 2, precision), source.coin());
        } else if (source.coin()) {
          mpfr_nextabove(xp);
        } else {
          mpfr_nextbelow(xp);
        }
        break;
      default:
        source.midpoint<T>(xp, scratch);
        nudge(xp, scratch, trap_k, source.coin());
        break;
    }
    const bits_t<T> got = bits_of(round_to<T>(x));
    const bits_t<T> want = oracle(xp);
    ++counts.total;
    ++counts.by_kind[kind];
    const bits_t<T> magnitude = want & static_cast<bits_t<T>>(~tr::sign_mask);
    counts.overflow += magnitude == tr::infinity_bits;
    counts.zero += magnitude == 0;
    counts.subnormal += magnitude != 0 && (want & tr::exponent_mask) == 0;
    counts.double_rounding_would_fail += double_rounded<T>(xp) != want;
    if (got != want && ++counts.failures <= 10) {
      ADD_FAILURE() << tr::name << " of " << x.str(0, std::ios_base::scientific) << " (kind "
                    << kind << "): got 0x" << std::hex << +got << ", MPFR 0x" << +want;
    }
  }
  mpfr_clear(scratch);
  return counts;
}

template <class T>
void run_sweep(std::uint64_t n) {
  const std::uint64_t seed = test::test_seed();
  const auto start = std::chrono::steady_clock::now();
  const sweep_counts c = sweep_against_mpfr<T>(n, seed);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(c.failures, 0u);
  EXPECT_EQ(c.total, n);
  // The sample must reach every regime it claims to cover.
  EXPECT_GT(c.overflow, 0u);
  EXPECT_GT(c.zero, 0u);
  EXPECT_GT(c.subnormal, 0u);
  if (!std::is_same_v<T, double> || std::numeric_limits<long double>::digits > 53) {
    // A wider intermediate (see double_rounded) gets a good share of these wrong.
    EXPECT_GT(c.double_rounding_would_fail, n / 20);
  }
  std::cout << scalar_traits<T>::name << ": " << c.total << " reals at " << precision_bits()
            << " bits match MPFR (uniform " << c.by_kind[0] << ", exact " << c.by_kind[1]
            << ", ties " << c.by_kind[2] << ", near ties " << c.by_kind[3] << ", traps "
            << c.by_kind[4] << "; results: " << c.overflow << " ±Inf, " << c.zero << " ±0, "
            << c.subnormal << " subnormal); a double-rounding path would miss "
            << c.double_rounding_would_fail << "; " << seconds << " s\n";
}

TEST(Round, FloatMatchesMpfr) { run_sweep<float>(1'200'000); }
TEST(Round, HalfMatchesMpfr) { run_sweep<half>(1'200'000); }
TEST(Round, Bfloat16MatchesMpfr) { run_sweep<bfloat16>(1'200'000); }
TEST(Round, DoubleMatchesMpfr) { run_sweep<double>(300'000); }

// x = Σ sign·2^e over the given exponents, exactly (the reference precision is ample).
real sum_of_powers(std::initializer_list<long> exponents, bool negative = false) {
  real x;
  mpfr_ptr p = x.backend().data();
  mpfr_set_zero(p, 1);
  real term;
  for (const long e : exponents) {
    mpfr_set_ui_2exp(term.backend().data(), 1, e, MPFR_RNDN);
    mpfr_add(p, p, term.backend().data(), MPFR_RNDN);
  }
  if (negative) mpfr_neg(p, p, MPFR_RNDN);
  return x;
}

TEST(Round, NamedDoubleRoundingTraps) {
  // ml_dtypes PR #401: float64 1 + 2^−8 + 2^−40 → bf16 gave 1.0 instead of 1.0078125.
  const real bf = sum_of_powers({0, -8, -40});
  EXPECT_EQ(round_to<bfloat16>(bf).bits, 0x3f81);
  EXPECT_EQ(static_cast<float>(round_to<bfloat16>(bf)), 1.0078125f);
  EXPECT_EQ(bfloat16(static_cast<float>(static_cast<double>(bf))).bits, 0x3f80);  // the trap
  EXPECT_EQ(round_to<bfloat16>(sum_of_powers({0, -8, -40}, true)).bits, 0xbf81);
  EXPECT_EQ(round_to<bfloat16>(sum_of_powers({0, -8})).bits, 0x3f80);  // the tie itself: even

  const real h = sum_of_powers({0, -11, -60});
  EXPECT_EQ(round_to<half>(h).bits, 0x3c01);
  EXPECT_EQ(half(static_cast<float>(h)).bits, 0x3c00);  // the trap
  EXPECT_EQ(round_to<half>(sum_of_powers({0, -11})).bits, 0x3c00);

  const real f = sum_of_powers({0, -24, -60});
  EXPECT_EQ(round_to<float>(f), 1.0f + 0x1p-23f);
  EXPECT_EQ(static_cast<float>(static_cast<double>(f)), 1.0f);  // the trap
  EXPECT_EQ(round_to<float>(sum_of_powers({0, -24}, true)), -1.0f);

  EXPECT_EQ(round_to<double>(sum_of_powers({0, -53, -120})), 1.0 + 0x1p-52);
  EXPECT_EQ(round_to<double>(sum_of_powers({0, -53})), 1.0);
}

TEST(Round, SpecialValues) {
  real nan;
  mpfr_set_nan(nan.backend().data());
  EXPECT_EQ(bits_of(round_to<float>(nan)), 0x7fc00000u);
  EXPECT_EQ(bits_of(round_to<double>(nan)), 0x7ff8000000000000u);
  EXPECT_EQ(round_to<half>(nan).bits, 0x7e00);
  EXPECT_EQ(round_to<bfloat16>(nan).bits, 0x7fc0);

  real inf;
  mpfr_set_inf(inf.backend().data(), -1);
  EXPECT_EQ(round_to<float>(inf), -std::numeric_limits<float>::infinity());
  EXPECT_EQ(round_to<double>(inf), -std::numeric_limits<double>::infinity());
  EXPECT_EQ(round_to<half>(inf).bits, 0xfc00);
  EXPECT_EQ(round_to<bfloat16>(inf).bits, 0xff80);

  real zero;
  mpfr_set_zero(zero.backend().data(), -1);
  EXPECT_EQ(bits_of(round_to<float>(zero)), 0x80000000u);
  EXPECT_EQ(bits_of(round_to<double>(zero)), 0x8000000000000000u);
  EXPECT_EQ(round_to<half>(zero).bits, 0x8000);
  EXPECT_EQ(round_to<bfloat16>(zero).bits, 0x8000);
}

TEST(Round, UnderflowKeepsTheSignOfZero) {
  // Half the smallest subnormal is a tie between 0 and it: even = ±0. Just above: the subnormal.
  EXPECT_EQ(bits_of(round_to<float>(sum_of_powers({-150}, true))), 0x80000000u);
  EXPECT_EQ(bits_of(round_to<float>(sum_of_powers({-150, -250}, true))), 0x80000001u);
  EXPECT_EQ(bits_of(round_to<float>(sum_of_powers({-149, -150}))), 0x00000002u);  // 1.5: even
  EXPECT_EQ(bits_of(round_to<float>(sum_of_powers({-400}, true))), 0x80000000u);
  EXPECT_EQ(bits_of(round_to<double>(sum_of_powers({-1075}, true))), 0x8000000000000000u);
  EXPECT_EQ(bits_of(round_to<double>(sum_of_powers({-1075, -1200}))), 0x1u);
  EXPECT_EQ(round_to<half>(sum_of_powers({-25}, true)).bits, 0x8000);
  EXPECT_EQ(round_to<half>(sum_of_powers({-25, -100}, true)).bits, 0x8001);
  EXPECT_EQ(round_to<half>(sum_of_powers({-24, -25})).bits, 0x0002);
  EXPECT_EQ(round_to<bfloat16>(sum_of_powers({-134}, true)).bits, 0x8000);
  EXPECT_EQ(round_to<bfloat16>(sum_of_powers({-134, -200})).bits, 0x0001);
  // Far below any format: MPFR exponents of −10^6.
  EXPECT_EQ(round_to<half>(sum_of_powers({-1'000'000}, true)).bits, 0x8000);
  EXPECT_EQ(bits_of(round_to<double>(sum_of_powers({-1'000'000}))), 0x0u);
  // Largest subnormal + ½ ulp ties up (odd) into the smallest normal.
  EXPECT_EQ(round_to<half>(sum_of_powers({-14, -25}, false)).bits, 0x0400);
  real just_below_min_normal = sum_of_powers({-14});
  mpfr_sub(just_below_min_normal.backend().data(), just_below_min_normal.backend().data(),
           sum_of_powers({-25}).backend().data(), MPFR_RNDN);
  EXPECT_EQ(round_to<half>(just_below_min_normal).bits, 0x0400);  // tie, 0x3ff odd → 0x400
}

TEST(Round, OverflowToInfinity) {
  // fp16: 65520 = 65504 + ½ ulp is the tie with odd 0x7bff: rounds to 2^16 = ±Inf.
  EXPECT_EQ(round_to<half>(real(65520)).bits, 0x7c00);
  EXPECT_EQ(round_to<half>(real(-65520)).bits, 0xfc00);
  EXPECT_EQ(round_to<half>(real("65519.99999999999999999")).bits, 0x7bff);
  EXPECT_EQ(round_to<half>(real("65519.996")).bits, 0x7bff);
  EXPECT_EQ(round_to<half>(real(65504)).bits, 0x7bff);
  // bf16 and fp32 share 2^128; their overflow ties are (2 − 2^−8)·2^127 and (2 − 2^−24)·2^127.
  EXPECT_EQ(round_to<bfloat16>(sum_of_powers({127, 126, 125, 124, 123, 122, 121, 120, 119})).bits,
            0x7f80);
  EXPECT_EQ(round_to<bfloat16>(sum_of_powers({127, 126, 125, 124, 123, 122, 121, 120})).bits,
            0x7f7f);
  real float_tie = sum_of_powers({128});
  mpfr_sub(float_tie.backend().data(), float_tie.backend().data(),
           sum_of_powers({103}).backend().data(), MPFR_RNDN);
  EXPECT_EQ(round_to<float>(float_tie), std::numeric_limits<float>::infinity());
  mpfr_nextbelow(float_tie.backend().data());
  EXPECT_EQ(round_to<float>(float_tie), std::numeric_limits<float>::max());
  real double_tie = sum_of_powers({1024});
  mpfr_sub(double_tie.backend().data(), double_tie.backend().data(),
           sum_of_powers({970}).backend().data(), MPFR_RNDN);
  EXPECT_EQ(round_to<double>(double_tie), std::numeric_limits<double>::infinity());
  mpfr_nextbelow(double_tie.backend().data());
  EXPECT_EQ(round_to<double>(double_tie), std::numeric_limits<double>::max());
  EXPECT_EQ(round_to<double>(sum_of_powers({1'000'000}, true)),
            -std::numeric_limits<double>::infinity());
}

TEST(Round, InputPrecisionDoesNotMatter) {
  // A 12-bit input holding an fp16 tie, a 2-bit input rounded to double, a 1000-bit input whose
  // deciding bit sits 900 bits down.
  mpfr_t x;
  mpfr_init2(x, 12);
  mpfr_set_ui(x, 2049, MPFR_RNDN);
  real low;
  mpfr_set_prec(low.backend().data(), 12);
  mpfr_set(low.backend().data(), x, MPFR_RNDN);
  EXPECT_EQ(round_to<half>(low).bits, 0x6800);  // 2048
  mpfr_set_prec(low.backend().data(), 2);
  mpfr_set_ui(low.backend().data(), 3, MPFR_RNDN);
  EXPECT_EQ(round_to<double>(low), 3.0);
  EXPECT_EQ(round_to<bfloat16>(low).bits, 0x4040);
  mpfr_clear(x);

  real wide;
  mpfr_set_prec(wide.backend().data(), 1000);
  mpfr_set_ui_2exp(wide.backend().data(), 1, -900, MPFR_RNDN);
  mpfr_add_ui(wide.backend().data(), wide.backend().data(), 2049, MPFR_RNDN);
  EXPECT_EQ(round_to<half>(wide).bits, 0x6801);  // 2050
  EXPECT_EQ(round_to<float>(wide), 2049.0f);
}

TEST(Round, RoundToOfToRealIsTheIdentity) {
  std::uint64_t checked = 0;
  for (std::uint32_t b = 0; b <= 0xffffu; ++b) {
    const auto h = half::from_bits(static_cast<std::uint16_t>(b));
    const auto bf = bfloat16::from_bits(static_cast<std::uint16_t>(b));
    if (is_nan_bits<half>(h.bits)) {
      EXPECT_TRUE(mpfr_nan_p(to_real(h).backend().data()));
      EXPECT_EQ(round_to<half>(to_real(h)).bits, 0x7e00);
    } else {
      ASSERT_EQ(round_to<half>(to_real(h)).bits, h.bits) << std::hex << b;
    }
    if (is_nan_bits<bfloat16>(bf.bits)) {
      EXPECT_EQ(round_to<bfloat16>(to_real(bf)).bits, 0x7fc0);
    } else {
      ASSERT_EQ(round_to<bfloat16>(to_real(bf)).bits, bf.bits) << std::hex << b;
    }
    checked += 2;
  }
  // Every 4099th float pattern and 300,000 random double patterns (NaNs aside).
  for (std::uint64_t i = 0; i <= 0xffffffffu; i += 4099) {
    const float f = std::bit_cast<float>(static_cast<std::uint32_t>(i));
    if (std::isnan(f)) continue;
    ASSERT_EQ(bits_of(round_to<float>(to_real(f))), bits_of(f)) << std::hexfloat << f;
    ++checked;
  }
  std::mt19937_64 engine(test::test_seed());
  for (int i = 0; i < 300'000; ++i) {
    const double d = std::bit_cast<double>(engine());
    if (std::isnan(d)) continue;
    ASSERT_EQ(bits_of(round_to<double>(to_real(d))), bits_of(d)) << std::hexfloat << d;
    ++checked;
  }
  std::cout << "round_to(to_real(v)) == v for " << checked << " values\n";
}

TEST(Round, ToRealIsExactAtLowPrecision) {
  const precision_scope scope(24);
  const double tenth = 0.1;  // needs all 53 bits
  const real r = to_real(tenth);
  EXPECT_GE(mpfr_get_prec(r.backend().data()), 53);
  EXPECT_EQ(mpfr_get_d(r.backend().data(), MPFR_RNDZ), tenth);
  EXPECT_EQ(mpfr_get_d(r.backend().data(), MPFR_RNDU), tenth);
  EXPECT_EQ(round_to<double>(r), tenth);
  EXPECT_TRUE(mpfr_inf_p(to_real(-std::numeric_limits<float>::infinity()).backend().data()));
  EXPECT_TRUE(mpfr_signbit(to_real(half::from_bits(0x8000)).backend().data()));
}

}  // namespace
}  // namespace pev
