// pev::normal_draws (pev/core/normal.h): the live inputs' standard-normal samples are the same
// bits on every platform and standard library, so they are pinned here exactly.

#include <gtest/gtest.h>

#include <cmath>

#include "pev/core/normal.h"
#include "pev/core/sampling.h"

namespace pev {
namespace {

// The first draws of the live inputs' stream under the default seed (certify/live.cpp draws from
// --seed + 1), computed by this implementation: splitmix64, exact (u, v), MPFR's correctly rounded
// ln s and IEEE arithmetic, so any platform must give these bits.
TEST(NormalDraws, PinnedDrawsOfTheDefaultLiveSeed) {
  normal_draws n(kDefaultSeed + 1);
  const double expected[] = {0x1.94f4caaa0dd9ep-1,  0x1.e3369c3b66f1fp-1,  -0x1.a12eceff6c71p-2,
                             -0x1.b3250f98a829bp-2, -0x1.d0e0fc192af35p-1, 0x1.7d9c768efcbdbp-2};
  for (double e : expected) EXPECT_EQ(n.next(), e);
}

// The two samples of a pair share f: u·f then v·f, with (u, v) the first pair of splitmix's
// unit() draws inside the unit disc.
TEST(NormalDraws, AnAcceptedPairGivesTwoSamples) {
  splitmix rng(7);
  double u = 0, v = 0, s = 0;
  do {
    u = 2 * rng.unit() - 1;
    v = 2 * rng.unit() - 1;
    s = u * u + v * v;
  } while (!(s > 0 && s < 1));
  normal_draws n(7);
  const double a = n.next(), b = n.next();
  const double f = std::sqrt(-2 * std::log(s) / s);  // libm's log: within an ulp or so
  EXPECT_DOUBLE_EQ(a / u, b / v);                    // the same f, up to the products' rounding
  EXPECT_NEAR(a / u, f, 1e-12 * f);
}

// Mean 0 and variance 1 within a few standard errors of 200000 draws.
TEST(NormalDraws, MomentsOfAStandardNormal) {
  normal_draws n(1);
  constexpr int kN = 200000;
  double sum = 0, sum2 = 0;
  for (int i = 0; i < kN; ++i) {
    const double x = n.next();
    sum += x;
    sum2 += x * x;
  }
  EXPECT_NEAR(sum / kN, 0.0, 5 / std::sqrt(kN));
  EXPECT_NEAR(sum2 / kN, 1.0, 5 * std::sqrt(2.0 / kN));
}

}  // namespace
}  // namespace pev
