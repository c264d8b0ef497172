#include "pev/metric/ulp.h"

#include <mpfr.h>

#include <algorithm>

#include "pev/scalar/round.h"

namespace pev::metric {
namespace {

// log2 ulp_T(y) for finite y (docs/numerics.md §3.1): with y = m·2^e, m ∈ [0.5, 1), i.e.
// 2^(e−1) ≤ |y| < 2^e, ulp = 2^(e−p), floored at the subnormal quantum 2^(mpfr_emin − 1)
// (fp32 2^−149, fp16 2^−24, bf16 2^−133, fp64 2^−1074), which is also ulp_T(0).
template <class T>
mpfr_exp_t ulp_exponent(mpfr_srcptr y) {
  using tr = scalar_traits<T>;
  const mpfr_exp_t floor = tr::mpfr_emin - 1;
  if (mpfr_zero_p(y)) return floor;
  return std::max<mpfr_exp_t>(mpfr_get_exp(y) - tr::precision, floor);
}

}  // namespace

template <class T>
real ulp_of(const real& y) {
  mpfr_srcptr src = y.backend().data();
  real r;
  mpfr_ptr d = r.backend().data();
  if (mpfr_nan_p(src)) {
    mpfr_set_nan(d);
  } else if (mpfr_inf_p(src)) {
    mpfr_set_inf(d, 1);
  } else {
    mpfr_set_ui_2exp(d, 1, ulp_exponent<T>(src), MPFR_RNDN);  // exact at any precision
  }
  return r;
}

template <class T>
real ulp_error(T computed, const real& exact) {
  using tr = scalar_traits<T>;
  mpfr_srcptr y = exact.backend().data();
  const typename tr::bits_type c_bits = tr::to_bits(computed);
  const bool c_nan = is_nan_bits<T>(c_bits);
  const bool y_nan = mpfr_nan_p(y) != 0;

  real r;
  mpfr_ptr d = r.backend().data();
  if (c_nan || y_nan) {
    if (c_nan && y_nan) {
      mpfr_set_zero(d, 1);
    } else {
      mpfr_set_inf(d, 1);
    }
    return r;
  }
  const bool c_negative = (c_bits & tr::sign_mask) != 0;
  if (mpfr_inf_p(y)) {
    // An infinite exact value is only matched by the same infinity.
    if (is_inf_bits<T>(c_bits) && c_negative == (mpfr_signbit(y) != 0)) {
      mpfr_set_zero(d, 1);
    } else {
      mpfr_set_inf(d, 1);
    }
    return r;
  }

  // A returned ±Inf for a finite y stands for ±2^emax, the first power of two past the format
  // (what RN with unbounded exponent range would give on overflow).
  real c;
  if (is_inf_bits<T>(c_bits)) {
    mpfr_set_si_2exp(c.backend().data(), c_negative ? -1 : 1, tr::mpfr_emax, MPFR_RNDN);
  } else {
    c = to_real(computed);
  }
  // |ĉ − y| rounded once at no less than the reference's precision: since ½ ulp is a power of
  // two, a difference ≤ ½ ulp stays ≤ ½ ulp after rounding, so correctly rounded results
  // score ≤ 0.5 and exact ties score exactly 0.5. Dividing by the ulp is an exact scaling.
  const mpfr_prec_t prec =
      std::max({mpfr_get_prec(y), mpfr_get_prec(d), static_cast<mpfr_prec_t>(tr::precision)});
  mpfr_set_prec(d, prec);
  mpfr_sub(d, c.backend().data(), y, MPFR_RNDN);
  mpfr_abs(d, d, MPFR_RNDN);
  mpfr_mul_2si(d, d, -ulp_exponent<T>(y), MPFR_RNDN);
  return r;
}

template real ulp_of<float>(const real&);
template real ulp_of<double>(const real&);
template real ulp_of<half>(const real&);
template real ulp_of<bfloat16>(const real&);
template real ulp_error<float>(float, const real&);
template real ulp_error<double>(double, const real&);
template real ulp_error<half>(half, const real&);
template real ulp_error<bfloat16>(bfloat16, const real&);

}  // namespace pev::metric
