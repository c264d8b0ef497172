#pragma once
// The seed of a randomised test (docs/design.md §11.4): PEV_SEED from the environment if set, else
// the test's fixed default; printed so that any run can be replayed.

#include <cstdint>
#include <cstdlib>
#include <iostream>

namespace pev::test {

/// PEV_SEED if set (and non-empty), else `fallback`; prints "seed: N (replay with PEV_SEED=N)".
inline std::uint64_t test_seed(std::uint64_t fallback) {
  const char* env = std::getenv("PEV_SEED");
  const std::uint64_t seed = env && *env ? std::strtoull(env, nullptr, 0) : fallback;
  std::cout << "seed: " << seed << " (replay with PEV_SEED=" << seed << ")\n";
  return seed;
}

}  // namespace pev::test
