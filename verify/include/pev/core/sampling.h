#pragma once
// Octave sampling of positions: the one rule by which sweeps, live certification and the tests
// pick positions up to a limit. Every position below `dense_below`; then, for every octave
// [2^k, 2^(k+1)) that reaches past `dense_below`, its first position, (with `edges`) its second
// and last, and `per_octave` positions drawn from splitmix64 started at `seed`. The draws use
// only splitmix's integer arithmetic, so a seed gives the same positions on every platform and
// standard library.

#include <cstdint>
#include <vector>

#include "pev/core/splitmix.h"

namespace pev {

/// pev's one default seed: sweeps (`pev report`), live certification (`pev certify
/// --plugin/--exec`) and the property suites draw from it unless told otherwise (docs/design.md
/// §11.4).
inline constexpr std::uint64_t kDefaultSeed = 20261122;

struct octave_sampling {
  std::int64_t end = 0;          // positions < end
  std::int64_t dense_below = 0;  // every position below this
  int per_octave = 0;            // seeded draws per octave
  std::uint64_t seed = 0;
  bool edges = true;  // each octave's second and last positions too (its first always)
};

/// The positions of `s`, sorted and unique. The draws come from `rng` when one is given (its
/// state advances, for a caller that draws more from the same stream), else from a splitmix64
/// seeded with s.seed.
std::vector<std::int64_t> octave_positions(const octave_sampling& s, splitmix* rng = nullptr);

/// The octave of a position: 0 for p < 2, else ⌊log2 p⌋ (octave k holds [2^k, 2^(k+1))).
int octave_of(std::int64_t p);

}  // namespace pev
