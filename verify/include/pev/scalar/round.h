#pragma once
// Correct rounding from the reference's real to fp64, fp32, fp16 and bfloat16: one rounding, to
// nearest, ties to even, directly from the multiprecision value (never through float first;
// docs/numerics.md §4.1, §4.5), with gradual underflow, overflow to ±Inf and NaN.

#include "pev/core/real.h"
#include "pev/scalar/traits.h"

namespace pev {

/// RN_T(x): x rounded once to the nearest T, ties to even.
template <class T>
T round_to(const real& x);

/// The exact value of v as a real (NaN and ±Inf map to MPFR's NaN and ±Inf).
template <class T>
real to_real(T v);

extern template float round_to<float>(const real&);
extern template double round_to<double>(const real&);
extern template half round_to<half>(const real&);
extern template bfloat16 round_to<bfloat16>(const real&);
extern template real to_real<float>(float);
extern template real to_real<double>(double);
extern template real to_real<half>(half);
extern template real to_real<bfloat16>(bfloat16);

}  // namespace pev
