#pragma once
// The reference's arbitrary-precision real: Boost.Multiprecision on MPFR, variable precision.
//
// The precision is process-wide (Boost 1.74 keeps the default precision in a global): set it once
// with set_precision_bits() before computing, or scope it with precision_scope (single-threaded
// use). Boost sets precisions in decimal digits; pev picks the smallest digit count whose binary
// precision is at least the requested number of bits and reports the bits actually used.

#include <boost/multiprecision/mpfr.hpp>
#include <cstdint>

namespace pev {

// Expression templates are off: `auto` on an expression would otherwise capture dangling
// temporaries, and the reference is dominated by MPFR's own cost, not by temporaries.
using real = boost::multiprecision::number<boost::multiprecision::mpfr_float_backend<0>,
                                           boost::multiprecision::et_off>;

/// Default reference precision in bits (build option PEV_MPFR_DEFAULT_DIGITS10; 161 bits by
/// default).
unsigned default_precision_bits();
/// Sets the precision of newly created reals to at least `bits` (≥ 24); returns the bits in effect.
unsigned set_precision_bits(unsigned bits);
/// Binary precision, in bits, of newly created reals.
unsigned precision_bits();

/// Sets the precision for its lifetime and restores the previous one.
class precision_scope {
 public:
  explicit precision_scope(unsigned bits);
  ~precision_scope();
  precision_scope(const precision_scope&) = delete;
  precision_scope& operator=(const precision_scope&) = delete;
  /// Bits in effect inside the scope.
  unsigned bits() const { return bits_; }

 private:
  unsigned saved_digits10_;
  unsigned bits_;
};

/// π at the current precision.
real pi();
/// An exact real from a 64-bit integer (no rounding through double).
real real_from_int(std::int64_t v);

}  // namespace pev
