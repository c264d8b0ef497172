#include "pev/core/normal.h"

#include <mpfr.h>

#include <cmath>

namespace pev {
namespace {

// ln x correctly rounded to double (MPFR's, round to nearest), for x in (0, 1): the same bits on
// every platform, as a libm's log need not be.
double log_rn(double x) {
  mpfr_t m;
  mpfr_init2(m, 53);
  mpfr_set_d(m, x, MPFR_RNDN);  // exact
  mpfr_log(m, m, MPFR_RNDN);
  const double r = mpfr_get_d(m, MPFR_RNDN);  // exact: m holds 53 bits
  mpfr_clear(m);
  return r;
}

}  // namespace

double normal_draws::next() {
  if (has_spare_) {
    has_spare_ = false;
    return spare_;
  }
  for (;;) {
    const double u = 2 * rng_.unit() - 1, v = 2 * rng_.unit() - 1;
    const double s = u * u + v * v;
    if (!(s > 0 && s < 1)) continue;
    const double f = std::sqrt(-2 * log_rn(s) / s);
    spare_ = v * f;
    has_spare_ = true;
    return u * f;
  }
}

}  // namespace pev
