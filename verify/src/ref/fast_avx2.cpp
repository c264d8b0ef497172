// The double stage on vectors (x86-64 with AVX2 and FMA): a table row's pairs four at a time.
//
// Each lane runs the operations of reduce_short, eval_double (F = true), scaled and
// try_round_interval in the same order, with FMA exactly where the scalar FMA code has it and no
// other contraction, so a lane decides the value the scalar FMA path decides, with the same
// result (the rounding test itself is sound on any arithmetic; the identity only makes the two
// paths' statistics agree). What a lane does not decide — the short reduction does not apply,
// the interval test fails for the sin or the cos, or the pair is not a regular frequency — is
// left to the scalar code (the double-double stage, the MPFR path), which redoes the pair.

#include "fast_avx2.h"

#include <cstring>
#include <type_traits>

#if PEV_FAST_SIMD
#include <immintrin.h>
#endif

namespace pev::ref::fast_detail {

#if PEV_FAST_SIMD
#define PEV_FAST_AVX2 [[gnu::always_inline]] __attribute__((target("avx2,fma"))) inline

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

#define PEV_FAST_ROW(T)                                                                           \
  template std::size_t double_stage_row<T, false>(const constants&, const vector_freqs&, double,  \
                                                  double, const scale&, T*, T*, double*, double*, \
                                                  std::uint8_t*);                                 \
  template std::size_t double_stage_row<T, true>(const constants&, const vector_freqs&, double,   \
                                                 double, const scale&, T*, T*, double*, double*,  \
                                                 std::uint8_t*);
PEV_FAST_ROW(float)
PEV_FAST_ROW(half)
PEV_FAST_ROW(bfloat16)
#undef PEV_FAST_ROW
#endif

bool cpu_has_avx2() {
#if PEV_FAST_SIMD
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
#else
  return false;
#endif
}

}  // namespace pev::ref::fast_detail
