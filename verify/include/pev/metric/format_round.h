#pragma once
// Rounding a double into a narrower binary format, on the encoding (no libm): the recipe replay's
// intervals (docs/numerics.md §13.7) round their ends to a vLLM cache's and the output's format.
// One owner for these helpers: the smallest normal number, round-to-nearest-even, the next value
// up, and whether one format holds every value of another.

#include <bit>
#include <cmath>
#include <cstdint>

#include "pev/metric/error_model.h"

namespace pev::metric {

/// The smallest normal number of f, 2^emin (exact: a double's exponent field).
inline double min_normal(format f) {
  return std::bit_cast<double>(static_cast<std::uint64_t>(1023 + f.emin) << 52);
}

/// x rounded to nearest (ties to even) in format f, from a double (no overflow: |x| is a table
/// value's). Where |x| is a normal number of f, on the encoding: the significand rounded to f.p
/// bits, ties to even (a carry into the exponent is the next binade's first value, as it should
/// be); below, x/ulp is an integer-spaced significand, so nearbyint rounds it as the format would.
inline double round_in(double x, format f) {
  if (!std::isfinite(x) || x == 0) return x;
  if (std::fabs(x) >= min_normal(f)) {
    const int shift = 53 - f.p;
    auto b = std::bit_cast<std::uint64_t>(x);
    b += ((std::uint64_t{1} << (shift - 1)) - 1) + ((b >> shift) & 1);
    b &= ~((std::uint64_t{1} << shift) - 1);
    return std::bit_cast<double>(b);
  }
  const double u = ulp_at_finite(std::fabs(x), f);
  return std::nearbyint(x / u) * u;
}

/// Whether format `a` holds every value of format `b` (fp32 and fp64 hold the 16-bit formats).
constexpr bool holds_every(format a, format b) { return a.p >= b.p && a.emin <= b.emin; }

/// The value of format f after x (x finite, in f): the next one up.
inline double next_up(double x, format f) {
  // A normal value of f: one unit in its last place on the encoding, away from zero for x > 0 and
  // towards it for x < 0 (a borrow from −2^e lands on the binade below, its spacing halved).
  if (std::fabs(x) >= min_normal(f) * 2) {
    const std::uint64_t unit = std::uint64_t{1} << (53 - f.p);
    const auto b = std::bit_cast<std::uint64_t>(x);
    return std::bit_cast<double>(x > 0 ? b + unit : b - unit);
  }
  if (x >= 0) return x + ulp_at_finite(x, f);
  double u = ulp_at_finite(-x, f);
  // −2^e: the values above it are the binade below's, half as far apart (not subnormals).
  const bool power_of_two = (std::bit_cast<std::uint64_t>(x) & ((std::uint64_t{1} << 52) - 1)) == 0;
  if (power_of_two && u > ulp_at_finite(0, f)) u /= 2;
  return x + u;
}

}  // namespace pev::metric
