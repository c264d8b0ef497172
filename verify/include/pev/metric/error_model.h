#pragma once
// Analytic error models of the kernels' pipelines (docs/numerics.md §7), evaluated per pair and
// per element: the bounds of the accuracy-contract table (tests/kernel) and of the property suites
// (properties/), which share this one piece of code.
//
// A model replays a pipeline's operations on `tv` values: x is the exact value of the quantity
// (the mathematical definition, evaluated in double) and e a bound on |computed − x|. Each
// operation propagates the operands' bounds to first and second order (no neglected propagation
// term; x's own few 2^−53 relative from the true exact value are not added to e, see
// docs/numerics.md §7.1) and adds its own rounding, ½ ulp of the largest value the result can take,
// or the libm's documented bound in ulps for library functions. Roundings whose operands are exact
// and known (the exponent fl(2i/d), a base or factor cast to fp32) enter with their exact error.
// Nothing here is a measured error: the only inputs are the operations of the pipeline, the
// formats, and the libm bounds below.

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>
#include <type_traits>

#include "pev/metric/libm.h"
#include "pev/scalar/dtype.h"

namespace pev::metric {

// Libm accuracy bounds, in ulps of the exact result, are a library class (pev/metric/libm.h):
// the models below take the class they are evaluated for.

/// Formats (precision, minimum normal exponent) are pev::format (pev/scalar/dtype.h).
using pev::format;
inline constexpr format kF64 = format_of<double>();
inline constexpr format kF32 = format_of<float>();
inline constexpr format kF16 = format_of<half>();
inline constexpr format kBF16 = format_of<bfloat16>();

/// 2^k for −1074 ≤ k ≤ 1023, from its encoding.
inline double pow2_bits(int k) {
  return k >= -1022 ? std::bit_cast<double>(static_cast<std::uint64_t>(k + 1023) << 52)
                    : std::bit_cast<double>(std::uint64_t{1} << (k + 1074));
}

/// Spacing of the format at magnitude `mag` (its binade), floored at the subnormal quantum; +Inf
/// for mag = +Inf. On the encoding of mag (no libm: the comparison engine's per-value hot path):
/// the exponent field is ilogb(mag) for normal doubles, and subnormal doubles lie below every
/// format's minimum normal exponent, where the floor applies.
inline double ulp_at(double mag, format f) {
  if (!(mag > 0)) return pow2_bits(f.emin - f.p + 1);
  if (!(mag <= std::numeric_limits<double>::max())) return mag;  // +Inf
  const int e = static_cast<int>(std::bit_cast<std::uint64_t>(mag) >> 52) - 1023;
  return pow2_bits(std::max(e, f.emin) - f.p + 1);
}

/// The biased exponent field of a finite mag ≥ 0, at least f's minimum normal exponent's: the
/// maximum as an integer select on signed 64-bit integers (which AVX2 compares), so that loops
/// calling it vectorise (a std::max compiles to control flow there).
inline std::uint64_t biased_exponent(double mag, format f) {
  const auto field = static_cast<std::int64_t>(std::bit_cast<std::uint64_t>(mag) >> 52);
  const std::int64_t lo = std::int64_t{f.emin} + 1023;
  const std::int64_t take_lo = -static_cast<std::int64_t>(field < lo);
  return static_cast<std::uint64_t>(field ^ ((field ^ lo) & take_lo));
}

/// ulp_at of a finite mag ≥ 0 without branches, for the comparison engine's vector loops (equal
/// to ulp_at there: a zero or subnormal mag has exponent field 0, below every format's minimum
/// normal exponent). 2^(e−p+1) as 2^e·2^(1−p), both normal, so that a subnormal result (the fp64
/// floor 2^−1074) needs no branch either.
inline double ulp_at_finite(double mag, format f) {
  return std::bit_cast<double>(biased_exponent(mag, f) << 52) * pow2_bits(1 - f.p);
}

/// Bound on a round-to-nearest error for results of magnitude ≤ mag.
inline double half_ulp(double mag, format f) { return ulp_at(mag, f) / 2; }

/// Exact value and error bound of a computed quantity.
struct tv {
  double x = 0;
  double e = 0;
};

inline tv exact(double x) { return {x, 0.0}; }

/// An fp32 operand converted from a double `rep` that stands for the exact x (rep == x for exact
/// inputs such as integers and spec parameters).
inline tv as_f32(double x, double rep) {
  return {x, std::fabs(static_cast<double>(static_cast<float>(rep)) - x)};
}
inline tv as_f32(double x) { return as_f32(x, x); }

/// The bound of one rounding to nearest in format f at magnitudes ≤ mag (half_ulp).
struct half_ulp_of {
  format f;
  double operator()(double mag) const { return half_ulp(mag, f); }
};
/// The same as ulp_at_finite(mag, f)/2: equal to half_ulp_of for every mag ≥ +0 (+Inf
/// included), and without branches, for hot loops whose magnitudes are known to be non-negative.
/// One product 2^e·2^(−p): both it and ulp_at_finite's 2^e·2^(1−p) halved are one rounding of the
/// exact 2^(e−p) (ulp_at_finite's product is exact).
struct half_ulp_finite {
  format f;
  double operator()(double mag) const {
    return std::bit_cast<double>(biased_exponent(mag, f) << 52) * pow2_bits(-f.p);
  }
};

/// The basic operations of `arith` (below), with the rounding bound `Half` of the format: one
/// set of propagation rules for arith and for hot loops that use half_ulp_finite (the same
/// values wherever every magnitude |x| + e they round at is finite and ≥ +0).
template <class Half>
struct rounded_ops {
  Half half;

  tv round(tv a) const { return {a.x, a.e + half(std::fabs(a.x) + a.e)}; }
  tv add(tv a, tv b) const { return round({a.x + b.x, a.e + b.e}); }
  tv sub(tv a, tv b) const { return round({a.x - b.x, a.e + b.e}); }
  /// The exact product's value and the propagated bound, before mul's rounding.
  static tv product(tv a, tv b) {
    return {a.x * b.x, std::fabs(a.x) * b.e + std::fabs(b.x) * a.e + a.e * b.e};
  }
  tv mul(tv a, tv b) const { return round(product(a, b)); }
  tv div(tv a, tv b) const {
    const double q = a.x / b.x;
    return round({q, (a.e + std::fabs(q) * b.e) / (std::fabs(b.x) - b.e)});
  }
};

/// Arithmetic in one format: every result is rounded to nearest.
class arith : public rounded_ops<half_ulp_of> {
 public:
  explicit arith(format f) : rounded_ops<half_ulp_of>{{f}}, f_(f) {}
  /// A library pow(b, y) with `ulps` of error, b > 0: |ln b̂^ŷ − ln b^y| ≤ (|y| + e_y)·|ln b̂ − ln b|
  /// + e_y·|ln b|, and |ln b̂ − ln b| ≤ −ln(1 − e_b/b).
  tv pow(tv b, tv y, double ulps) const {
    const double v = std::pow(b.x, y.x);
    const double dl = -std::log1p(-b.e / b.x);
    const double L = (std::fabs(y.x) + y.e) * dl + y.e * std::fabs(std::log(b.x));
    const double in = v * std::expm1(L);
    return {v, in + ulps * ulp_at(v + in, f_)};
  }
  /// A library log with `ulps` of error, a > 0.
  tv log(tv a, double ulps) const {
    const double v = std::log(a.x);
    const double in = -std::log1p(-a.e / a.x);
    return {v, in + ulps * ulp_at(std::fabs(v) + in, f_)};
  }
  /// A library exp with `ulps` of error.
  tv exp(tv y, double ulps) const {
    const double v = std::exp(y.x);
    const double in = v * std::expm1(y.e);
    return {v, in + ulps * ulp_at(v + in, f_)};
  }
  /// A correctly rounded square root.
  tv sqrt(tv a) const {
    const double v = std::sqrt(a.x);
    return round({v, v - std::sqrt(std::max(0.0, a.x - a.e))});
  }

 private:
  format f_;
};

inline const arith f32{kF32};
inline const arith f64{kF64};

/// clamp(a, 0, 1): 1-Lipschitz, and exact when the computed value must be clamped too.
inline tv clamp01(tv a) {
  if (a.x - a.e >= 1.0) return {1.0, 0.0};
  if (a.x + a.e <= 0.0) return {0.0, 0.0};
  return {std::clamp(a.x, 0.0, 1.0), a.e};
}

/// The fp32 exponent fl(fl(2i)/d) of the power method, with its exact rounding error.
inline tv exponent_f32(std::int64_t two_i, std::int64_t d) {
  const float xf = static_cast<float>(two_i) / static_cast<float>(d);
  // x̂·d − 2i is exact in double (24-bit × ≤ 2^21 integer); the division adds a relative 2^−53.
  const double num =
      std::fabs(static_cast<double>(xf) * static_cast<double>(d) - static_cast<double>(two_i));
  return {static_cast<double>(two_i) / static_cast<double>(d),
          num / static_cast<double>(d) * (1 + 0x1p-50)};
}

/// Bound on |cos θ̂ − cos θ| (or sin) for a computed fp32 angle within dtheta of θ, evaluated by an
/// fp32 libm with `trig_ulps`, when the exact |cos θ| is c.
inline double trig_f32_bound(double c, double dtheta, double trig_ulps) {
  const double d = std::min(dtheta, 2.0);
  // |cos θ̂| < 1 unless θ̂ = 0 (then it is exact): its ulp is at most 2^−24.
  const double mag = std::min(c + d, 1.0 - 0x1p-25);
  return d + trig_ulps * ulp_at_finite(mag, kF32);
}

}  // namespace pev::metric
