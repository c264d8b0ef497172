// Fast exact reference: double-double evaluation with a rigorous error bound, a rounding test, and
// the MPFR path where the test cannot decide (Ziv's strategy). See pev/ref/fast.h for the outline.
//
// ERROR BOUND (all figures are absolute errors, u = 2^−53, every double operation rounds to
// nearest, no overflow or underflow: frequencies, positions and inputs outside the guarded ranges
// go to the MPFR path). V is the value the MPFR path holds before pev::round_to<T> (for RoPE V =
// RN_W(RN_W(cos(RN_W(p·θ)))·m) at its working precision W ≥ precision_bits() + 64); v = vh + vl is
// the fast value. We prove |v − V| ≤ E(p, i) = E0 + |p|·E1_i with
//
//   (1) quarter-turn reduction. q = 2θ/π (θ the MPFR path's own frequency, exact) is stored as
//       q0 + q1 + q2 + q3 (each the nearest double to the remaining residual) and the residual
//       δq = |q − Σq_j| is computed in MPFR at prec(θ) + 128 bits, plus |q|·2^(3 − prec) for the
//       rounding of 2θ/π itself. p is one exact double (|p| ≤ 2^53) or two (p = p_hi + p_lo, 31 and
//       32 significant bits). X = p·q is formed from exact two-products x·q_j = h_j + l_j (j ≤ 2)
//       and h3 = fl(x·q3) (error ≤ u|x·q3|): the per-|p| error is e_q = δq + 2u|q3|. Every term is
//       then reduced modulo 4 exactly (x − 4·rint(x/4) is exact: see mod4) and the terms are
//       summed:
//         - "small" path (one part, |h0| < 2^50): s = mod4(h0) + (l0 + h1) by exact two-sums, the
//           four tiny terms (|l1|, |h2| ≤ 2^−56, |l2|, |h3| ≤ 2^−109) in double: rounding error
//           ≤ 2^−108 + 2^−106.9 + 2^−104.7 < 2^−103 =: E_A,small;
//         - general path (≤ 14 terms): after each exact two-sum the high part is reduced mod 4
//           (|s| ≤ 2, so each two-sum error is ≤ u·4 = 2^−51) and the errors accumulate in one
//           double e; after k steps |e| ≤ k·2^−51, so the total rounding error is
//           ≤ Σ_k u·k·2^−51 ≤ 15·16/2·2^−104 = 120·2^−104 =: E_A,general.
//       Then X ≡ n + k/512 + g (mod 4) exactly in terms of the computed sum (the splits are exact
//       by Sterbenz's lemma), |g| ≤ 1/1024 + 2^−51.
//   (2) r = g·π/2 as dd_mul(g, π/2 as a double-double P): |P − π/2| ≤ 2^−105 (checked at start-up),
//       dd_mul error ≤ 9u²|g|·π/2 (see mul): ε_B ≤ 2^−10·(1 + 2^−40)·(2^−105 + 9u²·π/2).
//       Angle error (radians) from (1)–(2): (π/2)(E_A + |p|·e_q) + ε_B; |sin x − sin y| ≤ |x − y|.
//       |r| ≤ ρ = 1.534e-3 (> (π/2)(2^−10 + 2^−51)(1 + 2^−40)).
//   (3) sin r and cos r − 1 of the double-double r (Taylor, truncated after r^9 and r^8: remainders
//       ≤ ρ^11/11! ≈ 2^−128 and ρ^10/10! ≈ 2^−115.3): the leading coefficients −1/6 and 1/24 are
//       double-doubles, the tails are evaluated in double from z = fl(r_h²) (relative error
//       ≤ 6.1u of the leading tail term, bounded by 16u below); the chain is given in
//       poly_error(). Result: ε_sin ≈ 2^−103.6, ε_cos−1 ≈ 2^−114.4.
//   (4) sin(a + r) = S_a + (S_a·(cos r − 1) + C_a·sin r), cos(a + r) = C_a + (C_a·(cos r − 1) −
//       S_a·sin r) with S_a, C_a = sin, cos of kπ/1024 from the start-up table (double-doubles with
//       error ≤ τ = 2^−105, checked), dd_mul (≤ 9u²|a||b|) and add (≤ 4u²(|a| + |b|)). The quadrant
//       only swaps and negates. ε_trig is computed in poly_error(); ≈ 2^−102.2.
//   (5) multiplication by m (double-double, residual δm from MPFR; 9u²) and the MPFR path's own
//       roundings: angle 2^−W·|p·θ|, cos/sin 2^−W, product with m 2^−W·|m|.
// So E0 = |m|·((π/2)E_A + ε_B + ε_trig + 9u² + δm/|m| + 2.01·2^−W)·(1 + 2^−20) and
// E1_i = |m|·((π/2)·e_q,i + 2^−W·|θ_i|)·(1 + 2^−20); the factor 1 + 2^−20 absorbs the roundings of
// the bound's own evaluation and the |v| ≤ 1 + 2^−90 approximations. For |p| < 2^31 and
// θ ≤ 1, E ≈ 2^−96.4·|m| (general path) or 2^−101.6·|m| (small path).
//
// DOUBLE STAGE (tried first for fp32/fp16/bf16 targets, when one part holds p and |h0| < 2^50):
// a short reduction X ≈ fl(mod4(h0) + fl(l0 + fl(x·q1))): the three roundings ≤ 2^−56, 2^−55 and
// u·2.25 = 2^−51.83, the dropped l1 and x·q2 (≤ 2^−56 each under |h0| < 2^50) and x·q3 (≤ 2^−109)
// total < 2^−51.39 quarter turns = 2^−50.74 rad; the split into n, k, g is exact as above (g one
// double, |g| ≤ 2^−10). r = fl(g·P_h): |r − g·π/2| ≤ |g|·2^−53 + u|r| ≤ 2^−61.8;
// t_s = r·z·(S3 + z·S5) ≈ sin r − r (truncation ≤ ρ^7/7! ≤ 2^−77.7, rounding ≤ 5.1u·ρ³/6 ≤ 2^−81)
// and v_c = z·(−½ + z·(C4 + z·C6)) ≈ cos r − 1 (≤ ρ^8/8! + 5u·ρ²/2 ≤ 2^−70.3), z = fl(r²), the
// coefficients RN(±1/k!); then sin(a + r) = S_h + fl(C_h·r + fl(S_h·v_c + fl(C_h·t_s + S_l)))
// (three roundings of magnitudes ≤ 2^−9.34, 2^−19.6, 2^−30.5: ≤ 2^−62.3 with FMA, ≤ 2^−61.3 with
// separate products) and cos(a + r) likewise, each kept as the exact pair fast_two_sum(S_h, ·)
// (|S_h| ≥ 2^−8.35 > 2^−9.34 or S_h = 0); the dropped products S_l·v_c, (C_l + δC)(r + t_s), δS
// add ≤ 2^−62.2. Total < 2^−50.74 + 2^−59.9 < 2^−50.73: the stage uses 2^−50 in place of
// (π/2)E_A + ε_B + ε_trig in E0 (same E1). Its rounding test is the interval one
// (try_round_interval). What it cannot decide (≈ 2^−24 of fp32 values in [½, 1), more for small
// values: the bound is absolute) goes to the double-double stage.
//
// ROUNDING TEST (try_round, double-double stage): y = RN_T(vh) exactly (rn_bits), d = (vh − y) + vl
// where vh − y is exact (Sterbenz) and the addition's error ≤ u|d| is added to E. RN_T(x) = y for
// every x with −½gap_below < x − y < ½gap_above (strictly: no ties), so if d + E' < ½gap_above and
// d − E' > −½gap_below then RN_T(V) = y. The comparisons are against powers of two, so the
// monotonicity of rounding makes the floating-point comparisons sound. A zero y also needs the
// sign of V (|d| > E'), which RN_T(V) = ±0 carries; beyond the format's range, RN_T(V) = ±Inf
// when |V| − (max + ½ulp(max)) > E' is certain.

#include "pev/ref/fast.h"

#include <mpfr.h>

#include <array>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <string>
#include <type_traits>

#include "pev/core/error.h"
#include "pev/scalar/round.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

namespace pev::ref {
namespace {

using fast_detail::frequency;
using fast_detail::vector_freqs;

constexpr double kU = 0x1p-53;
constexpr double kU2 = kU * kU;
constexpr double kPiO2Up = 1.5707963267948968;  // ≥ π/2
constexpr double kSafety = 1 + 0x1p-20;

// Table of sin/cos at kπ/(2N), k = −N/2 … N/2: f = k/N + g with |g| ≤ 1/(2N).
constexpr int kTableBits = 9;
constexpr int kN = 1 << kTableBits;
constexpr int kHalfN = kN / 2;
constexpr double kRho = 1.534e-3;  // ≥ |r| = |g|·π/2 (with the slack of the last two-sum)
static_assert(kPiO2Up * (1.0 / (2 * kN) + 0x1p-51) * (1 + 0x1p-40) < kRho);

// Guarded ranges: frequencies and rotation inputs outside them go to the MPFR path (no underflow in
// the error terms of two-products, no overflow anywhere).
constexpr double kMinMagnitude = 0x1p-600;
constexpr double kMaxMagnitude = 0x1p600;

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

// ---------------------------------------------------------------------------------------------
// Start-up constants, computed once with raw MPFR at 320 bits (independent of pev's global
// precision, thread-safe initialization).

class mp {
 public:
  explicit mp(mpfr_prec_t prec) { mpfr_init2(v_, prec); }
  ~mp() { mpfr_clear(v_); }
  mp(const mp&) = delete;
  mp& operator=(const mp&) = delete;
  mpfr_ptr get() { return v_; }

 private:
  mpfr_t v_;
};

// Splits x into n doubles, each the nearest double to the remaining residual, and returns an
// upper bound on |x − Σd| (the final residual, rounded up), or +Inf if a subtraction was inexact
// (underflow) or a part is not finite. Each subtraction r − RN(r) is exact at r's precision: RN(r)
// is a multiple of r's last-bit weight and |r − RN(r)| < |r|.
double split(mpfr_srcptr x, double* d, int n) {
  mp r(mpfr_get_prec(x));
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

constants make_constants() {
  constexpr mpfr_prec_t kPrec = 320;
  constexpr double kMpfrError = 0x1p-316;  // bound on the 320-bit evaluations below (|x| ≤ 2)
  constants c;
  mp pi(kPrec), a(kPrec), v(kPrec);
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

// ---------------------------------------------------------------------------------------------
// The static part of the error bound (see the header comment), for |m| = 1.

struct static_bounds {
  double small;    // E0 (unit m, no MPFR-path terms) after the small-path reduction
  double general;  // … after the general reduction
};

constexpr static_bounds poly_error() {
  constexpr double u = kU, u2 = kU2, rho = kRho, rho2 = kRho * kRho;
  // r² as a normalized double-double: |r_l|² + rounding of the fma (or of the two-step sum).
  constexpr double eps_r2 = 7 * u2 * rho2;
  // sin r = r + r·us, us = r2·ws, ws = −1/6 + ts (ts ≈ r²/120 evaluated in double).
  constexpr double eps_ts = 16 * u * rho2 / 120;
  constexpr double eps_ws = eps_ts + kEpsC3 + u2 / 3;
  constexpr double ws_max = 0.17;
  constexpr double eps_us = eps_r2 * ws_max + rho2 * eps_ws + 9 * u2 * rho2 * ws_max;
  constexpr double us_max = rho2 * ws_max;
  constexpr double eps_rus = rho * eps_us + 9 * u2 * rho * us_max;
  // ρ^11/11! < 2^−128: bounded by 2^−127.
  constexpr double eps_sr = eps_rus + 4 * u2 * (rho + rho * us_max) + 0x1p-127;
  // cos r − 1 = r2·wc, wc = −1/2 + r2·ic, ic = 1/24 + jc (jc ≈ −r²/720 in double).
  constexpr double eps_jc = 16 * u * rho2 / 720;
  constexpr double eps_ic = eps_jc + kEpsC4 + u2 / 12;
  constexpr double ic_max = 0.0417;
  constexpr double eps_kc = eps_r2 * ic_max + rho2 * eps_ic + 9 * u2 * rho2 * ic_max;
  constexpr double eps_wc = eps_kc + 0.51 * u2;
  // ρ^10/10! < 2^−115.2: bounded by 2^−115.
  constexpr double eps_vc = eps_r2 * 0.51 + rho2 * eps_wc + 9 * u2 * rho2 * 0.51 + 0x1p-115;
  constexpr double vc_max = 0.51 * rho2;
  constexpr double sr_max = rho * (1 + 1e-6);
  // Reconstruction with the table (τ per entry), two dd_mul, the inner and the outer addition.
  constexpr double eps_trig = kTau * (1 + sr_max + vc_max) + (1 + kTau) * (eps_vc + eps_sr) +
                              9 * u2 * (vc_max + sr_max) * (1 + 1e-6) +
                              4 * u2 * (vc_max + sr_max) * (1 + 1e-6) +
                              4 * u2 * (1 + sr_max + vc_max) * (1 + 1e-6);
  // r = g·P: |g| ≤ 2^−10(1 + 2^−40).
  constexpr double eps_b = 0x1p-10 * (1 + 0x1p-40) * (kTau + 9 * u2 * kPiO2Up);
  constexpr double e_small = 0x1p-103;
  constexpr double e_general = 120 * 0x1p-104 * (1 + 0x1p-40);
  return {kPiO2Up * e_small + eps_b + eps_trig, kPiO2Up * e_general + eps_b + eps_trig};
}

constexpr static_bounds kStatic = poly_error();
static_assert(kStatic.small < 0x1p-101 && kStatic.general < 0x1p-96);

// The double stage (short reduction only): 2^−50 in all (header comment).
constexpr double kStaticDouble = 0x1p-50;

// Position-independent error bounds E0[stage][general] for an attention factor |m| ≤ m_abs with
// relative residual dm and the MPFR path's working precision W.
void position_independent_bound(double m_abs, double dm, unsigned work_bits, double (&e0)[2][2]) {
  const double w = std::ldexp(1.0, -static_cast<int>(work_bits));
  auto f = [&](double e) { return m_abs * (e + 9 * kU2 + dm + 2.01 * w) * kSafety; };
  e0[0][0] = e0[0][1] = f(kStaticDouble);
  e0[1][0] = f(kStatic.small);
  e0[1][1] = f(kStatic.general);
}

// ---------------------------------------------------------------------------------------------
// Frequencies.

// Prepares θ (an MPFR value of the reference) for the fast path; m_abs scales the value bound.
frequency prepare(mpfr_srcptr theta, double m_abs, unsigned work_bits) {
  frequency f;
  if (mpfr_zero_p(theta)) {
    f.k = frequency::kind::zero;
    f.t[0] = mpfr_signbit(theta) ? -0.0 : 0.0;
    return f;
  }
  if (!mpfr_number_p(theta)) return f;  // mpfr_only
  {
    mp a(mpfr_get_prec(theta));
    mpfr_abs(a.get(), theta, MPFR_RNDN);
    if (mpfr_cmp_d(a.get(), kMinMagnitude) < 0 || mpfr_cmp_d(a.get(), kMaxMagnitude) > 0) {
      return f;
    }
  }
  const mpfr_prec_t prec = mpfr_get_prec(theta) + 128;
  mp q(prec), pi(prec);
  mpfr_const_pi(pi.get(), MPFR_RNDN);
  mpfr_mul_2ui(q.get(), theta, 1, MPFR_RNDN);  // exact
  mpfr_div(q.get(), q.get(), pi.get(), MPFR_RNDN);
  const double dq = split(q.get(), f.q, 4);
  const double dtheta = split(theta, f.t, 3);
  if (!std::isfinite(dq) || !std::isfinite(dtheta)) return f;
  // |RN(2θ/RN(π)) − 2θ/π| ≤ |q|·(2^−prec + 2^−prec + 2^−2prec).
  const double q_round =
      std::fabs(f.q[0]) * (1 + 0x1p-50) * std::ldexp(1.0, 2 - static_cast<int>(prec));
  const double e_q = (dq + q_round + 2 * kU * std::fabs(f.q[3])) * kSafety;
  const double w = std::ldexp(1.0, -static_cast<int>(work_bits));
  const double theta_abs = std::fabs(f.t[0]) * (1 + 0x1p-50);
  f.value_e1 = m_abs * (kPiO2Up * e_q + w * theta_abs) * kSafety;
  f.angle_e1 = (theta_abs * (16 * kU2 + w) + dtheta + 2 * kU * std::fabs(f.t[2])) * kSafety;
  f.exact = dtheta == 0 && f.t[1] == 0 && f.t[2] == 0;
  f.k = frequency::kind::regular;
  return f;
}

// A position as one or two exact doubles.
struct position {
  double x[2] = {0, 0};
  int parts = 1;
  double abs = 0;  // |p| (rounded; the bound's safety factor covers it)
};

inline position split_position(std::int64_t p) {
  position r;
  r.abs = std::fabs(static_cast<double>(p));
  constexpr std::int64_t kExact = std::int64_t{1} << 53;
  if (p >= -kExact && p <= kExact) {
    r.x[0] = static_cast<double>(p);
    return r;
  }
  const std::uint64_t a =
      p < 0 ? std::uint64_t{0} - static_cast<std::uint64_t>(p) : static_cast<std::uint64_t>(p);
  double hi = static_cast<double>(a >> 32) * 0x1p32;  // ≤ 31 significant bits: exact
  double lo = static_cast<double>(a & 0xffffffffu);   // < 2^32: exact
  if (p < 0) {
    hi = -hi;
    lo = -lo;
  }
  r.x[0] = hi;
  r.x[1] = lo;
  r.parts = 2;
  return r;
}

// ---------------------------------------------------------------------------------------------
// The evaluation of sin(p·θ), cos(p·θ) as double-doubles.

// X = p·q ≡ n + k/N + g (mod 4), quadrant = n mod 4.
struct reduced {
  dd g;
  int quad = 0;
  int k = 0;
  bool general = false;  // the general reduction ran (its static bound applies)
};

template <bool F>
[[gnu::always_inline]] inline reduced reduce(const frequency& f, const position& P) {
  using A = arith<F>;
  reduced out;
  double s = 0, e = 0;
  const dd a0 = A::two_prod(P.x[0], f.q[0]);
  out.general = P.parts != 1 || !(std::fabs(a0.hi) < 0x1p50);
  if (!out.general) [[likely]] {
    const double x = P.x[0];
    const dd a1 = A::two_prod(x, f.q[1]);
    const dd a2 = A::two_prod(x, f.q[2]);
    const double tail = (a1.lo + a2.hi) + (a2.lo + x * f.q[3]);
    const dd m = two_sum(a0.lo, a1.hi);
    const dd t = two_sum(mod4(a0.hi), m.hi);
    s = t.hi;
    e = t.lo + (m.lo + tail);
  } else {
    auto acc = [&](double term) {
      const dd r = two_sum(s, mod4(term));
      s = mod4(r.hi);
      e += r.lo;
    };
    for (int j = 0; j < P.parts; ++j) {
      const double x = P.x[j];
      const dd b0 = j == 0 ? a0 : A::two_prod(x, f.q[0]);
      acc(b0.hi);
      acc(b0.lo);
      const dd b1 = A::two_prod(x, f.q[1]);
      acc(b1.hi);
      acc(b1.lo);
      const dd b2 = A::two_prod(x, f.q[2]);
      acc(b2.hi);
      acc(b2.lo);
      acc(x * f.q[3]);
    }
  }
  // Every step exact (Sterbenz: |fh − n| ≤ ½ with n ∈ {−2, …, 2}; |fh − k/N| ≤ 1/(2N) with fh
  // within a factor 2 of k/N for k ≠ 0).
  const dd fx = two_sum(s, e);
  const double n = nearest(fx.hi);
  const double fh = fx.hi - n;
  const double kk = nearest(fh * kN);
  out.g = two_sum(fh - kk * (1.0 / kN), fx.lo);
  out.quad = static_cast<int>(n) & 3;
  out.k = static_cast<int>(kk);
  return out;
}

struct sincos_value {
  dd s, c;
};

// sin and cos of (n + k/N)·π/2 + r from those of a + r, a = kπ/(2N).
[[gnu::always_inline]] inline sincos_value apply_quadrant(int quad, const dd& sin_ar,
                                                          const dd& cos_ar) {
  const bool swap = (quad & 1) != 0;
  const double ssign = (quad & 2) != 0 ? -1.0 : 1.0;
  const double csign = ((quad + 1) & 2) != 0 ? -1.0 : 1.0;
  const dd sv = swap ? cos_ar : sin_ar;
  const dd cv = swap ? sin_ar : cos_ar;
  return {{sv.hi * ssign, sv.lo * ssign}, {cv.hi * csign, cv.lo * csign}};
}

// The double stage's short reduction (header comment); false where it does not apply (two position
// parts or |p·q0| ≥ 2^50). R.g.lo is 0.
template <bool F>
[[gnu::always_inline]] inline bool reduce_short(const frequency& f, const position& P, reduced& R) {
  if (P.parts != 1) return false;
  const double x = P.x[0];
  const dd a0 = arith<F>::two_prod(x, f.q[0]);
  if (!(std::fabs(a0.hi) < 0x1p50)) return false;
  constexpr double kShift = 0x1.8p52;
  const double h = a0.hi - 4.0 * ((a0.hi * 0.25 + kShift) - kShift);  // mod4 (|a0.hi| < 2^50)
  const double fx = h + (a0.lo + x * f.q[1]);
  const double n = nearest(fx);
  const double fh = fx - n;
  const double kk = nearest(fh * kN);
  R.g = {fh - kk * (1.0 / kN), 0.0};
  R.quad = static_cast<int>(n) & 3;
  R.k = static_cast<int>(kk);
  R.general = false;
  return true;
}

// The double stage's evaluation (header comment).
template <bool F>
[[gnu::always_inline]] inline sincos_value eval_double(const constants& K, const reduced& R) {
  const double r = R.g.hi * K.pio2.hi;
  const double z = r * r;
  const double ts = r * (z * (K.c3.hi + z * K.s5));
  const double vc = z * (-0.5 + z * (K.c4.hi + z * K.c6));
  const double* t = &K.trig[4 * static_cast<std::size_t>(R.k + kHalfN)];
  const double sh = t[0], sl = t[1], ch = t[2], cl = t[3];
  double bs, bc;
  if constexpr (F) {
    bs = __builtin_fma(ch, r, __builtin_fma(sh, vc, __builtin_fma(ch, ts, sl)));
    bc = __builtin_fma(-sh, r, __builtin_fma(ch, vc, __builtin_fma(-sh, ts, cl)));
  } else {
    bs = ch * r + (sh * vc + (ch * ts + sl));
    bc = -sh * r + (ch * vc + (-sh * ts + cl));
  }
  return apply_quadrant(R.quad, fast_two_sum(sh, bs), fast_two_sum(ch, bc));
}

// The double-double stage (header comment, steps (2)–(4)).
template <bool F>
[[gnu::always_inline]] inline sincos_value eval_dd(const constants& K, const reduced& R) {
  using A = arith<F>;
  // (2) r = g·π/2.
  const dd r = A::mul(R.g, K.pio2);
  // (3) r² (normalized), sin r = r + r·(r²·(−1/6 + ts)), cos r − 1 = r²·(−1/2 + r²·(1/24 + jc)).
  const dd z0 = A::two_prod(r.hi, r.hi);
  double zl;
  if constexpr (F) {
    zl = __builtin_fma(2 * r.hi, r.lo, z0.lo);
  } else {
    zl = z0.lo + 2 * r.hi * r.lo;
  }
  const dd r2 = fast_two_sum(z0.hi, zl);
  const double z = r2.hi;
  const double ts = z * (K.s5 + z * (K.s7 + z * K.s9));
  dd ws = two_sum(K.c3.hi, ts);
  ws = fast_two_sum(ws.hi, ws.lo + K.c3.lo);
  const dd sr = add(r, A::mul(r, A::mul(r2, ws)));
  const double jc = z * (K.c6 + z * K.c8);
  dd ic = two_sum(K.c4.hi, jc);
  ic = fast_two_sum(ic.hi, ic.lo + K.c4.lo);
  const dd kc = A::mul(r2, ic);
  dd wc = two_sum(-0.5, kc.hi);
  wc = fast_two_sum(wc.hi, wc.lo + kc.lo);
  const dd vc = A::mul(r2, wc);
  // (4) addition formulas with the table, then the quadrant.
  const double* t = &K.trig[4 * static_cast<std::size_t>(R.k + kHalfN)];
  const dd sa{t[0], t[1]};
  const dd ca{t[2], t[3]};
  const dd sin_ar = add(sa, add(A::mul(sa, vc), A::mul(ca, sr)));
  const dd cos_ar = add(ca, add(A::mul(ca, vc), neg(A::mul(sa, sr))));
  return apply_quadrant(R.quad, sin_ar, cos_ar);
}

// p·θ as a double-double (θ regular, p ≠ 0); error ≤ |p|·angle_e1 (see prepare()).
template <bool F>
inline dd product_angle(const frequency& f, const position& P) {
  using A = arith<F>;
  dd total;
  for (int j = 0; j < P.parts; ++j) {
    const double x = P.x[j];
    const dd a = A::two_prod(x, f.t[0]);
    const dd b = A::two_prod(x, f.t[1]);
    const dd s = two_sum(a.hi, b.hi);
    const double rest = (s.lo + a.lo) + (b.lo + x * f.t[2]);
    const dd part = fast_two_sum(s.hi, rest);
    total = j == 0 ? part : add(total, part);
  }
  return total;
}

// ---------------------------------------------------------------------------------------------
// Rounding test.

template <class T>
constexpr double max_finite() {
  using tr = scalar_traits<T>;
  return (2.0 - pow2(1 - tr::precision)) * pow2(tr::max_exponent);
}

// The encoding of RN_T(v), ties to even, for any non-NaN double v (±Inf beyond the range), in one
// rounding: hardware conversions for double and float; for the 16-bit formats v is scaled by a
// power of two (exact) so that T's quantum at v becomes 1, and rounded to an integer by the
// 1.5·2^52 shift (exact, ties to even): in the normal range the quantum is 2^(e − p + 1) with
// e = exponent(v), below it the fixed subnormal quantum 2^(emin − p + 1); a carry to the next
// binade lands on the right encoding. |v| ≥ max + ½ulp(max) gives ±Inf (that tie goes to the even
// 2^(emax+1)).
template <class T>
[[gnu::always_inline]] inline typename scalar_traits<T>::bits_type rn_bits(double v) {
  using tr = scalar_traits<T>;
  using bits_type = typename tr::bits_type;
  if constexpr (std::is_same_v<T, double>) {
    return std::bit_cast<std::uint64_t>(v);
  } else if constexpr (std::is_same_v<T, float>) {
    return std::bit_cast<std::uint32_t>(static_cast<float>(v));
  } else {
    const bits_type sign = std::signbit(v) ? tr::sign_mask : bits_type{0};
    const double a = std::fabs(v);
    constexpr double thr = max_finite<T>() + pow2(tr::max_exponent - tr::precision);
    if (!(a < thr)) return static_cast<bits_type>(sign | tr::infinity_bits);
    constexpr int f = tr::mantissa_bits;
    if (a < pow2(tr::min_normal_exponent)) {
      const double q = nearest(a * pow2(f - tr::min_normal_exponent));
      return static_cast<bits_type>(sign | static_cast<bits_type>(q));
    }
    const int e = static_cast<int>(std::bit_cast<std::uint64_t>(a) >> 52) - 1023;
    const int q = static_cast<int>(nearest(a * pow2(f - e)));  // in [2^f, 2^(f+1)]
    return static_cast<bits_type>(sign |
                                  static_cast<bits_type>(((e + tr::bias) << f) + q - (1 << f)));
  }
}

// RN_T(v), ties to even, for any non-NaN double v.
template <class T>
[[gnu::always_inline]] inline T round_nearest(double v) {
  if constexpr (std::is_same_v<T, double>) {
    return v;
  } else if constexpr (std::is_same_v<T, float>) {
    return static_cast<float>(v);
  } else {
    return scalar_traits<T>::from_bits(rn_bits<T>(v));
  }
}

template <class T>
inline double to_double(T v) {
  return scalar_traits<T>::to_double(v);
}

// True and out = RN_T(V) when every V with |V − (vh + vl)| ≤ err rounds to the same T value.
template <class T>
inline bool try_round(double vh, double vl, double err, T& out) {
  using tr = scalar_traits<T>;
  const T yt = round_nearest<T>(vh);
  const double y = to_double(yt);
  if (!(std::fabs(y) <= max_finite<T>())) {
    if constexpr (!std::is_same_v<T, double>) {
      // RN_T(x) = ±Inf exactly when |x| ≥ max + ½ulp(max) (the tie goes to the even "2^(emax+1)").
      // |vh| − thr is exact when |vh| ≤ 2·thr (Sterbenz) and certainly positive beyond.
      if (std::isnan(y)) return false;
      constexpr double thr = max_finite<T>() + pow2(tr::max_exponent - tr::precision);
      const double ds = (std::fabs(vh) - thr) + (vh > 0 ? vl : -vl);
      const double em = err * (1 + 0x1p-40) + std::fabs(ds) * 0x1p-51;
      if (!(ds - em > 0)) return false;
      out = yt;
      return true;
    }
    return false;
  }
  const double d = (vh - y) + vl;
  const double em = err * (1 + 0x1p-40) + std::fabs(d) * 0x1p-51;
  if (y == 0) {
    if constexpr (std::is_same_v<T, double>) {
      return false;  // an exact or tiny double-double value: leave it to MPFR
    } else {
      constexpr double half_sub = pow2(tr::min_normal_exponent - tr::precision);
      if (!(std::fabs(d) > em) || !(std::fabs(d) + em < half_sub)) return false;
      out = tr::from_bits(std::signbit(d) ? tr::sign_mask : typename tr::bits_type{0});
      return true;
    }
  }
  const std::uint64_t bits = std::bit_cast<std::uint64_t>(y) & ~(std::uint64_t{1} << 63);
  const int e = static_cast<int>(bits >> 52) - 1023;
  if constexpr (std::is_same_v<T, double>) {
    if (e < -960) return false;  // keep the half-gaps normal
  }
  const bool power_of_two = (bits & ((std::uint64_t{1} << 52) - 1)) == 0;
  const int et = e > tr::min_normal_exponent ? e : tr::min_normal_exponent;
  const double away = pow2(et - tr::precision);  // half the spacing above |y|
  const double toward = power_of_two && e > tr::min_normal_exponent ? 0.5 * away : away;
  const double up = y > 0 ? away : toward;
  const double down = y > 0 ? toward : away;
  if (!(d + em < up) || !(d - em > -down)) return false;
  out = yt;
  return true;
}

// The double stage's test: M covers err + |vl| and the roundings of vh ∓ M (the factor 1 + 2^−48
// and the term 2^−51|vh| exceed u(|vh| + M) and the roundings of M itself), so the computed
// a = fl(vh − M) ≤ V ≤ b = fl(vh + M), and equal encodings RN_T(a) = RN_T(b) give RN_T(V) by
// monotonicity. That includes the sign of a zero: RN_T(a) = +0 needs a ≥ 0 and then V > 0
// (M > err + |vl| strictly), RN_T(b) = −0 likewise V < 0. Costs resolution (≈ 2^−51|vh|), not
// soundness.
template <class T>
[[gnu::always_inline]] inline bool try_round_interval(double vh, double vl, double err, T& out) {
  const double m = (err + std::fabs(vl)) * (1 + 0x1p-48) + std::fabs(vh) * 0x1p-51;
  const auto lo = rn_bits<T>(vh - m);
  if (lo != rn_bits<T>(vh + m)) return false;
  out = scalar_traits<T>::from_bits(lo);
  return true;
}

// RN_T of an exactly known double (no error bound needed, ties included); false for NaN (whose
// encoding the MPFR path canonicalizes).
template <class T>
inline bool round_exact(double v, T& out) {
  if (std::isnan(v)) return false;
  out = round_nearest<T>(v);
  return true;
}

// RN_T(p·θ) for a regular θ and p ≠ 0, or false. An exact product (θ a double, p·θ one double)
// is rounded directly, ties included; otherwise the rounding test decides with E = |p|·angle_e1.
template <bool F, class T>
[[gnu::always_inline]] inline bool fast_angle(const frequency& f, const position& P, T& out) {
  if (f.k != frequency::kind::regular) return false;
  if (f.exact && P.parts == 1) {
    const dd a = arith<F>::two_prod(P.x[0], f.t[0]);
    if (a.lo == 0) return round_exact<T>(a.hi, out);
  }
  const dd a = product_angle<F>(f, P);
  return try_round<T>(a.hi, a.lo, P.abs * f.angle_e1, out);
}

// m, whether it is exactly 1, and the E0 table of a reference.
struct scale {
  dd m;
  bool one = true;
  const double (*e0)[2] = nullptr;
};

// m·sin and m·cos of X at a stage (Precise: the double-double one).
template <bool F, bool Precise>
[[gnu::always_inline]] inline sincos_value scaled(const constants& K, const reduced& R,
                                                  const scale& sc) {
  sincos_value v = Precise ? eval_dd<F>(K, R) : eval_double<F>(K, R);
  if (!sc.one) {
    v.s = arith<F>::mul(v.s, sc.m);
    v.c = arith<F>::mul(v.c, sc.m);
  }
  return v;
}

// RN_T(m·sin(p·θ)) into *s_out and RN_T(m·cos(p·θ)) into *c_out (c_out may be null) for a regular
// θ and p ≠ 0: first the double stage (not for fp64 targets), then the double-double stage for
// what it left; ok_s and ok_c tell which values were decided.
// With V, the evaluated values (hi + lo of the last stage: within its error bound of the exact
// ones) also go to *s_val and *c_val.
template <bool F, class T, bool V = false>
[[gnu::always_inline]] inline void sincos_round(const constants& K, const frequency& f,
                                                const position& P, const scale& sc, T* s_out,
                                                T* c_out, bool& ok_s, bool& ok_c, fast_stats& st,
                                                double* s_val = nullptr, double* c_val = nullptr) {
  const double pe = P.abs * f.value_e1;
  ok_s = false;
  ok_c = c_out == nullptr;
  reduced R;
  constexpr bool kTwoStages = !std::is_same_v<T, double>;
  bool first = false;
  if constexpr (kTwoStages) {
    if (reduce_short<F>(f, P, R)) [[likely]] {
      first = true;
      const sincos_value v = scaled<F, false>(K, R, sc);
      const double err = sc.e0[0][0] + pe;
      ok_s = try_round_interval<T>(v.s.hi, v.s.lo, err, *s_out);
      if (c_out) ok_c = try_round_interval<T>(v.c.hi, v.c.lo, err, *c_out);
      if constexpr (V) {
        *s_val = v.s.hi + v.s.lo;
        *c_val = v.c.hi + v.c.lo;
      }
      if (ok_s && ok_c) [[likely]]
        return;
    }
  }
  R = reduce<F>(f, P);
  const sincos_value v = scaled<F, true>(K, R, sc);
  const double err = sc.e0[1][R.general] + pe;
  if constexpr (V) {
    *s_val = v.s.hi + v.s.lo;
    *c_val = v.c.hi + v.c.lo;
  }
  if (!ok_s) {
    ok_s = try_round<T>(v.s.hi, v.s.lo, err, *s_out);
    if (first && ok_s) ++st.refined;
  }
  if (!ok_c) {
    ok_c = try_round<T>(v.c.hi, v.c.lo, err, *c_out);
    if (first && ok_c) ++st.refined;
  }
}

// ---------------------------------------------------------------------------------------------
// FMA dispatch.

std::atomic<bool> g_force_portable{false};

bool cpu_has_fma() {
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool has = __builtin_cpu_supports("fma");
  return has;
#elif defined(FP_FAST_FMA)
  return true;
#else
  return false;
#endif
}

// The evaluation bodies are lambdas forced inline into run_fma / run_portable, so that the FMA
// instantiation is compiled for the FMA target (__builtin_fma becomes one instruction).
#if defined(__x86_64__) && defined(__GNUC__)
#define PEV_FAST_FMA_TARGET __attribute__((target("fma")))
#else
#define PEV_FAST_FMA_TARGET
#endif
#define PEV_FAST_INLINE __attribute__((always_inline))

bool use_fma() { return cpu_has_fma() && !g_force_portable.load(std::memory_order_relaxed); }

// Calls body.template operator()<true>() in a function compiled for FMA, or <false>().
template <class Body>
PEV_FAST_FMA_TARGET void run_fma(Body& body) {
  body.template operator()<true>();
}
template <class Body>
void run_portable(Body& body) {
  body.template operator()<false>();
}
template <class Body>
void dispatch(Body&& body) {
  if (use_fma()) {
    run_fma(body);
  } else {
    run_portable(body);
  }
}

// ---------------------------------------------------------------------------------------------
// The double stage on vectors (x86-64 with AVX2 and FMA): a table row's pairs four at a time.
//
// Each lane runs the operations of reduce_short, eval_double (F = true), scaled and
// try_round_interval in the same order, with FMA exactly where the scalar FMA code has it and no
// other contraction, so a lane decides the value the scalar FMA path decides, with the same
// result (the rounding test itself is sound on any arithmetic; the identity only makes the two
// paths' statistics agree). What a lane does not decide — the short reduction does not apply,
// the interval test fails for the sin or the cos, or the pair is not a regular frequency — is
// left to the scalar code (the double-double stage, the MPFR path), which redoes the pair.

#if defined(__x86_64__) && defined(__GNUC__)
#define PEV_FAST_SIMD 1
#define PEV_FAST_AVX2 [[gnu::always_inline]] __attribute__((target("avx2,fma"))) inline
#define PEV_FAST_AVX2_TARGET __attribute__((target("avx2,fma")))

// Vector types pass between always-inline helpers only: no ABI is involved.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"

namespace simd {

typedef double vd __attribute__((vector_size(32)));
typedef std::int64_t vi __attribute__((vector_size(32)));
typedef std::uint64_t vu __attribute__((vector_size(32)));
constexpr int kLanes = 4;

PEV_FAST_AVX2 vd fma(vd a, vd b, vd c) {
  return (vd)_mm256_fmadd_pd((__m256d)a, (__m256d)b, (__m256d)c);
}
PEV_FAST_AVX2 vd vabs(vd a) { return (vd)((vu)a & 0x7fffffffffffffffu); }
PEV_FAST_AVX2 vd load(const double* p) {
  vd v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

struct vdd {
  vd hi, lo;
};

PEV_FAST_AVX2 vdd fast_two_sum(vd a, vd b) {
  const vd s = a + b;
  return {s, b - (s - a)};
}

// arith<true>::mul(a, {m_hi, m_lo}).
PEV_FAST_AVX2 vdd mul_m(vdd a, double mh, double ml) {
  const vd ph = a.hi * mh;
  const vd pl = fma(a.hi, vd{} + mh, -ph);
  const vd t = a.hi * ml + a.lo * mh;
  return fast_two_sum(ph, pl + t);
}

// rn_bits<T> per lane, as 64-bit lanes holding T's encoding.
template <class T>
PEV_FAST_AVX2 vu rn_bits_lanes(vd v) {
  using tr = scalar_traits<T>;
  if constexpr (std::is_same_v<T, float>) {
    const __m128 f = _mm256_cvtpd_ps((__m256d)v);
    return (vu)_mm256_cvtepu32_epi64((__m128i)f);
  } else {
    constexpr int f = tr::mantissa_bits;
    constexpr double kShift = 0x1.8p52;
    const vu b = (vu)v;
    const vu sign = (b >> 63) << (8 * sizeof(typename tr::bits_type) - 1);
    const vu abits = b & 0x7fffffffffffffffu;
    const vd a = (vd)abits;
    constexpr double thr = max_finite<T>() + pow2(tr::max_exponent - tr::precision);
    const vi inf = ~(a < thr);
    const vi sub = a < pow2(tr::min_normal_exponent);
    // Subnormal: the integer nearest a·2^(f − emin), read from the shifted sum's encoding.
    const vu qs = (vu)(a * pow2(f - tr::min_normal_exponent) + kShift) - (vu)(vd{} + kShift);
    // Normal: a·2^(f − e) rounded to an integer in [2^f, 2^(f+1)], e = exponent(a).
    const vu E = abits >> 52;
    const vd sc = (vd)((static_cast<std::uint64_t>(f + 2046) - E) << 52);
    const vu qn = (vu)(a * sc + kShift) - (vu)(vd{} + kShift);
    const vu nb =
        ((E - static_cast<std::uint64_t>(1023 - tr::bias)) << f) + qn - (std::uint64_t{1} << f);
    const vu mag = inf ? vu{} + static_cast<std::uint64_t>(tr::infinity_bits) : (sub ? qs : nb);
    return sign | mag;
  }
}

// try_round_interval<T> per lane: the encodings, and whether they are decided.
template <class T>
PEV_FAST_AVX2 vi try_round_lanes(vdd v, vd err, vu& out) {
  const vd m = (err + vabs(v.lo)) * (1 + 0x1p-48) + vabs(v.hi) * 0x1p-51;
  const vu lo = rn_bits_lanes<T>(v.hi - m);
  const vu hi = rn_bits_lanes<T>(v.hi + m);
  out = lo;
  return (vi)(lo == hi);
}

// try_round_interval<float> per lane: RN_fp32(hi − M) in `out`, and a bit per lane (movemask) set
// where RN_fp32(hi + M) has the same encoding.
PEV_FAST_AVX2 int try_round_float(vdd v, vd err, __m128& out) {
  const vd m = (err + vabs(v.lo)) * (1 + 0x1p-48) + vabs(v.hi) * 0x1p-51;
  out = _mm256_cvtpd_ps((__m256d)(v.hi - m));
  const __m128 hi = _mm256_cvtpd_ps((__m256d)(v.hi + m));
  return _mm_movemask_ps(
      _mm_castsi128_ps(_mm_cmpeq_epi32(_mm_castps_si128(out), _mm_castps_si128(hi))));
}

}  // namespace simd

vector_freqs make_vector_freqs(const std::vector<frequency>& freq) {
  vector_freqs v;
  v.n = freq.size();
  const std::size_t padded = (v.n + simd::kLanes - 1) / simd::kLanes * simd::kLanes;
  v.q0.assign(padded, 0);
  v.q1.assign(padded, 0);
  v.e1.assign(padded, 0);
  v.scalar.assign(padded, 1);
  for (std::size_t i = 0; i < v.n; ++i) {
    if (freq[i].k != frequency::kind::regular) continue;
    v.q0[i] = freq[i].q[0];
    v.q1[i] = freq[i].q[1];
    v.e1[i] = freq[i].value_e1;
    v.scalar[i] = 0;
  }
  v.regular.assign(padded / simd::kLanes, 0);
  for (std::size_t i = 0; i < padded; ++i) {
    if (v.scalar[i] == 0) v.regular[i / simd::kLanes] |= static_cast<std::uint8_t>(1u << (i % 4));
  }
  return v;
}

/// The double stage of a row at position x (one exact double, p ≠ 0), pairs 0 … n − 1: the
/// decided values into s_out and c_out (and, with V, the evaluated ones into s_val and c_val);
/// redo[i] = 1 for each pair left to the scalar code (its outputs are then unspecified). Returns
/// the number of pairs decided.
template <class T, bool V>
PEV_FAST_AVX2_TARGET std::size_t double_stage_row(const constants& K, const vector_freqs& F,
                                                  double x, double xabs, const scale& sc, T* s_out,
                                                  T* c_out, double* s_val, double* c_val,
                                                  std::uint8_t* redo) {
  using namespace simd;
  using tr = scalar_traits<T>;
  constexpr double kShift = 0x1.8p52;
  const vd S = vd{} + kShift;
  const vd xv = vd{} + x;
  const double e00 = sc.e0[0][0];
  std::size_t decided = 0;
  for (std::size_t i = 0; i < F.n; i += kLanes) {
    // reduce_short.
    const vd q0 = load(&F.q0[i]);
    const vd a0h = xv * q0;
    const vd a0l = fma(xv, q0, -a0h);
    const vi in_range = vabs(a0h) < 0x1p50;
    const vd h = a0h - 4.0 * ((a0h * 0.25 + S) - S);
    const vd fx = h + (a0l + xv * load(&F.q1[i]));
    const vd n = (fx + S) - S;
    const vd fh = fx - n;
    const vd kk = (fh * kN + S) - S;
    const vd g = fh - kk * (1.0 / kN);
    const vu quad = ((vu)(n + S) - (vu)S) & 3u;
    // Lanes beyond the short reduction's range may hold any k: they index the entry of k = 0
    // (those lanes are left to the scalar code), so that every gather stays inside it.
    const vi k = in_range ? (vi)((vu)(kk + S) - (vu)S) + kHalfN : vi{} + kHalfN;
    // eval_double: the table entries of kπ/(2N) (each lane's four doubles sh, sl, ch, cl are
    // adjacent: four loads and a 4×4 transpose, cheaper than gathers), the polynomials, the
    // addition formulas.
    const __m256d r0 = _mm256_loadu_pd(&K.trig[4 * static_cast<std::size_t>(k[0])]);
    const __m256d r1 = _mm256_loadu_pd(&K.trig[4 * static_cast<std::size_t>(k[1])]);
    const __m256d r2 = _mm256_loadu_pd(&K.trig[4 * static_cast<std::size_t>(k[2])]);
    const __m256d r3 = _mm256_loadu_pd(&K.trig[4 * static_cast<std::size_t>(k[3])]);
    const __m256d t0 = _mm256_unpacklo_pd(r0, r1), t1 = _mm256_unpackhi_pd(r0, r1);
    const __m256d t2 = _mm256_unpacklo_pd(r2, r3), t3 = _mm256_unpackhi_pd(r2, r3);
    const vd sh = (vd)_mm256_permute2f128_pd(t0, t2, 0x20);
    const vd ch = (vd)_mm256_permute2f128_pd(t0, t2, 0x31);
    const vd sl = (vd)_mm256_permute2f128_pd(t1, t3, 0x20);
    const vd cl = (vd)_mm256_permute2f128_pd(t1, t3, 0x31);
    const vd r = g * K.pio2.hi;
    const vd z = r * r;
    const vd ts = r * (z * (K.c3.hi + z * K.s5));
    const vd vc = z * (-0.5 + z * (K.c4.hi + z * K.c6));
    const vd bs = fma(ch, r, fma(sh, vc, fma(ch, ts, sl)));
    const vd bc = fma(-sh, r, fma(ch, vc, fma(-sh, ts, cl)));
    const vdd sin_ar = fast_two_sum(sh, bs);
    const vdd cos_ar = fast_two_sum(ch, bc);
    // apply_quadrant.
    const vi swap = (quad & 1u) != 0;
    const vd ssign = (quad & 2u) != 0 ? vd{} - 1.0 : vd{} + 1.0;
    const vd csign = ((quad + 1u) & 2u) != 0 ? vd{} - 1.0 : vd{} + 1.0;
    vdd vs{(swap ? cos_ar.hi : sin_ar.hi) * ssign, (swap ? cos_ar.lo : sin_ar.lo) * ssign};
    vdd vcos{(swap ? sin_ar.hi : cos_ar.hi) * csign, (swap ? sin_ar.lo : cos_ar.lo) * csign};
    if (!sc.one) {
      vs = mul_m(vs, sc.m.hi, sc.m.lo);
      vcos = mul_m(vcos, sc.m.hi, sc.m.lo);
    }
    // try_round_interval, with E = E0 + |p|·E1_i.
    const vd err = e00 + xabs * load(&F.e1[i]);
    const std::size_t lanes = F.n - i < kLanes ? F.n - i : kLanes;
    if constexpr (std::is_same_v<T, float>) {
      // fp32: the encodings stay in vector registers; whole groups are stored at once.
      __m128 s_lo, c_lo;
      const int good = try_round_float(vs, err, s_lo) & try_round_float(vcos, err, c_lo) &
                       _mm256_movemask_pd((__m256d)in_range) & F.regular[i / kLanes];
      if (lanes == kLanes) {
        _mm_storeu_ps(s_out + i, s_lo);
        _mm_storeu_ps(c_out + i, c_lo);
        if constexpr (V) {
          _mm256_storeu_pd(s_val + i, (__m256d)(vs.hi + vs.lo));
          _mm256_storeu_pd(c_val + i, (__m256d)(vcos.hi + vcos.lo));
        }
      } else {
        alignas(16) float sf[kLanes], cf[kLanes];
        _mm_store_ps(sf, s_lo);
        _mm_store_ps(cf, c_lo);
        for (std::size_t l = 0; l < lanes; ++l) {
          s_out[i + l] = sf[l];
          c_out[i + l] = cf[l];
          if constexpr (V) {
            s_val[i + l] = vs.hi[l] + vs.lo[l];
            c_val[i + l] = vcos.hi[l] + vcos.lo[l];
          }
        }
      }
      for (std::size_t l = 0; l < lanes; ++l) {
        const bool ok = ((good >> l) & 1) != 0;
        redo[i + l] = ok ? 0 : 1;
        decided += ok ? 1 : 0;
      }
      continue;
    }
    vu bs_out, bc_out;
    const vi ok =
        try_round_lanes<T>(vs, err, bs_out) & try_round_lanes<T>(vcos, err, bc_out) & in_range;
    for (std::size_t l = 0; l < lanes; ++l) {
      const bool good = ok[l] != 0 && F.scalar[i + l] == 0;
      redo[i + l] = good ? 0 : 1;
      decided += good ? 1 : 0;
      s_out[i + l] = tr::from_bits(static_cast<typename tr::bits_type>(bs_out[l]));
      c_out[i + l] = tr::from_bits(static_cast<typename tr::bits_type>(bc_out[l]));
      if constexpr (V) {
        s_val[i + l] = vs.hi[l] + vs.lo[l];
        c_val[i + l] = vcos.hi[l] + vcos.lo[l];
      }
    }
  }
  return decided;
}

#pragma GCC diagnostic pop
#else
#define PEV_FAST_SIMD 0
#endif

bool cpu_has_avx2() {
#if PEV_FAST_SIMD
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
#else
  return false;
#endif
}

std::atomic<bool> g_force_scalar{false};

// Whether the vector rows run: AVX2 and FMA, unless the scalar code is forced (either hook).
bool use_vector_rows() {
  return cpu_has_avx2() && use_fma() && !g_force_scalar.load(std::memory_order_relaxed);
}

template <class T>
T signed_zero(bool negative) {
  using tr = scalar_traits<T>;
  return tr::from_bits(negative ? tr::sign_mask : typename tr::bits_type{0});
}

void check_size(std::size_t got, std::size_t want, const char* what) {
  if (got != want) {
    throw error(std::string("fast reference: ") + what + " holds " + std::to_string(got) +
                " values, expected " + std::to_string(want));
  }
}

bool in_range(double x) {
  const double a = std::fabs(x);
  return a == 0 || (a >= kMinMagnitude && a <= kMaxMagnitude);
}

}  // namespace

namespace fast_detail {
void force_portable_arithmetic(bool on) { g_force_portable.store(on); }
void force_scalar_rows(bool on) { g_force_scalar.store(on); }
bool uses_vector_rows() { return use_vector_rows(); }
bool uses_fma() { return use_fma(); }
template <class T>
T round_double(double v) {
  return round_nearest<T>(v);
}
template double round_double<double>(double);
template float round_double<float>(double);
template half round_double<half>(double);
template bfloat16 round_double<bfloat16>(double);
}  // namespace fast_detail

// =============================================================================================
// RoPE.

namespace {
/// Held by every MPFR evaluation of the RoPE fast reference's fallbacks: the MPFR path sets the
/// process-wide default precision (precision_scope), so fast references evaluating on several
/// threads (one each) take their fallbacks one at a time. The fast path touches no MPFR state.
std::mutex& mpfr_fallback_mutex() {
  static std::mutex m;
  return m;
}
/// MPFR keeps caches (π, log 2 …) per thread; a thread that evaluated fallbacks frees its own
/// when it ends (a worker's would otherwise leak).
struct mpfr_thread_caches {
  ~mpfr_thread_caches() { mpfr_free_cache2(MPFR_FREE_LOCAL_CACHE); }
};
/// The fallback lock, and this thread's caches freed when it ends.
std::unique_lock<std::mutex> mpfr_fallback_lock() {
  thread_local const mpfr_thread_caches caches;
  (void)caches;
  return std::unique_lock<std::mutex>(mpfr_fallback_mutex());
}
}  // namespace

struct fast_rope_reference::kernels {
  template <class T>
  static T fallback(const fast_rope_reference& self, std::int64_t p, std::size_t i, bool cos,
                    fast_stats& st) {
    const auto lock = mpfr_fallback_lock();
    ++st.fallbacks;
    const auto& row = self.mpfr_row(p, st);
    return round_to<T>(cos ? row[i].cos : row[i].sin);
  }

  template <class T, bool V>
  static void table(const fast_rope_reference& self, std::span<const std::int64_t> positions,
                    std::span<T> cos, std::span<T> sin, std::span<double> cos_value,
                    std::span<double> sin_value, fast_stats* stats);
};

fast_rope_reference::fast_rope_reference(const spec::rope& s, std::optional<std::int64_t> seq_len)
    : ref_(s, exact_recipe(), seq_len), work_bits_(precision_bits() + kGuardBits) {
  (void)consts();
  const real& m = ref_.attention_factor();
  mpfr_srcptr mp_m = m.backend().data();
  double mparts[2] = {0, 0};
  const double dm = mpfr_number_p(mp_m) ? split(mp_m, mparts, 2) : 0;
  m_hi_ = mparts[0];
  m_lo_ = mparts[1];
  m_abs_ = std::fabs(m_hi_) * (1 + 0x1p-50);
  m_one_ = mpfr_cmp_si(mp_m, 1) == 0;
  m_ok_ = mpfr_number_p(mp_m) && std::isfinite(dm) && m_abs_ >= kMinMagnitude &&
          m_abs_ <= kMaxMagnitude;
  const double dm_rel = m_ok_ ? dm / std::fabs(m_hi_) * (1 + 0x1p-50) : 0;
  position_independent_bound(m_ok_ ? m_abs_ : 1, dm_rel, work_bits_, e0_);

  const auto& theta = ref_.inv_freq();
  freq_.reserve(theta.size());
  for (const real& t : theta) freq_.push_back(prepare(t.backend().data(), m_abs_, work_bits_));
#if PEV_FAST_SIMD
  vfreq_ = make_vector_freqs(freq_);
#endif
  auto fill = [&](auto& v) {
    using T = typename std::decay_t<decltype(v)>::value_type;
    v.reserve(theta.size());
    for (const real& t : theta) v.push_back(round_to<T>(t));
  };
  std::apply([&](auto&... v) { (fill(v), ...); }, inv_freq_);
  m_rounded_ = {round_to<double>(m), round_to<float>(m), round_to<half>(m), round_to<bfloat16>(m)};
}

const std::vector<cos_sin>& fast_rope_reference::mpfr_row(std::int64_t p, fast_stats& st) const {
  if (!cached_p_ || *cached_p_ != p) {
    cached_row_ = ref_.row(p);
    cached_p_ = p;
    ++st.mpfr_rows;
  }
  return cached_row_;
}

template <class T>
T fast_rope_reference::angle(std::int64_t p, std::int64_t i, fast_stats* stats) const {
  if (i < 0 || i >= pairs()) {
    throw error("fast rope: pair index " + std::to_string(i) + " out of range");
  }
  T out{};
  fast_stats st;
  const frequency& f = freq_[static_cast<std::size_t>(i)];
  const position P = split_position(p);
  ++st.values;
  if ((p == 0 && f.k == frequency::kind::regular) || f.k == frequency::kind::zero) {
    out = signed_zero<T>(std::signbit(static_cast<double>(p) * f.t[0]));
  } else {
    bool ok = false;
    dispatch([&]<bool F>() PEV_FAST_INLINE { ok = fast_angle<F>(f, P, out); });
    if (!ok) {
      const auto lock = mpfr_fallback_lock();
      ++st.fallbacks;
      out = round_to<T>(ref_.angle(p, i));
    }
  }
  if (stats) *stats += st;
  return out;
}

template <class T>
void fast_rope_reference::angles(std::span<const std::int64_t> positions, std::span<T> out,
                                 fast_stats* stats) const {
  const std::size_t n = static_cast<std::size_t>(pairs());
  check_size(out.size(), positions.size() * n, "angles output");
  fast_stats st;
  dispatch([&]<bool F>() PEV_FAST_INLINE {
    for (std::size_t r = 0; r < positions.size(); ++r) {
      const std::int64_t p = positions[r];
      const position P = split_position(p);
      T* row = out.data() + r * n;
      for (std::size_t i = 0; i < n; ++i) {
        const frequency& f = freq_[i];
        ++st.values;
        if ((p == 0 && f.k == frequency::kind::regular) || f.k == frequency::kind::zero) {
          row[i] = signed_zero<T>(std::signbit(static_cast<double>(p) * f.t[0]));
          continue;
        }
        if (fast_angle<F>(f, P, row[i])) continue;
        ++st.fallbacks;
        row[i] = round_to<T>(ref_.angle(p, static_cast<std::int64_t>(i)));
      }
    }
  });
  if (stats) *stats += st;
}

// table() and table_values(): one body; with V the evaluated values are written too.
template <class T, bool V>
void fast_rope_reference::kernels::table(const fast_rope_reference& self,
                                         std::span<const std::int64_t> positions, std::span<T> cos,
                                         std::span<T> sin, std::span<double> cos_value,
                                         std::span<double> sin_value, fast_stats* stats) {
  const std::size_t n = static_cast<std::size_t>(self.pairs());
  check_size(cos.size(), positions.size() * n, "cos table");
  check_size(sin.size(), positions.size() * n, "sin table");
  if constexpr (V) {
    check_size(cos_value.size(), positions.size() * n, "cos values");
    check_size(sin_value.size(), positions.size() * n, "sin values");
  }
  fast_stats st;
  const constants& K = consts();
  const T m_t = std::get<T>(self.m_rounded_);
  const scale sc{{self.m_hi_, self.m_lo_}, self.m_one_, self.e0_};
  // The double stage of whole rows on vectors, where it applies (fp32/fp16/bf16 targets, one exact
  // double for p ≠ 0, a usable m); the scalar body redoes what it leaves.
  const bool vector_rows = !std::is_same_v<T, double> && self.m_ok_ && use_vector_rows();
  std::vector<std::uint8_t> redo(vector_rows ? self.vfreq_.q0.size() : 0);
  dispatch([&]<bool F>() PEV_FAST_INLINE {
    for (std::size_t r = 0; r < positions.size(); ++r) {
      const std::int64_t p = positions[r];
      const position P = split_position(p);
      T* crow = cos.data() + r * n;
      T* srow = sin.data() + r * n;
      double* cv = V ? cos_value.data() + r * n : nullptr;
      double* sv = V ? sin_value.data() + r * n : nullptr;
      // One pair by the scalar code.
      auto pair = [&](std::size_t i) PEV_FAST_INLINE {
        const frequency& f = self.freq_[i];
        st.values += 2;
        if (self.m_ok_ &&
            ((p == 0 && f.k == frequency::kind::regular) || f.k == frequency::kind::zero)) {
          // Angle ±0 exactly (IEEE and MPFR agree on the sign of p·θ): cos = m, sin = ±0·m.
          crow[i] = m_t;
          srow[i] = signed_zero<T>(std::signbit(static_cast<double>(p) * f.t[0] * self.m_hi_));
          if constexpr (V) {
            cv[i] = self.m_hi_ + self.m_lo_;
            sv[i] = 0.0;
          }
          return;
        }
        bool ok_c = false, ok_s = false;
        const bool fast = f.k == frequency::kind::regular && self.m_ok_;
        if (fast) {
          if constexpr (V) {
            sincos_round<F, T, true>(K, f, P, sc, &srow[i], &crow[i], ok_s, ok_c, st, &sv[i],
                                     &cv[i]);
          } else {
            sincos_round<F, T>(K, f, P, sc, &srow[i], &crow[i], ok_s, ok_c, st);
          }
        }
        if (!ok_c) [[unlikely]]
          crow[i] = fallback<T>(self, p, i, true, st);
        if (!ok_s) [[unlikely]]
          srow[i] = fallback<T>(self, p, i, false, st);
        if constexpr (V) {
          if (!fast) [[unlikely]] {
            // No fast evaluation happened: the values from the MPFR row (cached by fallback).
            const auto lock = mpfr_fallback_lock();
            const auto& row = self.mpfr_row(p, st);
            cv[i] = row[i].cos.convert_to<double>();
            sv[i] = row[i].sin.convert_to<double>();
          }
        }
      };
#if PEV_FAST_SIMD
      if constexpr (F && !std::is_same_v<T, double>) {
        if (vector_rows && p != 0 && P.parts == 1) {
          const std::size_t decided = double_stage_row<T, V>(K, self.vfreq_, P.x[0], P.abs, sc,
                                                             srow, crow, sv, cv, redo.data());
          st.values += 2 * decided;
          if (decided < n) {
            for (std::size_t i = 0; i < n; ++i) {
              if (redo[i] != 0) pair(i);
            }
          }
          continue;
        }
      }
#endif
      for (std::size_t i = 0; i < n; ++i) pair(i);
    }
  });
  if (stats) *stats += st;
}

template <class T>
void fast_rope_reference::table(std::span<const std::int64_t> positions, std::span<T> cos,
                                std::span<T> sin, fast_stats* stats) const {
  kernels::table<T, false>(*this, positions, cos, sin, {}, {}, stats);
}

template <class T>
void fast_rope_reference::table_values(std::span<const std::int64_t> positions, std::span<T> cos,
                                       std::span<T> sin, std::span<double> cos_value,
                                       std::span<double> sin_value, fast_stats* stats) const {
  kernels::table<T, true>(*this, positions, cos, sin, cos_value, sin_value, stats);
}

template <class T>
void fast_rope_reference::rotate(std::int64_t p, std::span<const double> x, std::span<T> out,
                                 fast_stats* stats) const {
  const spec::rope& s = spec();
  check_size(x.size(), static_cast<std::size_t>(s.head_dim), "rotate input");
  check_size(out.size(), static_cast<std::size_t>(s.head_dim), "rotate output");
  const std::size_t n = static_cast<std::size_t>(pairs());
  fast_stats st;
  std::vector<std::size_t> failed;
  const constants& K = consts();
  const dd m{m_hi_, m_lo_};
  const scale sc{m, m_one_, e0_};
  const double w = std::ldexp(1.0, -static_cast<int>(work_bits_));
  const double m_abs = m_ok_ ? m_abs_ : 1;
  dispatch([&]<bool F>() PEV_FAST_INLINE {
    using A = arith<F>;
    const position P = split_position(p);
    for (std::size_t i = 0; i < n; ++i) {
      const auto [da, db] = spec::pair_dims(s, static_cast<std::int64_t>(i));
      const auto ia = static_cast<std::size_t>(da), ib = static_cast<std::size_t>(db);
      const double xa = x[ia], xb = x[ib];
      st.values += 2;
      const frequency& f = freq_[i];
      bool ok = m_ok_ && f.k != frequency::kind::mpfr_only && in_range(xa) && in_range(xb);
      const bool zero_angle = p == 0 || f.k == frequency::kind::zero;
      if (ok && zero_angle && m_one_) {
        // C = 1 and S = ±0 exactly: out_a = xa − xb·(±0), out_b = xa·(±0) + xb, each exactly xa
        // (xb) unless that is zero; zeros follow IEEE's (= MPFR's) sign rules.
        const double sz = static_cast<double>(p) * f.t[0];  // sin(±0)·1 = ±0
        ok = xa != 0 ? round_exact<T>(xa, out[ia])
                     : (out[ia] = signed_zero<T>(std::signbit(xa - xb * sz)), true);
        ok = (xb != 0 ? round_exact<T>(xb, out[ib])
                      : (out[ib] = signed_zero<T>(std::signbit(xa * sz + xb)), true)) &&
             ok;
      } else if (ok) {
        // out_a = xa·C − xb·S, out_b = xa·S + xb·C from c, sn with |c − C| ≤ ec, |sn − S| ≤ es
        // (C, S: the MPFR path's m·cos, m·sin), which rounds both products and the sum to W
        // bits: ≤ 2^(1−W)(|xa| + |xb|)|m|; dd arithmetic: mul_d 4u² each, add 4u².
        const double base = (std::fabs(xa) + std::fabs(xb)) * m_abs * (8 * kU2 + 2 * w);
        auto combine = [&](const dd& c, const dd& sn, double ec, double es) {
          const double ea = (std::fabs(xa) * ec + std::fabs(xb) * es + base) * kSafety;
          const double eb = (std::fabs(xa) * es + std::fabs(xb) * ec + base) * kSafety;
          // Both products exactly zero: a signed zero, with IEEE's (= MPFR's) sign rules,
          // provided the signs of c and sn are certain.
          const bool signs_known = std::fabs(c.hi) > ec && (es == 0 || std::fabs(sn.hi) > es);
          const double za1 = xa * c.hi, za2 = xb * sn.hi, zb1 = xa * sn.hi, zb2 = xb * c.hi;
          bool good;
          if (za1 == 0 && za2 == 0) {
            out[ia] = signed_zero<T>(std::signbit(za1 - za2));
            good = signs_known;
          } else {
            const dd va = add(A::mul_d(c, xa), neg(A::mul_d(sn, xb)));
            good = try_round<T>(va.hi, va.lo, ea, out[ia]);
          }
          if (zb1 == 0 && zb2 == 0) {
            out[ib] = signed_zero<T>(std::signbit(zb1 + zb2));
            good = good && signs_known;
          } else {
            const dd vb = add(A::mul_d(sn, xa), A::mul_d(c, xb));
            good = try_round<T>(vb.hi, vb.lo, eb, out[ib]) && good;
          }
          return good;
        };
        if (zero_angle) {
          // C = m (δm), S = ±0·m exactly, with MPFR's sign.
          ok = combine(m, {static_cast<double>(p) * f.t[0] * m_hi_, 0.0}, e0_[1][0], 0.0);
        } else {
          const double pe = P.abs * f.value_e1;
          reduced R;
          ok = false;
          bool first = false;
          if constexpr (!std::is_same_v<T, double>) {
            if (reduce_short<F>(f, P, R)) {
              first = true;
              const sincos_value v = scaled<F, false>(K, R, sc);
              const double e = e0_[0][0] + pe;
              ok = combine(v.c, v.s, e, e);
            }
          }
          if (!ok) {
            R = reduce<F>(f, P);
            const sincos_value v = scaled<F, true>(K, R, sc);
            const double e = e0_[1][R.general] + pe;
            ok = combine(v.c, v.s, e, e);
            if (ok && first) st.refined += 2;
          }
        }
      }
      if (!ok) [[unlikely]] {
        failed.push_back(ia);
        failed.push_back(ib);
      }
    }
  });
  // Pass-through dims: RN_T(x_j) exactly.
  for (std::size_t j = 2 * n; j < x.size(); ++j) {
    ++st.values;
    if (!round_exact<T>(x[j], out[j])) failed.push_back(j);
  }
  if (!failed.empty()) {
    const auto lock = mpfr_fallback_lock();
    std::vector<real> xr;
    xr.reserve(x.size());
    for (double v : x) xr.push_back(to_real(v));
    const auto exact = ref_.rotate(p, xr);
    ++st.mpfr_rows;
    for (std::size_t j : failed) {
      out[j] = round_to<T>(exact[j]);
      ++st.fallbacks;
    }
  }
  if (stats) *stats += st;
}

// Whether the finite double v is a tie of T: a midpoint of two consecutive values of T, or the
// overflow threshold max + ½ulp(max) — where RN_T of the reals just below v and just above it
// differ. With q the exponent of T's quantum at v (in the normal range 2^(e − p) for
// v = m·2^e, m ∈ [½, 1); below it the subnormal quantum; docs/numerics.md §4.1), t = |v|·2^−q is
// exact and below 2^p, and v is a tie exactly when t's fraction is ½ (t − ⌊t⌋ is exact: Sterbenz,
// or ⌊t⌋ = 0).
namespace {
template <class T>
bool on_tie(double v) {
  using tr = scalar_traits<T>;
  if (v == 0) return false;
  int e = 0;
  (void)std::frexp(v, &e);
  const int q = std::max(e - tr::precision, static_cast<int>(tr::mpfr_emin) - 1);
  const double t = std::fabs(std::ldexp(v, -q));
  return t - std::floor(t) == 0.5;
}
}  // namespace

// RN_T from the double rotation (docs/numerics.md §4.4): RN_double is monotone and fixes every
// double, and T's ties are doubles, so an exact value y lies on the same side of every tie M of T
// as RN_double(y) unless RN_double(y) = M — then RN_T(RN_double(y)) = RN_T(y). Where some value
// is on a tie (or not finite), the vector is rotated to T directly.
template <class T>
void fast_rope_reference::rotate_with_double(std::int64_t p, std::span<const double> x,
                                             std::span<T> out, std::span<double> exact,
                                             fast_stats* stats) const {
  check_size(out.size(), exact.size(), "rotate output");
  rotate<double>(p, x, exact, stats);
  if constexpr (std::is_same_v<T, double>) {
    std::copy(exact.begin(), exact.end(), out.begin());
  } else {
    for (std::size_t j = 0; j < exact.size(); ++j) {
      if (!std::isfinite(exact[j]) || on_tie<T>(exact[j])) {
        rotate<T>(p, x, out, stats);
        return;
      }
      out[j] = round_nearest<T>(exact[j]);
    }
  }
}

// =============================================================================================
// Sinusoidal.

fast_sinusoidal_reference::fast_sinusoidal_reference(const spec::sinusoidal& s)
    : spec_(s), base_bits_(precision_bits()), work_bits_(precision_bits() + kGuardBits) {
  spec::validate(spec::encoding{s});
  (void)consts();
  std::vector<real> w;
  {
    // sinusoidal_row evaluates the frequencies inside its own working-precision scope.
    const precision_scope scope(work_bits_);
    w = sinusoidal_frequencies(s);
  }
  const std::int64_t d = s.d_model;
  if (s.layout == spec::sinusoidal_layout::interleaved) {
    for (std::int64_t j = 0; j < d; j += 2) {
      freq_.push_back(prepare(w[j].backend().data(), 1.0, work_bits_));
      slots_.push_back({j, j + 1 < d ? j + 1 : -1});
    }
  } else {
    const std::int64_t h = d / 2;
    for (std::int64_t j = 0; j < h; ++j) {
      freq_.push_back(prepare(w[j].backend().data(), 1.0, work_bits_));
      slots_.push_back({j, j + h});
    }
    if (d % 2 != 0) zero_cols_.push_back(d - 1);
  }
  position_independent_bound(1.0, 0.0, work_bits_, e0_);
}

const std::vector<real>& fast_sinusoidal_reference::mpfr_row(std::int64_t p, fast_stats& st) const {
  if (!cached_p_ || *cached_p_ != p) {
    const precision_scope scope(base_bits_);
    cached_row_ = sinusoidal_row(spec_, p);
    cached_p_ = p;
    ++st.mpfr_rows;
  }
  return cached_row_;
}

template <class T>
void fast_sinusoidal_reference::pe(std::span<const std::int64_t> positions, std::span<T> out,
                                   fast_stats* stats) const {
  const std::size_t d = static_cast<std::size_t>(spec_.d_model);
  check_size(out.size(), positions.size() * d, "pe output");
  fast_stats st;
  const constants& K = consts();
  const T one = round_nearest<T>(1.0);
  const scale sc{{1.0, 0.0}, true, e0_};
  dispatch([&]<bool F>() PEV_FAST_INLINE {
    for (std::size_t r = 0; r < positions.size(); ++r) {
      const std::int64_t p = positions[r];
      const position P = split_position(p);
      T* row = out.data() + r * d;
      for (std::int64_t j : zero_cols_) {
        row[j] = signed_zero<T>(false);
        ++st.values;
      }
      for (std::size_t i = 0; i < slots_.size(); ++i) {
        const frequency& f = freq_[i];
        const slot& sl = slots_[i];
        st.values += sl.cos_col >= 0 ? 2 : 1;
        if ((p == 0 && f.k == frequency::kind::regular) || f.k == frequency::kind::zero) {
          row[sl.sin_col] = signed_zero<T>(std::signbit(static_cast<double>(p) * f.t[0]));
          if (sl.cos_col >= 0) row[sl.cos_col] = one;
          continue;
        }
        bool ok_s = false, ok_c = sl.cos_col < 0;
        if (f.k == frequency::kind::regular) {
          sincos_round<F, T>(K, f, P, sc, &row[sl.sin_col],
                             sl.cos_col >= 0 ? &row[sl.cos_col] : nullptr, ok_s, ok_c, st);
        }
        if (!ok_s || !ok_c) [[unlikely]] {
          const auto& exact = mpfr_row(p, st);
          if (!ok_s) {
            row[sl.sin_col] = round_to<T>(exact[static_cast<std::size_t>(sl.sin_col)]);
            ++st.fallbacks;
          }
          if (!ok_c) {
            row[sl.cos_col] = round_to<T>(exact[static_cast<std::size_t>(sl.cos_col)]);
            ++st.fallbacks;
          }
        }
      }
    }
  });
  if (stats) *stats += st;
}

#define PEV_FAST_INSTANTIATE(T)                                                                   \
  template T fast_rope_reference::angle<T>(std::int64_t, std::int64_t, fast_stats*) const;        \
  template void fast_rope_reference::angles<T>(std::span<const std::int64_t>, std::span<T>,       \
                                               fast_stats*) const;                                \
  template void fast_rope_reference::table<T>(std::span<const std::int64_t>, std::span<T>,        \
                                              std::span<T>, fast_stats*) const;                   \
  template void fast_rope_reference::table_values<T>(std::span<const std::int64_t>, std::span<T>, \
                                                     std::span<T>, std::span<double>,             \
                                                     std::span<double>, fast_stats*) const;       \
  template void fast_rope_reference::rotate<T>(std::int64_t, std::span<const double>,             \
                                               std::span<T>, fast_stats*) const;                  \
  template void fast_rope_reference::rotate_with_double<T>(                                       \
      std::int64_t, std::span<const double>, std::span<T>, std::span<double>, fast_stats*) const; \
  template void fast_sinusoidal_reference::pe<T>(std::span<const std::int64_t>, std::span<T>,     \
                                                 fast_stats*) const;
PEV_FAST_INSTANTIATE(double)
PEV_FAST_INSTANTIATE(float)
PEV_FAST_INSTANTIATE(half)
PEV_FAST_INSTANTIATE(bfloat16)
#undef PEV_FAST_INSTANTIATE

}  // namespace pev::ref
