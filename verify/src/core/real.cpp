#include "pev/core/real.h"

#include <mpfr.h>

#include <string>

#include "pev/core/error.h"

namespace pev {
namespace {

// Boost 1.74 sets mpfr_float precision in decimal digits d and uses ⌊1000d/301⌋ + (1 or 2) bits.
unsigned bits_for_digits10(unsigned d10) {
  return boost::multiprecision::detail::digits10_2_2(d10);
}

unsigned digits10_for_bits(unsigned bits) {
  unsigned d = 1;
  while (bits_for_digits10(d) < bits) ++d;
  return d;
}

}  // namespace

unsigned default_precision_bits() {
  return bits_for_digits10(BOOST_MULTIPRECISION_MPFR_DEFAULT_PRECISION);
}

unsigned set_precision_bits(unsigned bits) {
  if (bits < 24 || bits > 100000) {
    throw error("--precision: " + std::to_string(bits) + " bits is outside [24, 100000]");
  }
  real::default_precision(digits10_for_bits(bits));
  return precision_bits();
}

unsigned precision_bits() { return bits_for_digits10(real::default_precision()); }

precision_scope::precision_scope(unsigned bits) : saved_digits10_(real::default_precision()) {
  bits_ = set_precision_bits(bits);
}

precision_scope::~precision_scope() { real::default_precision(saved_digits10_); }

real pi() {
  real r;
  mpfr_const_pi(r.backend().data(), MPFR_RNDN);
  return r;
}

real real_from_int(std::int64_t v) {
  real r;
  // Exact at ≥ 64 bits of precision; rounded to nearest below that.
  mpfr_set_sj(r.backend().data(), static_cast<intmax_t>(v), MPFR_RNDN);
  return r;
}

}  // namespace pev
