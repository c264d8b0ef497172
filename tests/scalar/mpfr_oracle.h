#pragma once
// Test-only oracle: MPFR's own correct rounding to a binary format (docs/numerics.md §4.7: round
// to p bits, restrict the exponent range, mpfr_check_range, mpfr_subnormalize), with its own bit
// encoder. Shares no code with pev's conversions.

#include <gmp.h>
#include <mpfr.h>

#include <cstdint>
#include <cstdlib>
#include <iostream>

#include "pev/scalar/traits.h"

namespace pev::test {

/// The test seed: PEV_SEED from the environment if set, else a fixed default. Printed once.
inline std::uint64_t test_seed() {
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

/// Canonical quiet NaN encoding of T: exponent all ones, top fraction bit only.
template <class T>
constexpr typename scalar_traits<T>::bits_type canonical_nan_bits() {
  using tr = scalar_traits<T>;
  return tr::exponent_mask | (typename tr::bits_type{1} << (tr::mantissa_bits - 1));
}

/// Rounds to T with MPFR's emulation of the format; reuses its mpfr_t's (not thread-safe).
template <class T>
class mpfr_rounder {
  using tr = scalar_traits<T>;

 public:
  using bits_type = typename tr::bits_type;

  mpfr_rounder() {
    mpfr_init2(y_, tr::precision);
    mpfr_init2(s_, tr::precision);
  }
  ~mpfr_rounder() {
    mpfr_clear(y_);
    mpfr_clear(s_);
  }
  mpfr_rounder(const mpfr_rounder&) = delete;
  mpfr_rounder& operator=(const mpfr_rounder&) = delete;

  /// Encoding of RN_T(x); NaN gives the canonical quiet NaN.
  bits_type operator()(mpfr_srcptr x) {
    // First rounding to p bits in MPFR's wide exponent range (x may lie far outside T's range,
    // and MPFR functions require inputs inside the current range); the ternary value t lets
    // mpfr_subnormalize round again without double-rounding errors.
    const int t = mpfr_set(y_, x, MPFR_RNDN);
    return finish(t);
  }

  /// Encoding of RN_T(f) for a float f.
  bits_type from_float(float f) {
    const int t = mpfr_set_flt(y_, f, MPFR_RNDN);
    return finish(t);
  }

  /// Encoding of a finite or infinite y exactly representable in T (independent encoder).
  bits_type encode(mpfr_srcptr y) {
    const bits_type sign = mpfr_signbit(y) ? tr::sign_mask : bits_type{0};
    if (mpfr_nan_p(y)) return canonical_nan_bits<T>();
    if (mpfr_inf_p(y)) return sign | tr::infinity_bits;
    if (mpfr_zero_p(y)) return sign;
    const mpfr_exp_t e = mpfr_get_exp(y);  // 2^(e−1) ≤ |y| < 2^e
    if (e - 1 >= tr::min_normal_exponent) {
      // Integer significand M = |y|·2^(p−e) ∈ [2^(p−1), 2^p); drop the implicit bit.
      mpfr_mul_2si(s_, y, tr::precision - e, MPFR_RNDN);
      mpfr_abs(s_, s_, MPFR_RNDN);
      const auto m = static_cast<bits_type>(mpfr_get_ui(s_, MPFR_RNDN));
      const auto biased = static_cast<bits_type>(e - 1 + tr::bias);
      return sign | static_cast<bits_type>(biased << tr::mantissa_bits) |
             static_cast<bits_type>(m & tr::mantissa_mask);
    }
    // Subnormal: |y| = M·2^(mpfr_emin − 1).
    mpfr_mul_2si(s_, y, -(tr::mpfr_emin - 1), MPFR_RNDN);
    mpfr_abs(s_, s_, MPFR_RNDN);
    return sign | static_cast<bits_type>(mpfr_get_ui(s_, MPFR_RNDN));
  }

 private:
  bits_type finish(int t) {
    if (mpfr_nan_p(y_)) return canonical_nan_bits<T>();
    const mpfr_exp_t saved_emin = mpfr_get_emin();
    const mpfr_exp_t saved_emax = mpfr_get_emax();
    mpfr_set_emin(tr::mpfr_emin);
    mpfr_set_emax(tr::mpfr_emax);
    t = mpfr_check_range(y_, t, MPFR_RNDN);
    mpfr_subnormalize(y_, t, MPFR_RNDN);
    mpfr_set_emin(saved_emin);
    mpfr_set_emax(saved_emax);
    return encode(y_);
  }

  mpfr_t y_;
  mpfr_t s_;
};

}  // namespace pev::test
