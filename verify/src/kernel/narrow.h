#pragma once
// Internal: one-rounding conversions to the output types and the error-free transformations the
// `accurate` kernels use to round exact quantities correctly (docs/numerics.md §4.2, §4.3).
//
// - narrow<T>(double): RN_T(x) with one rounding. float is the hardware conversion; half and
//   bfloat16 go through round-to-odd to binary32 (Boldo–Melquiond: valid since 24 ≥ p_T + 2), never
//   double → float → 16 bits with nearest at both steps.
// - narrow_dd<T>(hi, lo): RN_T(hi + lo) for a normalised double-double (|lo| ≤ ½ ulp(hi)), exact
//   by round-to-odd to binary64 first (53 ≥ p_T + 2).
// - two_sum / two_prod: Knuth's and Dekker's error-free transformations (no FMA: pev builds with
//   -ffp-contract=off and does not assume an FMA unit).

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <optional>
#include <type_traits>
#include <utility>

#include "pev/scalar/traits.h"

namespace pev::kernel::detail {

/// x rounded to binary32 with round-to-odd: the truncation toward zero, with its last bit set when
/// x is not representable. A finite x beyond the float range gives ±FLT_MAX (its truncation, odd
/// since the fraction is all ones), which every 16-bit format rounds to ±Inf as it should; ±Inf
/// and NaN stay what they are.
///
/// Branch-free: whether RN rounded the magnitude up is data-dependent (about half of all sin/cos
/// values), so a branch on it is mispredicted half the time. Stepping the encoding back by one
/// when |RN(x)| > |x| and setting the last bit when inexact is the truncation with a sticky bit.
inline float round_to_odd_float(double x) {
  const float f = static_cast<float>(x);
  const double back = f;
  std::uint32_t b = std::bit_cast<std::uint32_t>(f);
  b -= static_cast<std::uint32_t>(std::fabs(back) > std::fabs(x));
  b |= static_cast<std::uint32_t>(back != x);
  return std::bit_cast<float>(b);
}

/// The same to binary64, for the exact value hi + lo of a normalised double-double.
inline double round_to_odd_double(double hi, double lo) {
  if (lo == 0.0 || !std::isfinite(hi)) return hi;
  std::uint64_t b = std::bit_cast<std::uint64_t>(hi);
  // hi = RN(hi + lo): the exact value lies strictly between hi and its neighbour on lo's side.
  if ((lo < 0.0) != (hi < 0.0)) --b;  // |hi + lo| < |hi|: the truncation is one step toward zero
  return std::bit_cast<double>(b | 1u);
}

/// T from a float (RNE; the identity for float).
template <class T>
inline T from_float(float f) {
  if constexpr (std::is_same_v<T, float>) {
    return f;
  } else {
    return T(f);
  }
}

/// RN_T(x), one rounding.
template <class T>
inline T narrow(double x) {
  if constexpr (std::is_same_v<T, float>) {
    return static_cast<float>(x);
  } else {
    return T(round_to_odd_float(x));
  }
}

/// RN_T(hi + lo), one rounding, for |lo| ≤ ½ ulp(hi).
template <class T>
inline T narrow_dd(double hi, double lo) {
  return narrow<T>(round_to_odd_double(hi, lo));
}

/// a + b = s + e exactly (Knuth).
inline void two_sum(double a, double b, double& s, double& e) {
  s = a + b;
  const double bb = s - a;
  e = (a - (s - bb)) + (b - bb);
}

/// a + b = s + e exactly when |a| ≥ |b| or a = 0 (Dekker).
inline void fast_two_sum(double a, double b, double& s, double& e) {
  s = a + b;
  e = b - (s - a);
}

/// Veltkamp split: a = hi + lo with hi and lo of ≤ 26 significant bits.
inline void split(double a, double& hi, double& lo) {
  constexpr double kSplitter = 134217729.0;  // 2^27 + 1
  const double t = kSplitter * a;
  hi = t - (t - a);
  lo = a - hi;
}

/// a·b = p + e exactly (Dekker), barring overflow and underflow.
inline void two_prod(double a, double b, double& p, double& e) {
  p = a * b;
  double ah, al, bh, bl;
  split(a, ah, al);
  split(b, bh, bl);
  e = ((ah * bh - p) + ah * bl + al * bh) + al * bl;
}

/// Sign (−1, 0, 1) of the exact sum of n doubles (Shewchuk's grow-expansion: the components come
/// out non-overlapping and increasing, so the last non-zero one carries the sign of the sum).
template <std::size_t N>
inline int expansion_sign(const std::array<double, N>& x) {
  std::array<double, N> e{};
  std::size_t m = 0;
  for (double q : x) {
    for (std::size_t i = 0; i < m; ++i) {
      double s, err;
      two_sum(q, e[i], s, err);
      e[i] = err;
      q = s;
    }
    e[m++] = q;
  }
  for (std::size_t j = N; j > 0; --j) {
    if (e[j - 1] > 0.0) return 1;
    if (e[j - 1] < 0.0) return -1;
  }
  return 0;
}

/// The T values next to c (toward −∞ and +∞), as doubles; ±Inf past the largest finite value.
template <class T>
inline void neighbours(T c, double& below, double& above) {
  using tr = scalar_traits<T>;
  using bits_type = typename tr::bits_type;
  const bits_type b = tr::to_bits(c);
  const bits_type mag = b & static_cast<bits_type>(~tr::sign_mask);
  const bool negative = (b & tr::sign_mask) != 0 && mag != 0;
  auto value = [](bits_type bits) {
    return static_cast<double>(tr::to_double(tr::from_bits(bits)));
  };
  // Away from zero: magnitude + 1; toward zero: magnitude − 1 (from ±0: the smallest subnormal of
  // the other sign).
  const double away = value(static_cast<bits_type>(b + 1));
  const double toward = mag == 0 ? -value(1) : value(static_cast<bits_type>(b - 1));
  below = negative ? away : toward;
  above = negative ? toward : away;
  if (mag == 0) {
    below = -value(1);
    above = value(1);
  }
}

/// RN_T(v) for an exact value v with |v − (hi + lo)| ≤ err. When the approximation cannot tell on
/// which side of a T midpoint m the value lies, `compare(m)` must give the exact sign of v − m
/// (std::optional<int>; no value means "unknown", and then so is the result).
template <class T, class Compare>
inline std::optional<T> round_checked(double hi, double lo, double err, Compare&& compare) {
  using tr = scalar_traits<T>;
  const T c = narrow_dd<T>(hi, lo);
  if (err == 0.0) return c;
  const double cd = tr::to_double(c);
  if (!std::isfinite(cd)) return c;  // beyond the format: overflow regardless of the last bits
  double below, above;
  neighbours(c, below, above);
  // Midpoints are exact in binary64 (p_T + 1 ≤ 25 bits); past the largest finite value the
  // overflow threshold max + ½ ulp plays the midpoint's part.
  const double m_up = std::isfinite(above) ? (cd + above) / 2 : cd + (cd - below) / 2;
  const double m_dn = std::isfinite(below) ? (cd + below) / 2 : cd - (above - cd) / 2;
  const bool c_even = (tr::to_bits(c) & 1u) == 0;
  auto side = [&](double m) -> std::optional<int> {
    const double d = (hi - m) + lo;  // v − m up to err and this line's rounding
    if (std::fabs(d) > 2 * err + 0x1p-60 * std::fabs(m)) return d > 0 ? 1 : -1;
    return compare(m);
  };
  const auto up = side(m_up);
  if (!up) return std::nullopt;
  if (*up > 0 || (*up == 0 && !c_even)) return narrow<T>(above);
  const auto dn = side(m_dn);
  if (!dn) return std::nullopt;
  if (*dn < 0 || (*dn == 0 && !c_even)) return narrow<T>(below);
  return c;
}

}  // namespace pev::kernel::detail
