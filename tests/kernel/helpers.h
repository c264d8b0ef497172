#pragma once
// Shared helpers of the kernel tests: seeds, position sets, specs, output types.

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "common/seed.h"
#include "pev/core/splitmix.h"
#include "pev/impl/contract.h"
#include "pev/metric/error_model.h"
#include "pev/scalar/traits.h"
#include "pev/spec/parse.h"

namespace pev::test {

// The analytic error models live in the library (pev/metric/error_model.h).
using namespace pev::metric;  // NOLINT(google-build-using-namespace)

/// An unsigned integer from the environment, or `fallback`.
inline std::uint64_t env_count(const char* name, std::uint64_t fallback) {
  const char* env = std::getenv(name);
  return env ? std::strtoull(env, nullptr, 0) : fallback;
}

using pev::splitmix;  // pev/core/splitmix.h

/// Every p < dense, then per octave [2^k, 2^(k+1)) up to 2^top: its ends, 2^k + 1 and
/// `per_octave` deterministic samples. Sorted, unique.
inline std::vector<std::int64_t> octave_positions(std::int64_t dense, int top, int per_octave,
                                                  std::uint64_t seed) {
  std::vector<std::int64_t> p;
  for (std::int64_t i = 0; i < dense; ++i) p.push_back(i);
  splitmix rng(seed);
  for (int k = 0; k < top; ++k) {
    const std::int64_t lo = std::int64_t{1} << k;
    const std::int64_t hi = lo << 1;
    if (hi <= dense) continue;
    p.push_back(lo);
    p.push_back(lo + 1);
    p.push_back(hi - 1);
    for (int j = 0; j < per_octave; ++j) p.push_back(rng.in(lo, hi));
  }
  std::sort(p.begin(), p.end());
  p.erase(std::unique(p.begin(), p.end()), p.end());
  p.erase(std::remove_if(p.begin(), p.end(), [&](std::int64_t v) { return v < 0; }), p.end());
  return p;
}

using impl::t5_on_integer_boundary;  // pev/impl/contract.h

template <class E>
E parse_as(const std::string& text) {
  return std::get<E>(spec::parse_spec(text));
}

template <class T>
double as_double(T v) {
  return scalar_traits<T>::to_double(v);
}

}  // namespace pev::test
