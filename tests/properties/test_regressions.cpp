// Counterexamples found by the property suites, kept as deterministic regression cases (STYLE §8).

#include <gtest/gtest.h>

namespace pev {
namespace {

TEST(PropertyRegressions, Placeholder) { SUCCEED(); }

}  // namespace
}  // namespace pev
