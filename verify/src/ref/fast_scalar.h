#pragma once
// The fast exact reference's scalar evaluation: positions, the reductions of p·2θ/π, sin and cos
// in the double and double-double stages, and the rounding of m·sin, m·cos (the steps of
// fast_bound.cpp's header comment).

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "fast_bound.h"
#include "fast_eft.h"
#include "fast_round.h"
#include "fast_tables.h"
#include "pev/core/error.h"
#include "pev/ref/fast.h"

namespace pev::ref::fast_detail {

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

// The double stage's short reduction (fast_bound.cpp's header comment); false where it does not
// apply (two position parts or |p·q0| ≥ 2^50). R.g.lo is 0.
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

// The double stage's evaluation (fast_bound.cpp's header comment).
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

// The double-double stage (fast_bound.cpp's header comment, steps (2)–(4)).
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

// An argument's size against the expected one (pev::error naming it otherwise).
inline void check_size(std::size_t got, std::size_t want, const char* what) {
  if (got != want) {
    throw error(std::string("fast reference: ") + what + " holds " + std::to_string(got) +
                " values, expected " + std::to_string(want));
  }
}

}  // namespace pev::ref::fast_detail
