#pragma once
// Standard-normal samples from splitmix64 with the same bits on every platform and standard
// library (std::normal_distribution's algorithm is the library's own): Marsaglia's polar form of
// the Box–Muller transform (docs/design.md §11.4). Each pair (u, v) is 2·unit() − 1 (exact); a pair
// with s = u² + v² in (0, 1) gives the two samples u·f and v·f, f = √(−2·ln s / s), else the next
// pair is drawn. ln s is MPFR's, correctly rounded to double; everything else is IEEE arithmetic
// (+, ×, ÷, √: correctly rounded, and not contracted into FMAs: -ffp-contract=off), so a seed
// gives the same samples wherever pev runs.

#include <cstdint>

#include "pev/core/splitmix.h"

namespace pev {

class normal_draws {
 public:
  /// Draws from splitmix64 started at `seed`.
  explicit normal_draws(std::uint64_t seed) : rng_(seed) {}
  /// The next standard-normal sample (u·f, then v·f of the same pair).
  double next();

 private:
  splitmix rng_;
  double spare_ = 0;
  bool has_spare_ = false;
};

}  // namespace pev
