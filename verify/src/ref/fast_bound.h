#pragma once
// The fast exact reference's error bound E(p, i) = E0 + |p|·E1_i: its proof and the code that
// computes it are in fast_bound.cpp; the evaluation it covers is in fast_scalar.h, fast_round.h
// and fast_avx2.cpp.

#include <mpfr.h>

#include "pev/ref/fast.h"

namespace pev::ref::fast_detail {

constexpr double kU = 0x1p-53;
constexpr double kU2 = kU * kU;
constexpr double kSafety = 1 + 0x1p-20;

// Guarded ranges: frequencies and rotation inputs outside them go to the MPFR path (no underflow in
// the error terms of two-products, no overflow anywhere).
constexpr double kMinMagnitude = 0x1p-600;
constexpr double kMaxMagnitude = 0x1p600;

// Position-independent error bounds E0[stage][general] for an attention factor |m| ≤ m_abs with
// relative residual dm and the MPFR path's working precision W.
void position_independent_bound(double m_abs, double dm, unsigned work_bits, double (&e0)[2][2]);

// Prepares θ (an MPFR value of the reference) for the fast path; m_abs scales the value bound.
frequency prepare(mpfr_srcptr theta, double m_abs, unsigned work_bits);

}  // namespace pev::ref::fast_detail
