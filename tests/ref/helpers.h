#pragma once
// Shared helpers of the reference tests.

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include "common/seed.h"
#include "pev/core/real.h"
#include "pev/spec/parse.h"

namespace pev::test {

inline spec::rope rope_spec(const std::string& body) {
  return std::get<spec::rope>(spec::parse_spec("rope:" + body));
}

inline double to_d(const real& v) { return v.convert_to<double>(); }

/// Relative difference |a − b| / |b| as a double.
inline double rel(const real& a, const real& b) { return to_d(abs(a - b) / abs(b)); }

}  // namespace pev::test
