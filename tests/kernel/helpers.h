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
#include "pev/core/sampling.h"
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
/// `per_octave` deterministic samples (pev/core/sampling.h). Sorted, unique.
inline std::vector<std::int64_t> octave_positions(std::int64_t dense, int top, int per_octave,
                                                  std::uint64_t seed) {
  return pev::octave_positions({std::int64_t{1} << top, dense, per_octave, seed, true});
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
