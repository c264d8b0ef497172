#include "pev/scalar/round.h"

#include <mpfr.h>

#include <algorithm>
#include <type_traits>

#include "pev/core/mpfr_value.h"

namespace pev {
namespace {

template <class T>
T from_bits(typename scalar_traits<T>::bits_type b) {
  return scalar_traits<T>::from_bits(b);
}

// Encodes a finite value that is exactly representable in T (so no rounding happens here).
// half and bfloat16 values are also floats, so mpfr_get_flt is exact and the float → 16-bit
// conversion only repacks the bits.
template <class T>
T encode_exact(mpfr_srcptr v);

template <>
float encode_exact<float>(mpfr_srcptr v) {
  return mpfr_get_flt(v, MPFR_RNDN);
}
template <>
double encode_exact<double>(mpfr_srcptr v) {
  return mpfr_get_d(v, MPFR_RNDN);
}
template <>
half encode_exact<half>(mpfr_srcptr v) {
  return half(mpfr_get_flt(v, MPFR_RNDN));
}
template <>
bfloat16 encode_exact<bfloat16>(mpfr_srcptr v) {
  return bfloat16(mpfr_get_flt(v, MPFR_RNDN));
}

}  // namespace

// One rounding, directly from the multiprecision value (docs/numerics.md §4.1, §4.5): rounding
// first to double or float and then to T can turn a value just off a T midpoint into an exact
// midpoint and break the tie the wrong way (ml_dtypes PR #401: 1 + 2^−8 + 2^−40 → bf16 1.0 instead
// of 1.0078125).
//
// Write x = m·2^e with m ∈ [0.5, 1) (MPFR's convention). In the normal range T's spacing there is
// 2^(e−p); below the normal range it is the fixed subnormal quantum 2^(mpfr_emin − 1) (fp32 2^−149,
// fp16 2^−24, bf16 2^−133, fp64 2^−1074). So with q = max(e − p, mpfr_emin − 1), RN_T(x) is
// 2^q · rint(x·2^−q) with rint rounding half-way cases to even. Both scalings are exact in MPFR's
// (huge) default exponent range, and the integer rint(x·2^−q) ≤ 2^p fits in max(prec(x), p + 1)
// bits, so mpfr_rint's ternary-aware rounding is the only rounding. A carry to 2^p (the next
// binade) gives the right power of two; a result ≥ 2^mpfr_emax is beyond the format: ±Inf.
// (pev never narrows MPFR's exponent range; code that does so must restore it before calling.)
template <class T>
T round_to(const real& x) {
  using tr = scalar_traits<T>;
  using bits_type = typename tr::bits_type;
  mpfr_srcptr src = x.backend().data();
  const bits_type sign = mpfr_signbit(src) ? tr::sign_mask : bits_type{0};

  if (mpfr_nan_p(src)) {
    // Canonical quiet NaN: the exponent field all ones and only the top fraction bit set.
    return from_bits<T>(tr::exponent_mask | (bits_type{1} << (tr::mantissa_bits - 1)));
  }
  if (mpfr_inf_p(src)) return from_bits<T>(sign | tr::infinity_bits);
  if (mpfr_zero_p(src)) return from_bits<T>(sign);

  const mpfr_exp_t e = mpfr_get_exp(src);
  const mpfr_exp_t q = std::max<mpfr_exp_t>(e - tr::precision, tr::mpfr_emin - 1);
  mpfr_value t(std::max<mpfr_prec_t>(mpfr_get_prec(src), tr::precision + 1));
  mpfr_mul_2si(t.get(), src, -q, MPFR_RNDN);  // exact
  mpfr_rint(t.get(), t.get(), MPFR_RNDN);     // nearest integer, ties to even
  // Anything below half the smallest subnormal went to zero; keep the sign of x (−tiny → −0).
  if (mpfr_zero_p(t.get())) return from_bits<T>(sign);
  mpfr_mul_2si(t.get(), t.get(), q, MPFR_RNDN);  // exact
  if (mpfr_get_exp(t.get()) > tr::mpfr_emax) return from_bits<T>(sign | tr::infinity_bits);
  return encode_exact<T>(t.get());
}

// Exact: the real gets at least T's precision, and half and bfloat16 go through their exact float
// value.
template <class T>
real to_real(T v) {
  using tr = scalar_traits<T>;
  real r;
  mpfr_ptr d = r.backend().data();
  if (mpfr_get_prec(d) < tr::precision) mpfr_set_prec(d, tr::precision);
  if constexpr (std::is_same_v<T, double>) {
    mpfr_set_d(d, v, MPFR_RNDN);
  } else if constexpr (std::is_same_v<T, float>) {
    mpfr_set_flt(d, v, MPFR_RNDN);
  } else {
    mpfr_set_flt(d, static_cast<float>(v), MPFR_RNDN);
  }
  return r;
}

template float round_to<float>(const real&);
template double round_to<double>(const real&);
template half round_to<half>(const real&);
template bfloat16 round_to<bfloat16>(const real&);
template real to_real<float>(float);
template real to_real<double>(double);
template real to_real<half>(half);
template real to_real<bfloat16>(bfloat16);

}  // namespace pev
