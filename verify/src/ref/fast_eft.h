#pragma once
// The fast exact reference's error-free transformations and double-double arithmetic (the
// operations whose error bounds fast_bound.cpp's proof uses: two_sum, mul, add, mod4).

#include <bit>
#include <cmath>
#include <cstdint>

namespace pev::ref::fast_detail {

constexpr double pow2(int k) {  // 2^k for a normal exponent
  return std::bit_cast<double>(static_cast<std::uint64_t>(k + 1023) << 52);
}

// ---------------------------------------------------------------------------------------------
// Error-free transformations and double-double arithmetic. A double-double x = hi + lo is
// normalized when |lo| ≤ u|hi| (true for every output below).

struct dd {
  double hi = 0;
  double lo = 0;
};

// s + e = a + b exactly (Knuth).
[[gnu::always_inline]] inline dd two_sum(double a, double b) {
  const double s = a + b;
  const double bb = s - a;
  const double e = (a - (s - bb)) + (b - bb);
  return {s, e};
}

// s + e = a + b exactly when a = 0 or exponent(a) ≥ exponent(b) (Dekker).
[[gnu::always_inline]] inline dd fast_two_sum(double a, double b) {
  const double s = a + b;
  return {s, b - (s - a)};
}

[[gnu::always_inline]] inline dd neg(dd a) { return {-a.hi, -a.lo}; }

// Sum of two double-doubles ("sloppy" addition, normalized by an exact two-sum):
// |error| ≤ u|v| + u|w| ≤ 3.001u²(|a| + |b|) ≤ 4u²(|a| + |b|) whatever the cancellation
// (v = fl(a.lo + b.lo), |v| ≤ (1 + u)u(|a.hi| + |b.hi|); w = fl(s.lo + v), |w| ≤ 2.0001u(…)).
[[gnu::always_inline]] inline dd add(dd a, dd b) {
  const dd s = two_sum(a.hi, b.hi);
  const double v = a.lo + b.lo;
  const double w = s.lo + v;
  return two_sum(s.hi, w);
}

// Arithmetic that needs a two-product: hardware FMA (F = true; only instantiated inside functions
// compiled for an FMA target) or Dekker's product with Veltkamp splitting (F = false).
template <bool F>
struct arith {
  // p + e = a·b exactly.
  [[gnu::always_inline]] static dd two_prod(double a, double b) {
    const double p = a * b;
    if constexpr (F) {
      return {p, __builtin_fma(a, b, -p)};
    } else {
      constexpr double kSplit = 134217729.0;  // 2^27 + 1
      const double ta = kSplit * a;
      const double ah = ta - (ta - a);
      const double al = a - ah;
      const double tb = kSplit * b;
      const double bh = tb - (tb - b);
      const double bl = b - bh;
      return {p, ((ah * bh - p) + ah * bl + al * bh) + al * bl};
    }
  }

  // a·b for normalized a, b: a·b = a.hi·b.hi + a.hi·b.lo + a.lo·b.hi + a.lo·b.lo, the last term
  // dropped (≤ u²), the middle two rounded (≤ 2u²), their sum (≤ 2.01u²) and the sum with the
  // exact error of the leading product (≤ 3.02u²) rounded: |error| ≤ 8.1u²|a.hi·b.hi| ≤ 9u²|a||b|.
  [[gnu::always_inline]] static dd mul(dd a, dd b) {
    const dd p = two_prod(a.hi, b.hi);
    const double t = a.hi * b.lo + a.lo * b.hi;
    return fast_two_sum(p.hi, p.lo + t);
  }

  // a·b for normalized a and a double b: |error| ≤ u²|ab| + 2.01u²|ab| ≤ 4u²|a||b|.
  [[gnu::always_inline]] static dd mul_d(dd a, double b) {
    const dd p = two_prod(a.hi, b);
    return fast_two_sum(p.hi, p.lo + a.lo * b);
  }
};

// x − 4·rint(x/4), exactly, in [−2, 2]. For |x| < 2^52, x/4 is rounded to an integer by the shift
// 1.5·2^52 (exact, ties to even); x and 4k are multiples of min(ulp(x), 4) and |x − 4k| ≤ 2 ≤ |x|
// (or k = 0), so the difference is representable. Larger |x| are first reduced by fmod (exact).
[[gnu::always_inline]] inline double mod4(double x) {
  if (std::fabs(x) >= 0x1p52) [[unlikely]] {
    x = std::fmod(x, 4.0);
  }
  constexpr double kShift = 0x1.8p52;
  const double k = (x * 0.25 + kShift) - kShift;
  return x - 4.0 * k;
}

// Nearest integer of |x| ≤ 2^51 (ties to even), exactly.
[[gnu::always_inline]] inline double nearest(double x) {
  constexpr double kShift = 0x1.8p52;
  return (x + kShift) - kShift;
}

}  // namespace pev::ref::fast_detail
