#pragma once
// The fast exact reference's start-up constants: the table of sin/cos at kπ/(2N), π/2 and the
// Taylor coefficients, computed once with raw MPFR (fast_tables.cpp); their accuracy is what
// fast_bound.cpp's proof assumes (τ, ε of −1/6 and 1/24), checked when they are computed.

#include <mpfr.h>

#include <array>

#include "fast_eft.h"
#include "pev/core/mpfr_value.h"

namespace pev::ref::fast_detail {

// Table of sin/cos at kπ/(2N), k = −N/2 … N/2: f = k/N + g with |g| ≤ 1/(2N).
constexpr int kTableBits = 9;
constexpr int kN = 1 << kTableBits;
constexpr int kHalfN = kN / 2;

// Splits x into n doubles, each the nearest double to the remaining residual, and returns an
// upper bound on |x − Σd| (the final residual, rounded up), or +Inf if a subtraction was inexact
// (underflow) or a part is not finite.
double split(mpfr_srcptr x, double* d, int n);

struct constants {
  // trig[4(k + N/2) + {0, 1, 2, 3}] = sin_hi, sin_lo, cos_hi, cos_lo of kπ/(2N).
  alignas(64) std::array<double, 4 * (kN + 1)> trig{};
  dd pio2;        // π/2, error ≤ 2^−105
  dd c3;          // −1/6, error ≤ 2^−108
  double s5 = 0;  // RN(1/120)
  double s7 = 0;  // RN(−1/5040)
  double s9 = 0;  // RN(1/362880)
  dd c4;          // 1/24, error ≤ 2^−110
  double c6 = 0;  // RN(−1/720)
  double c8 = 0;  // RN(1/40320)
};

constexpr double kTau = 0x1p-105;    // table entries and π/2
constexpr double kEpsC3 = 0x1p-108;  // −1/6
constexpr double kEpsC4 = 0x1p-110;  // 1/24

/// The constants, computed on first use (thread-safe).
const constants& consts();

}  // namespace pev::ref::fast_detail
