// The `accurate` strategy's row evaluation (turns.h): the exact angle reduction per pair, then the
// sin/cos polynomials, the quadrant, the attention factor and the rounding to binary32 on vectors.
//
// Two passes over blocks of kBlock pairs. The reduction (integer arithmetic on 192-bit turns:
// three 64×64-bit products, a masked negation, a leading-zero count) runs per pair into small
// arrays of remainders r and quadrants q; the rest is straight-line floating-point arithmetic that
// runs on vectors of N lanes (GCC/Clang vector extensions), each lane the scalar operations of
// sincos_reduced and apply_quadrant in the same order, without contraction (pev builds with
// -ffp-contract=off), so every lane gives the scalar bits. The vector pass is compiled for the
// x86-64 baseline (2 lanes, SSE2) and for AVX2 (4 lanes), chosen at run time (isa.h); the scalar
// code finishes a block's last n mod N pairs. Splitting the loop this way keeps the 128-bit
// products out of the vector registers (a fused loop spills them) and the quadrant selection
// branch-free.

#include <cstdint>
#include <cstring>

#include "isa.h"
#include "narrow.h"
#include "turns.h"

// Vector types are passed between always-inline helpers only: no ABI is involved.
#pragma GCC diagnostic ignored "-Wpsabi"

#if PEV_KERNEL_X86
#include <immintrin.h>
#endif

namespace pev::kernel::detail {
namespace {

constexpr std::size_t kBlock = 64;

template <int N>
struct lanes {
  typedef double d __attribute__((vector_size(8 * N)));
  typedef std::int64_t i __attribute__((vector_size(8 * N)));
  typedef float f __attribute__((vector_size(4 * N)));
  typedef std::int32_t i32 __attribute__((vector_size(4 * N)));
  typedef std::uint64_t u __attribute__((vector_size(8 * N)));
};

// sin and cos of r (sincos_reduced) and the quadrant (apply_quadrant), times m unless m_one, on N
// lanes.
template <int N>
[[gnu::always_inline]] inline void sincos_lanes(typename lanes<N>::d r, typename lanes<N>::i q,
                                                double m, bool m_one, typename lanes<N>::d& s_out,
                                                typename lanes<N>::d& c_out) {
  using vd = typename lanes<N>::d;
  using vi = typename lanes<N>::i;
  using namespace sincos_taylor;  // the coefficients of sincos_reduced (turns.h)
  const vd z = r * r;
  const vd ps = s1 + z * (s2 + z * (s3 + z * (s4 + z * (s5 + z * (s6 + z * (s7 + z * s8))))));
  const vd sn = r + (r * z) * ps;
  const vd qc = c2 + z * (c3 + z * (c4 + z * (c5 + z * (c6 + z * (c7 + z * (c8 + z * c9))))));
  const vd hz = 0.5 * z;
  const vd w = 1.0 - hz;
  const vd cs = w + (((1.0 - w) - hz) + (z * z) * qc);
  const vi swap = (q & 1) != 0;
  vd s = swap ? cs : sn;
  vd c = swap ? sn : cs;
  s = ((q & 2) != 0) ? -s : s;
  c = (((q + 1) & 2) != 0) ? -c : c;
  if (!m_one) {
    s = s * m;
    c = c * m;
  }
  s_out = s;
  c_out = c;
}

// Binary32 of each lane: RN (the conversion) or round-to-odd (round_to_odd_float's steps).
template <int N>
[[gnu::always_inline]] inline typename lanes<N>::f to_float_lanes(typename lanes<N>::d x,
                                                                  bool odd) {
  using vd = typename lanes<N>::d;
  using vf = typename lanes<N>::f;
  using vi32 = typename lanes<N>::i32;
  const vf f = __builtin_convertvector(x, vf);
  if (!odd) return f;
  const vd back = __builtin_convertvector(f, vd);
  const vd ax = x < 0 ? -x : x;
  const vd ab = back < 0 ? -back : back;
  vi32 b;
  std::memcpy(&b, &f, sizeof b);
  // The 64-bit masks narrowed to 32-bit lanes: −1 (true) or 0.
  const vi32 up = __builtin_convertvector(ab > ax, vi32);
  const vi32 inexact = __builtin_convertvector(back != x, vi32);
  b = b + up;             // one step toward zero where RN rounded the magnitude up
  b = b | (inexact & 1);  // the sticky bit
  vf out;
  std::memcpy(&out, &b, sizeof out);
  return out;
}

template <int N>
[[gnu::always_inline]] inline void vector_pass(const double* r, const std::int64_t* q,
                                               std::size_t n, double m, bool m_one, bool odd,
                                               float* cos_out, float* sin_out) {
  using vd = typename lanes<N>::d;
  using vi = typename lanes<N>::i;
  using vf = typename lanes<N>::f;
  std::size_t k = 0;
  for (; k + N <= n; k += N) {
    vd rv;
    vi qv;
    std::memcpy(&rv, r + k, sizeof rv);
    std::memcpy(&qv, q + k, sizeof qv);
    vd s, c;
    sincos_lanes<N>(rv, qv, m, m_one, s, c);
    const vf cf = to_float_lanes<N>(c, odd);
    const vf sf = to_float_lanes<N>(s, odd);
    std::memcpy(cos_out + k, &cf, sizeof cf);
    std::memcpy(sin_out + k, &sf, sizeof sf);
  }
  for (; k < n; ++k) {
    const sin_cos sc = apply_quadrant(sincos_reduced(r[k]), static_cast<unsigned>(q[k]));
    const double c = m_one ? sc.cos : sc.cos * m;
    const double s = m_one ? sc.sin : sc.sin * m;
    cos_out[k] = odd ? round_to_odd_float(c) : static_cast<float>(c);
    sin_out[k] = odd ? round_to_odd_float(s) : static_cast<float>(s);
  }
}

// The exact reduction of N lanes for a position 0 ≤ a < 2^32 (turn_times and reduce_turn, the
// same bits), from the frequencies' 32-bit limbs at index k. With a < 2^32 every limb product
// a·f_j is one 32×32 → 64-bit multiplication, and the 192-bit turn a·F mod 1 is their column sum
// with 32-bit carries. The remainder's leading 64 bits need a per-lane leading-zero count, taken
// from the exponent of an exact conversion to double; its 63-bit integer is converted to double
// as the exact sum of its high and low halves (one rounding, as the scalar conversion). Lanes
// whose remainder is below 2^−64 turn (a zero high word: rare) are flagged in `rare`.
#if PEV_KERNEL_X86
[[gnu::always_inline]] __attribute__((target("avx2"))) inline void reduce_lanes(
    const turn_set& F, std::size_t k, std::uint64_t a, lanes<4>::d& r, lanes<4>::i& q,
    lanes<4>::i& rare) {
  using vd = lanes<4>::d;
  using vi = lanes<4>::i;
  using vu = lanes<4>::u;
  const vu av = vu{} + a;
  constexpr std::uint64_t kLow = 0xffffffffu;
  vu P[6];
  for (int j = 0; j < 6; ++j) {
    vu f;
    std::memcpy(&f, F.limb(j) + k, sizeof f);
    P[j] = (vu)_mm256_mul_epu32((__m256i)av, (__m256i)f);  // the low 32 bits of each lane
  }
  // a·F = Σ P_j·2^(32(5 − j)), limb 0 the most significant; carries in 32-bit steps (the
  // accumulator stays below 2^64: < 2^32 plus a product < 2^64 − 2^33).
  vu acc = P[5];
  const vu l0 = acc & kLow;
  acc = (acc >> 32) + P[4];
  const vu l1 = acc & kLow;
  acc = (acc >> 32) + P[3];
  const vu l2 = acc & kLow;
  acc = (acc >> 32) + P[2];
  const vu l3 = acc & kLow;
  acc = (acc >> 32) + P[1];
  const vu l4 = acc & kLow;
  acc = (acc >> 32) + P[0];
  const vu hi = (acc << 32) | l4;
  const vu mid = (l3 << 32) | l2;
  // reduce_turn, lane by lane (the low word only matters through lo == 0).
  const vu h = hi + (std::uint64_t{1} << 61);
  q = (vi)(h >> 62);
  const vi rh = (vi)(h & ((std::uint64_t{1} << 62) - 1u)) - (std::int64_t{1} << 61);
  const vu neg = (vu)(rh < 0);
  const vu c1 = neg & (vu)((l0 | l1) == 0) & 1u;
  const vu c2 = c1 & (vu)(mid == 0);
  const vu a1 = (mid ^ neg) + c1;
  vu a2 = ((vu)rh ^ neg) + c2;
  rare = (vi)(a2 == 0);
  a2 = a2 | (vu)(rare & 1);  // any non-zero value: rare lanes are redone by the caller
  // floor(log2 a2) for 1 ≤ a2 < 2^62: exact below 2^52 (the 2^52 magic-number conversion), else
  // of a2 >> 10.
  const vi big = (vi)a2 > (vi)(vu{} + ((std::uint64_t{1} << 52) - 1u));
  const vu x = big ? a2 >> 10 : a2;
  constexpr std::uint64_t kMagic = 0x4330000000000000u;  // 2^52
  vd dx = (vd)(x | kMagic);
  dx = dx - 0x1p52;
  const vu e = ((vu)dx >> 52) - 1023u + ((vu)big & 10u);
  const vu s = 63u - e;  // countl_zero(a2) ∈ [2, 63]
  const vu top = (a2 << s) | (a1 >> (64u - s));
  // The scalar steps mag = 2·RN(top >> 1) (a 63-bit integer in [2^62, 2^63): its low 10 bits
  // rounded off, ties to even) and ±mag·(2π·2^(scale − 192)), scale = 128 − s, are one rounding
  // of the exact ±mag·2^(scale − 192)·2π: that power-of-two multiple of RN(top >> 1) is built
  // directly (exponent 2^(−1−s), the rounding's carry into 2^53 moving it up) and multiplied by 2π.
  const vu x63 = top >> 1;
  const vu m53 = (x63 + 0x1ffu + ((x63 >> 10) & 1u)) >> 10;  // ∈ [2^52, 2^53]
  const vu bits = ((1022u - s) << 52) + (m53 - (std::uint64_t{1} << 52));
  const vd smag = (vd)(bits | (neg & 0x8000000000000000u));
  constexpr double kTwoPi = 6.283185307179586476925286766559;
  r = smag * kTwoPi;
}
#endif

// The reduction of pairs b … b + len − 1 (len ≤ kBlock) into r and q, per pair.
[[gnu::always_inline]] inline void reduce_block(const turn_set& F, std::size_t b, std::size_t len,
                                                std::int64_t p, double* r, std::int64_t* q) {
  for (std::size_t k = 0; k < len; ++k) q[k] = reduce_turn(turn_times(F[b + k], p), r[k]);
}

#if PEV_KERNEL_X86
// The same on vectors for 0 ≤ p < 2^32; r and q receive whole vectors (len rounded up to 4: the
// limbs are zero-padded).
[[gnu::always_inline]] __attribute__((target("avx2"))) inline void reduce_block_avx2(
    const turn_set& F, std::size_t b, std::size_t len, std::int64_t p, double* r, std::int64_t* q) {
  using vd = lanes<4>::d;
  using vi = lanes<4>::i;
  const auto a = static_cast<std::uint64_t>(p);
  vi any_rare{};
  for (std::size_t k = 0; k < len; k += 4) {
    vd rv;
    vi qv, rare;
    reduce_lanes(F, b + k, a, rv, qv, rare);
    std::memcpy(r + k, &rv, sizeof rv);
    std::memcpy(q + k, &qv, sizeof qv);
    any_rare = any_rare | rare;
  }
  if ((any_rare[0] | any_rare[1] | any_rare[2] | any_rare[3]) != 0) [[unlikely]] {
    reduce_block(F, b, len, p, r, q);  // remainders below 2^−64 turn: the scalar reduction
  }
}

// The vector reduction's range.
constexpr bool vector_reduction(std::int64_t p) { return p >= 0 && p < (std::int64_t{1} << 32); }
#endif

template <int N>
[[gnu::always_inline]] inline void row_body(const turn_set& F, std::int64_t p, double m, bool odd,
                                            float* cos_out, float* sin_out) {
  const std::size_t n = F.size();
  const bool m_one = m == 1.0;
  alignas(64) double r[kBlock];
  alignas(64) std::int64_t q[kBlock];
  for (std::size_t b = 0; b < n; b += kBlock) {
    const std::size_t len = n - b < kBlock ? n - b : kBlock;
    reduce_block(F, b, len, p, r, q);
    vector_pass<N>(r, q, len, m, m_one, odd, cos_out + b, sin_out + b);
  }
}

void row_baseline(const turn_set& F, std::int64_t p, double m, bool odd, float* cos_out,
                  float* sin_out) {
  row_body<2>(F, p, m, odd, cos_out, sin_out);
}

#if PEV_KERNEL_X86
__attribute__((target("avx2,f16c"))) void row_avx2(const turn_set& F, std::int64_t p, double m,
                                                   bool odd, float* cos_out, float* sin_out) {
  if (!vector_reduction(p)) {
    row_body<4>(F, p, m, odd, cos_out, sin_out);
    return;
  }
  // Two vector passes per block: each loop's iterations are short and independent, so that
  // several overlap (one fused loop is a dependency chain longer than the reorder window).
  const std::size_t n = F.size();
  const bool m_one = m == 1.0;
  alignas(64) double r[kBlock];
  alignas(64) std::int64_t q[kBlock];
  for (std::size_t b = 0; b < n; b += kBlock) {
    const std::size_t len = n - b < kBlock ? n - b : kBlock;
    reduce_block_avx2(F, b, len, p, r, q);
    vector_pass<4>(r, q, len, m, m_one, odd, cos_out + b, sin_out + b);
  }
}

__attribute__((target("avx2"))) void remainders_avx2(const turn_set& F, std::int64_t p, double* r,
                                                     std::int64_t* q) {
  alignas(64) double rb[kBlock];
  alignas(64) std::int64_t qb[kBlock];
  for (std::size_t b = 0; b < F.size(); b += kBlock) {
    const std::size_t len = F.size() - b < kBlock ? F.size() - b : kBlock;
    reduce_block_avx2(F, b, len, p, rb, qb);
    std::memcpy(r + b, rb, len * sizeof(double));
    std::memcpy(q + b, qb, len * sizeof(std::int64_t));
  }
}
#endif

}  // namespace

void accurate_row(const turn_set& F, std::int64_t p, double m, bool odd, float* cos_out,
                  float* sin_out) {
#if PEV_KERNEL_X86
  if (active_isa() == isa::avx2) {
    row_avx2(F, p, m, odd, cos_out, sin_out);
    return;
  }
#endif
  row_baseline(F, p, m, odd, cos_out, sin_out);
}

void accurate_remainders(const turn_set& F, std::int64_t p, double* r, std::int64_t* q) {
#if PEV_KERNEL_X86
  if (active_isa() == isa::avx2 && vector_reduction(p)) {
    remainders_avx2(F, p, r, q);
    return;
  }
#endif
  for (std::size_t b = 0; b < F.size(); b += kBlock) {
    reduce_block(F, b, F.size() - b < kBlock ? F.size() - b : kBlock, p, r + b, q + b);
  }
}

}  // namespace pev::kernel::detail
