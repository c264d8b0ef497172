// The fast exact reference's start-up constants (fast_tables.h), computed once with raw MPFR at
// 320 bits (independent of pev's global precision, thread-safe initialization).

#include "fast_tables.h"

#include <cmath>
#include <limits>
#include <string>

#include "pev/core/error.h"

namespace pev::ref::fast_detail {

// Splits x into n doubles, each the nearest double to the remaining residual, and returns an
// upper bound on |x − Σd| (the final residual, rounded up), or +Inf if a subtraction was inexact
// (underflow) or a part is not finite. Each subtraction r − RN(r) is exact at r's precision: RN(r)
// is a multiple of r's last-bit weight and |r − RN(r)| < |r|.
double split(mpfr_srcptr x, double* d, int n) {
  mpfr_value r(mpfr_get_prec(x));
  mpfr_set(r.get(), x, MPFR_RNDN);
  for (int j = 0; j < n; ++j) {
    d[j] = mpfr_get_d(r.get(), MPFR_RNDN);
    if (!std::isfinite(d[j])) return std::numeric_limits<double>::infinity();
    if (mpfr_sub_d(r.get(), r.get(), d[j], MPFR_RNDN) != 0) {
      return std::numeric_limits<double>::infinity();
    }
  }
  mpfr_abs(r.get(), r.get(), MPFR_RNDN);
  return mpfr_get_d(r.get(), MPFR_RNDU);
}

constants make_constants() {
  constexpr mpfr_prec_t kPrec = 320;
  constexpr double kMpfrError = 0x1p-316;  // bound on the 320-bit evaluations below (|x| ≤ 2)
  constants c;
  mpfr_value pi(kPrec), a(kPrec), v(kPrec);
  mpfr_const_pi(pi.get(), MPFR_RNDN);
  auto need = [](double residual, double bound, const char* what) {
    if (!(residual + kMpfrError <= bound)) {
      throw error(std::string("fast reference: start-up constant ") + what + " is not accurate");
    }
  };
  double parts[2];
  for (int k = -kHalfN; k <= kHalfN; ++k) {
    mpfr_mul_si(a.get(), pi.get(), k, MPFR_RNDN);
    mpfr_div_2ui(a.get(), a.get(), kTableBits + 1, MPFR_RNDN);
    double* t = &c.trig[4 * static_cast<std::size_t>(k + kHalfN)];
    mpfr_sin(v.get(), a.get(), MPFR_RNDN);
    need(split(v.get(), parts, 2), kTau, "sin table");
    t[0] = parts[0];
    t[1] = parts[1];
    mpfr_cos(v.get(), a.get(), MPFR_RNDN);
    need(split(v.get(), parts, 2), kTau, "cos table");
    t[2] = parts[0];
    t[3] = parts[1];
  }
  mpfr_div_2ui(v.get(), pi.get(), 1, MPFR_RNDN);
  need(split(v.get(), parts, 2), kTau, "pi/2");
  c.pio2 = {parts[0], parts[1]};
  auto ratio = [&](long num, long den) {
    mpfr_set_si(v.get(), num, MPFR_RNDN);
    mpfr_div_si(v.get(), v.get(), den, MPFR_RNDN);
    return v.get();
  };
  need(split(ratio(-1, 6), parts, 2), kEpsC3, "-1/6");
  c.c3 = {parts[0], parts[1]};
  need(split(ratio(1, 24), parts, 2), kEpsC4, "1/24");
  c.c4 = {parts[0], parts[1]};
  c.s5 = mpfr_get_d(ratio(1, 120), MPFR_RNDN);
  c.s7 = mpfr_get_d(ratio(-1, 5040), MPFR_RNDN);
  c.s9 = mpfr_get_d(ratio(1, 362880), MPFR_RNDN);
  c.c6 = mpfr_get_d(ratio(-1, 720), MPFR_RNDN);
  c.c8 = mpfr_get_d(ratio(1, 40320), MPFR_RNDN);
  return c;
}

const constants& consts() {
  static const constants c = make_constants();
  return c;
}

}  // namespace pev::ref::fast_detail
