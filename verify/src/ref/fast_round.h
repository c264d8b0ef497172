#pragma once
// The fast exact reference's rounding to T: RN_T of a double, and the rounding tests that decide
// RN_T(V) from a value and its error bound (fast_bound.cpp's header comment, ROUNDING TEST).

#include <bit>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "fast_eft.h"
#include "pev/scalar/round.h"

namespace pev::ref::fast_detail {

// ---------------------------------------------------------------------------------------------
// Rounding test.

template <class T>
constexpr double max_finite() {
  using tr = scalar_traits<T>;
  return (2.0 - pow2(1 - tr::precision)) * pow2(tr::max_exponent);
}

// The encoding of RN_T(v), ties to even, for any non-NaN double v (±Inf beyond the range), in one
// rounding: hardware conversions for double and float; for the 16-bit formats v is scaled by a
// power of two (exact) so that T's quantum at v becomes 1, and rounded to an integer by the
// 1.5·2^52 shift (exact, ties to even): in the normal range the quantum is 2^(e − p + 1) with
// e = exponent(v), below it the fixed subnormal quantum 2^(emin − p + 1); a carry to the next
// binade lands on the right encoding. |v| ≥ max + ½ulp(max) gives ±Inf (that tie goes to the even
// 2^(emax+1)).
template <class T>
[[gnu::always_inline]] inline typename scalar_traits<T>::bits_type rn_bits(double v) {
  using tr = scalar_traits<T>;
  using bits_type = typename tr::bits_type;
  if constexpr (std::is_same_v<T, double>) {
    return std::bit_cast<std::uint64_t>(v);
  } else if constexpr (std::is_same_v<T, float>) {
    return std::bit_cast<std::uint32_t>(static_cast<float>(v));
  } else {
    const bits_type sign = std::signbit(v) ? tr::sign_mask : bits_type{0};
    const double a = std::fabs(v);
    constexpr double thr = max_finite<T>() + pow2(tr::max_exponent - tr::precision);
    if (!(a < thr)) return static_cast<bits_type>(sign | tr::infinity_bits);
    constexpr int f = tr::mantissa_bits;
    if (a < pow2(tr::min_normal_exponent)) {
      const double q = nearest(a * pow2(f - tr::min_normal_exponent));
      return static_cast<bits_type>(sign | static_cast<bits_type>(q));
    }
    const int e = static_cast<int>(std::bit_cast<std::uint64_t>(a) >> 52) - 1023;
    const int q = static_cast<int>(nearest(a * pow2(f - e)));  // in [2^f, 2^(f+1)]
    return static_cast<bits_type>(sign |
                                  static_cast<bits_type>(((e + tr::bias) << f) + q - (1 << f)));
  }
}

// RN_T(v), ties to even, for any non-NaN double v.
template <class T>
[[gnu::always_inline]] inline T round_nearest(double v) {
  if constexpr (std::is_same_v<T, double>) {
    return v;
  } else if constexpr (std::is_same_v<T, float>) {
    return static_cast<float>(v);
  } else {
    return scalar_traits<T>::from_bits(rn_bits<T>(v));
  }
}

template <class T>
inline double to_double(T v) {
  return scalar_traits<T>::to_double(v);
}

// True and out = RN_T(V) when every V with |V − (vh + vl)| ≤ err rounds to the same T value.
template <class T>
inline bool try_round(double vh, double vl, double err, T& out) {
  using tr = scalar_traits<T>;
  const T yt = round_nearest<T>(vh);
  const double y = to_double(yt);
  if (!(std::fabs(y) <= max_finite<T>())) {
    if constexpr (!std::is_same_v<T, double>) {
      // RN_T(x) = ±Inf exactly when |x| ≥ max + ½ulp(max) (the tie goes to the even "2^(emax+1)").
      // |vh| − thr is exact when |vh| ≤ 2·thr (Sterbenz) and certainly positive beyond.
      if (std::isnan(y)) return false;
      constexpr double thr = max_finite<T>() + pow2(tr::max_exponent - tr::precision);
      const double ds = (std::fabs(vh) - thr) + (vh > 0 ? vl : -vl);
      const double em = err * (1 + 0x1p-40) + std::fabs(ds) * 0x1p-51;
      if (!(ds - em > 0)) return false;
      out = yt;
      return true;
    }
    return false;
  }
  const double d = (vh - y) + vl;
  const double em = err * (1 + 0x1p-40) + std::fabs(d) * 0x1p-51;
  if (y == 0) {
    if constexpr (std::is_same_v<T, double>) {
      return false;  // an exact or tiny double-double value: leave it to MPFR
    } else {
      constexpr double half_sub = pow2(tr::min_normal_exponent - tr::precision);
      if (!(std::fabs(d) > em) || !(std::fabs(d) + em < half_sub)) return false;
      out = tr::from_bits(std::signbit(d) ? tr::sign_mask : typename tr::bits_type{0});
      return true;
    }
  }
  const std::uint64_t bits = std::bit_cast<std::uint64_t>(y) & ~(std::uint64_t{1} << 63);
  const int e = static_cast<int>(bits >> 52) - 1023;
  if constexpr (std::is_same_v<T, double>) {
    if (e < -960) return false;  // keep the half-gaps normal
  }
  const bool power_of_two = (bits & ((std::uint64_t{1} << 52) - 1)) == 0;
  const int et = e > tr::min_normal_exponent ? e : tr::min_normal_exponent;
  const double away = pow2(et - tr::precision);  // half the spacing above |y|
  const double toward = power_of_two && e > tr::min_normal_exponent ? 0.5 * away : away;
  const double up = y > 0 ? away : toward;
  const double down = y > 0 ? toward : away;
  if (!(d + em < up) || !(d - em > -down)) return false;
  out = yt;
  return true;
}

// The double stage's test: M covers err + |vl| and the roundings of vh ∓ M (the factor 1 + 2^−48
// and the term 2^−51|vh| exceed u(|vh| + M) and the roundings of M itself), so the computed
// a = fl(vh − M) ≤ V ≤ b = fl(vh + M), and equal encodings RN_T(a) = RN_T(b) give RN_T(V) by
// monotonicity. That includes the sign of a zero: RN_T(a) = +0 needs a ≥ 0 and then V > 0
// (M > err + |vl| strictly), RN_T(b) = −0 likewise V < 0. Costs resolution (≈ 2^−51|vh|), not
// soundness.
template <class T>
[[gnu::always_inline]] inline bool try_round_interval(double vh, double vl, double err, T& out) {
  const double m = (err + std::fabs(vl)) * (1 + 0x1p-48) + std::fabs(vh) * 0x1p-51;
  const auto lo = rn_bits<T>(vh - m);
  if (lo != rn_bits<T>(vh + m)) return false;
  out = scalar_traits<T>::from_bits(lo);
  return true;
}

// RN_T of an exactly known double (no error bound needed, ties included); false for NaN (whose
// encoding the MPFR path canonicalizes).
template <class T>
inline bool round_exact(double v, T& out) {
  if (std::isnan(v)) return false;
  out = round_nearest<T>(v);
  return true;
}

// RN_T(p·θ) for a regular θ and p ≠ 0, or false. An exact product (θ a double, p·θ one double)

template <class T>
T signed_zero(bool negative) {
  using tr = scalar_traits<T>;
  return tr::from_bits(negative ? tr::sign_mask : typename tr::bits_type{0});
}

}  // namespace pev::ref::fast_detail
