// Fast exact reference: double-double evaluation with a rigorous error bound, a rounding test, and
// the MPFR path where the test cannot decide (Ziv's strategy). See pev/ref/fast.h for the outline.
// This file holds the proof and the code that computes the bound (poly_error,
// position_independent_bound, prepare); the operations it covers are in fast_eft.h (two_sum, mul,
// add, mod4), fast_tables.cpp (the start-up constants), fast_scalar.h (the reductions, the double
// and double-double stages), fast_round.h (the rounding tests) and fast_avx2.cpp (the double stage
// on vectors).
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

#include "fast_bound.h"

#include <cmath>

#include "fast_tables.h"

namespace pev::ref::fast_detail {

constexpr double kPiO2Up = 1.5707963267948968;  // ≥ π/2
constexpr double kRho = 1.534e-3;  // ≥ |r| = |g|·π/2 (with the slack of the last two-sum)
static_assert(kPiO2Up * (1.0 / (2 * kN) + 0x1p-51) * (1 + 0x1p-40) < kRho);

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
    mpfr_value a(mpfr_get_prec(theta));
    mpfr_abs(a.get(), theta, MPFR_RNDN);
    if (mpfr_cmp_d(a.get(), kMinMagnitude) < 0 || mpfr_cmp_d(a.get(), kMaxMagnitude) > 0) {
      return f;
    }
  }
  const mpfr_prec_t prec = mpfr_get_prec(theta) + 128;
  mpfr_value q(prec), pi(prec);
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

}  // namespace pev::ref::fast_detail
