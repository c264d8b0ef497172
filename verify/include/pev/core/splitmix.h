#pragma once
// splitmix64 (Steele, Lea, Flood 2014; Vigna's constants): deterministic samples from a seed, for
// sweeps and tests. Not for anything that needs statistical quality beyond sampling positions.

#include <cstdint>

namespace pev {

class splitmix {
 public:
  explicit splitmix(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  /// Uniform in [lo, hi) (modulo bias below 2^−40 for the ranges pev uses).
  std::int64_t in(std::int64_t lo, std::int64_t hi) {
    return lo + static_cast<std::int64_t>(next() % static_cast<std::uint64_t>(hi - lo));
  }
  /// Uniform in [0, 1), 53 bits.
  double unit() { return static_cast<double>(next() >> 11) * 0x1p-53; }

 private:
  std::uint64_t state_;
};

}  // namespace pev
