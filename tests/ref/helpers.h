#pragma once
// Shared helpers of the reference tests.

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include "pev/core/real.h"
#include "pev/spec/parse.h"

namespace pev::test {

inline spec::rope rope_spec(const std::string& body) {
  return std::get<spec::rope>(spec::parse_spec("rope:" + body));
}

inline double to_d(const real& v) { return v.convert_to<double>(); }

/// Relative difference |a − b| / |b| as a double.
inline double rel(const real& a, const real& b) { return to_d(abs(a - b) / abs(b)); }

/// Seed of a randomised test: PEV_SEED if set, else `fallback`; printed so a failure can be
/// replayed.
inline std::uint64_t test_seed(std::uint64_t fallback) {
  const char* env = std::getenv("PEV_SEED");
  const std::uint64_t seed = env ? std::strtoull(env, nullptr, 0) : fallback;
  std::cout << "seed: " << seed << " (replay with PEV_SEED=" << seed << ")\n";
  return seed;
}

}  // namespace pev::test
