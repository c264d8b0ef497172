// The fast exact-recipe RoPE reference (pev/ref/fast.h): cos/sin tables, angles and rotations by
// the scalar evaluation (fast_scalar.h) and the vector rows (fast_avx2.cpp), with the MPFR path
// where the rounding test cannot decide.

#include <mpfr.h>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <string>
#include <type_traits>

#include "fast_avx2.h"
#include "fast_bound.h"
#include "fast_dispatch.h"
#include "fast_round.h"
#include "fast_scalar.h"
#include "fast_tables.h"
#include "pev/core/error.h"
#include "pev/ref/fast.h"

namespace pev::ref {

using namespace fast_detail;

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

bool in_range(double x) {
  const double a = std::fabs(x);
  return a == 0 || (a >= kMinMagnitude && a <= kMaxMagnitude);
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
      std::int64_t, std::span<const double>, std::span<T>, std::span<double>, fast_stats*) const;
PEV_FAST_INSTANTIATE(double)
PEV_FAST_INSTANTIATE(float)
PEV_FAST_INSTANTIATE(half)
PEV_FAST_INSTANTIATE(bfloat16)
#undef PEV_FAST_INSTANTIATE

}  // namespace pev::ref
