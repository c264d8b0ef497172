#pragma once
// Ulp metrics (docs/numerics.md §3.1, §3.2), always in the target type's units.
//
// - ulp_distance: integer ordinal distance between two encodings of T, counting across zero (the
//   monotone mapping sends −0 and +0 to the same ordinal). Distance to the correctly rounded value:
//   0 = correctly rounded, ≤ 1 = faithful.
// - ulp_error: |ŷ − y| / ulp_T(y) against the exact value y, with ulp_T(y) = 2^(e−p) for
//   2^(e−1) ≤ |y| < 2^e, floored at T's subnormal ulp. A correctly rounded result scores ≤ 0.5. A
//   returned ±Inf where y is finite is scored as ±2^(emax+1) with IEEE's emax (fp32 2^128: the
//   first power of two past the format; 2^mpfr_emax in MPFR's convention).

#include <cstdint>
#include <limits>

#include "pev/core/real.h"
#include "pev/scalar/traits.h"

namespace pev::metric {

/// Ordinal of an encoding: monotone in the value, −0 and +0 both 0, ±Inf one past ±max finite.
/// NaN has no ordinal (the result for a NaN encoding lies beyond ±Inf's and means nothing; see
/// ulp_distance). Inline: the comparison engine computes one per compared value.
/// Sign-magnitude encodings order like the values within each sign, so the magnitude bits are the
/// ordinal of a non-negative value and their negation that of a negative one; −0 and +0 both map
/// to 0, which makes distances count across zero (−min_subnormal to +min_subnormal is 2).
template <class T>
inline std::int64_t ordinal(T v) {
  using tr = scalar_traits<T>;
  using bits_type = typename tr::bits_type;
  const bits_type b = tr::to_bits(v);
  const auto magnitude = static_cast<std::int64_t>(b & static_cast<bits_type>(~tr::sign_mask));
  return (b & tr::sign_mask) != 0 ? -magnitude : magnitude;
}

/// Ordinal distance |ord(a) − ord(b)|; UINT64_MAX if exactly one of them is NaN, 0 if both are.
template <class T>
inline std::uint64_t ulp_distance(T a, T b) {
  using tr = scalar_traits<T>;
  const bool a_nan = is_nan_bits<T>(tr::to_bits(a));
  const bool b_nan = is_nan_bits<T>(tr::to_bits(b));
  if (a_nan && b_nan) return 0;
  if (a_nan || b_nan) return std::numeric_limits<std::uint64_t>::max();
  // For fp64 the difference of ordinals can exceed INT64_MAX (−max to +max is ≈ 2^64 − 2^53);
  // the difference of the two's-complement images modulo 2^64 is exact because it is < 2^64.
  const auto oa = static_cast<std::uint64_t>(ordinal(a));
  const auto ob = static_cast<std::uint64_t>(ordinal(b));
  return ordinal(a) >= ordinal(b) ? oa - ob : ob - oa;
}

/// ulp_T(y) for a finite real y (y = 0 gives the subnormal ulp); a power of two. Not defined by
/// docs/numerics.md §3.1 for non-finite y: NaN gives NaN, ±Inf gives +Inf.
template <class T>
real ulp_of(const real& y);

/// |computed − exact| / ulp_T(exact). NaN computed or exact gives +Inf unless both are NaN (0).
template <class T>
real ulp_error(T computed, const real& exact);

extern template real ulp_of<float>(const real&);
extern template real ulp_of<double>(const real&);
extern template real ulp_of<half>(const real&);
extern template real ulp_of<bfloat16>(const real&);
extern template real ulp_error<float>(float, const real&);
extern template real ulp_error<double>(double, const real&);
extern template real ulp_error<half>(half, const real&);
extern template real ulp_error<bfloat16>(bfloat16, const real&);

}  // namespace pev::metric
